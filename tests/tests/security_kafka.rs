//! TLS and SASL against Apache Kafka: one cluster with SSL (mutual TLS required),
//! SASL_PLAINTEXT and SASL_SSL listeners, a CA made at test time, SCRAM users created at
//! format time, and sessions that must be re-authenticated every few seconds
//! (`connections.max.reauth.ms`). Round trips under each mechanism, every failure the issue
//! lists (typed, prompt, no secret in the message), re-authentication under load, and
//! librdkafka authenticating against the same listener as the differential.

use std::sync::OnceLock;
use std::time::{Duration, Instant as StdInstant};

use kafka_tokio::{
    Admin, AdminError, AuthError, ConsumeError, Consumer, DeliveryError, NewTopic, Producer,
    Record, TlsError,
};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use tests::kafka::Cluster;
use tests::pki::Pki;

const PASSWORD: &str = "alice-pw-Zq81";
const REAUTH_MS: u64 = 4_000;

struct Fixture {
    cluster: Cluster,
    pki: Pki,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/kafka")
            .join(format!("pki-{}", std::process::id()));
        let pki = Pki::create(&dir);
        let cluster = Cluster::start_secured(&pki, "alice", PASSWORD, REAUTH_MS);
        Fixture { cluster, pki }
    })
}

fn topic(name: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "{name}-{}",
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// The settings of a client on `listener` with `extra` security settings.
fn settings(listener: &str, extra: &[(&str, String)]) -> Vec<(String, String)> {
    let f = fixture();
    let mut s = vec![
        (
            "bootstrap.servers".to_owned(),
            f.cluster.bootstrap_of(listener),
        ),
        ("security.protocol".to_owned(), listener.to_owned()),
    ];
    s.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    s
}

/// Creates a topic, produces `n` records, reads them back through a consumer group and
/// commits, all with `cfg`.
async fn round_trip(cfg: &[(String, String)], name: &str, n: usize) {
    let t = topic(name);
    let admin = Admin::from_map(cfg.iter().cloned()).unwrap();
    admin
        .create_topic(NewTopic::new(t.clone(), 2))
        .await
        .unwrap();
    let producer = Producer::from_map(cfg.iter().cloned()).unwrap();
    let mut sent = Vec::new();
    for i in 0..n {
        let d = producer
            .send(Record::new(t.clone(), format!("v{i}")).key(format!("k{i}")))
            .await
            .unwrap();
        sent.push(d);
    }
    for d in sent {
        d.await.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut c_cfg = cfg.to_vec();
    c_cfg.push(("group.id".into(), format!("g-{t}")));
    c_cfg.push(("auto.offset.reset".into(), "earliest".into()));
    let mut consumer = Consumer::from_map(c_cfg).unwrap();
    consumer.subscribe([t.clone()]).unwrap();
    let mut got = std::collections::BTreeSet::new();
    while got.len() < n {
        let r = tokio::time::timeout(Duration::from_secs(60), consumer.recv())
            .await
            .unwrap_or_else(|_| panic!("{name}: read {} of {n}", got.len()))
            .unwrap();
        got.insert(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
    }
    assert_eq!(got.len(), n);
    consumer.commit().await.unwrap();
    assert!(
        consumer.committed(&t, 0).await.unwrap().is_some()
            || consumer.committed(&t, 1).await.unwrap().is_some()
    );
    producer.close(Duration::from_secs(10)).await;
}

fn ca() -> (&'static str, String) {
    ("ssl.ca.location", fixture().pki.path("ca.pem"))
}

#[test]
fn kafka_sasl_plaintext_round_trips_under_plain_scram_256_scram_512_and_oauthbearer() {
    let rt = tests::tokio_runtime();
    let user = ("sasl.username", "alice".to_owned());
    let pw = ("sasl.password", PASSWORD.to_owned());
    rt.block_on(async {
        for mech in ["PLAIN", "SCRAM-SHA-256"] {
            let cfg = settings(
                "SASL_PLAINTEXT",
                &[("sasl.mechanism", mech.into()), user.clone(), pw.clone()],
            );
            round_trip(&cfg, &mech.to_ascii_lowercase(), 200).await;
        }
        // SCRAM-SHA-512 through Java's JAAS line and librdkafka's key name.
        let jaas = format!(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"{PASSWORD}\";"
        );
        let cfg = settings(
            "SASL_PLAINTEXT",
            &[("sasl.mechanisms", "SCRAM-SHA-512".into()), ("sasl.jaas.config", jaas)],
        );
        round_trip(&cfg, "scram512", 200).await;
        // OAUTHBEARER with an unsecured token (Kafka's default validator takes those).
        let cfg = settings(
            "SASL_PLAINTEXT",
            &[
                ("sasl.mechanism", "OAUTHBEARER".into()),
                ("sasl.oauthbearer.config", "principal=alice".into()),
            ],
        );
        round_trip(&cfg, "oauth", 200).await;
    });
}

#[test]
fn kafka_ssl_with_mutual_tls_and_sasl_ssl_with_an_inline_pem_truststore_round_trip() {
    let f = fixture();
    let rt = tests::tokio_runtime();
    rt.block_on(async {
        let cfg = settings(
            "SSL",
            &[
                ca(),
                ("ssl.certificate.location", f.pki.path("client.crt")),
                ("ssl.key.location", f.pki.path("client.key")),
            ],
        );
        round_trip(&cfg, "mtls", 200).await;
        // The same with the key encrypted (PKCS#8, PBES2) and ssl.key.password.
        let cfg = settings(
            "SSL",
            &[
                ca(),
                ("ssl.certificate.location", f.pki.path("client.crt")),
                ("ssl.key.location", f.pki.path("client-enc.key")),
                ("ssl.key.password", tests::pki::KEY_PASSWORD.into()),
            ],
        );
        round_trip(&cfg, "mtls-encrypted-key", 20).await;
        // A wrong key password is a configuration error naming the setting, not the secret.
        let mut wrong = cfg.clone();
        wrong.last_mut().unwrap().1 = "not-the-key-password".into();
        let e = Producer::from_map(wrong).unwrap_err().to_string();
        assert!(
            e.contains("ssl.key.password") && !e.contains("not-the-key-password"),
            "{e}"
        );
        let cfg = settings(
            "SASL_SSL",
            &[
                ("ssl.truststore.type", "PEM".into()),
                ("ssl.truststore.certificates", f.pki.ca.cert.clone()),
                ("sasl.mechanism", "SCRAM-SHA-512".into()),
                ("sasl.username", "alice".into()),
                ("sasl.password", PASSWORD.into()),
            ],
        );
        round_trip(&cfg, "sasl-ssl", 200).await;
    });
}

/// A producer's send with `cfg` fails within `within`, with a message containing each of
/// `words` and never the password.
fn assert_send_fails(cfg: &[(String, String)], within: Duration, words: &[&str]) -> DeliveryError {
    let rt = tests::tokio_runtime();
    let started = StdInstant::now();
    let error = rt.block_on(async {
        let mut cfg = cfg.to_vec();
        cfg.push(("max.block.ms".into(), "20000".into()));
        cfg.push(("delivery.timeout.ms".into(), "20000".into()));
        cfg.push(("request.timeout.ms".into(), "15000".into()));
        let p = Producer::from_map(cfg).unwrap();
        let d = p.send(Record::new("any-topic", "v")).await.unwrap();
        d.await.expect_err("must fail").error
    });
    let took = started.elapsed();
    let text = error.to_string();
    assert!(took < within, "took {took:?}: {text}");
    for w in words {
        assert!(text.contains(w), "`{w}` not in: {text}");
    }
    assert!(!text.contains(PASSWORD) && !format!("{error:?}").contains(PASSWORD));
    eprintln!("failed in {took:?}: {text}");
    error
}

/// The typed TLS cause of a delivery's failure, if it failed on TLS.
fn tls_cause(e: &DeliveryError) -> Option<&TlsError> {
    match e {
        DeliveryError::Authentication(AuthError::Tls { cause, .. }) => Some(cause),
        _ => None,
    }
}

#[test]
fn kafka_security_failures_are_typed_prompt_and_name_the_fix() {
    let f = fixture();
    let fast = Duration::from_secs(5);
    // A wrong password, under each SASL mechanism that has one.
    for mech in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let cfg = settings(
            "SASL_PLAINTEXT",
            &[
                ("sasl.mechanism", mech.into()),
                ("sasl.username", "alice".into()),
                ("sasl.password", "wrong-password".into()),
            ],
        );
        let e = assert_send_fails(&cfg, fast, &[mech, "sasl.password"]);
        assert!(matches!(e, DeliveryError::Authentication(_)), "{e:?}");
    }
    // A mechanism the listener does not enable.
    let cfg = settings(
        "SASL_SSL",
        &[
            ca(),
            ("sasl.mechanism", "SCRAM-SHA-256".into()),
            ("sasl.username", "alice".into()),
            ("sasl.password", PASSWORD.into()),
        ],
    );
    assert_send_fails(
        &cfg,
        fast,
        &[
            "does not enable SASL mechanism SCRAM-SHA-256",
            "PLAIN, SCRAM-SHA-512",
        ],
    );
    // An untrusted certificate.
    let cfg = settings("SSL", &[("ssl.ca.location", f.pki.path("other-ca.pem"))]);
    let e = assert_send_fails(
        &cfg,
        fast,
        &["not signed by a trusted CA", "ssl.ca.location"],
    );
    assert_eq!(
        tls_cause(&e),
        Some(&TlsError::UntrustedCertificate),
        "{e:?}"
    );
    // A host name the certificate does not list: it lists 127.0.0.1, and `localhost`
    // reaches the same listener. With the check off (`none`), the same client works.
    let port = f
        .cluster
        .bootstrap_of("SSL")
        .rsplit_once(':')
        .unwrap()
        .1
        .to_owned();
    let mtls = [
        ca(),
        ("ssl.certificate.location", f.pki.path("client.crt")),
        ("ssl.key.location", f.pki.path("client.key")),
    ];
    let mut cfg = settings("SSL", &mtls);
    cfg[0].1 = format!("localhost:{port}");
    let e = assert_send_fails(
        &cfg,
        fast,
        &[
            "does not name the host",
            "ssl.endpoint.identification.algorithm",
        ],
    );
    assert_eq!(
        tls_cause(&e),
        Some(&TlsError::CertificateNameMismatch),
        "{e:?}"
    );
    cfg.push((
        "ssl.endpoint.identification.algorithm".into(),
        "none".into(),
    ));
    tests::tokio_runtime().block_on(round_trip(&cfg, "no-hostname-check", 10));
    // No client certificate where the listener requires one.
    let cfg = settings("SSL", &[ca()]);
    let e = assert_send_fails(&cfg, fast, &["TLS", "ssl.certificate.location"]);
    assert!(
        matches!(tls_cause(&e), Some(TlsError::HandshakeRefused { .. })),
        "{e:?}"
    );
    // TLS to a plaintext listener, and plaintext to a TLS listener: prompt within
    // max.block.ms, naming security.protocol.
    let mut cfg = settings("SSL", &[ca()]);
    cfg[0].1 = f.cluster.bootstrap_of("PLAINTEXT");
    assert_send_fails(&cfg, Duration::from_secs(25), &["security.protocol"]);
    let mut cfg = settings("PLAINTEXT", &[]);
    cfg[0].1 = f.cluster.bootstrap_of("SSL");
    assert_send_fails(&cfg, Duration::from_secs(25), &["security.protocol"]);
}

#[test]
fn kafka_admin_and_consumer_fail_typed_on_a_wrong_password() {
    let cfg = settings(
        "SASL_PLAINTEXT",
        &[
            ("sasl.mechanism", "SCRAM-SHA-256".into()),
            ("sasl.username", "alice".into()),
            ("sasl.password", "wrong-password".into()),
        ],
    );
    let rt = tests::tokio_runtime();
    rt.block_on(async {
        let started = StdInstant::now();
        let admin = Admin::from_map(cfg.iter().cloned()).unwrap();
        let e = admin.metadata(None).await.unwrap_err();
        assert!(matches!(e, AdminError::Authentication(_)), "{e:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let mut c = Consumer::from_map(
            cfg.iter()
                .cloned()
                .chain([("group.id".to_owned(), "g-wrong".to_owned())]),
        )
        .unwrap();
        c.subscribe(["any"]).unwrap();
        let e = tokio::time::timeout(Duration::from_secs(10), c.recv())
            .await
            .expect("prompt")
            .unwrap_err();
        assert!(matches!(e, ConsumeError::Authentication(_)), "{e:?}");
        assert!(!e.to_string().contains("wrong-password"));
    });
}

/// The certificate's validity is judged by the wall clock the client is given: in the year
/// 5000 the broker's certificate (valid until 4096) has expired.
#[test]
fn kafka_an_expired_certificate_is_refused_by_the_wall_clock_input() {
    use kafka_core::producer::ProducerRecord;
    let f = fixture();
    let cfg = kafka_core::ProducerConfig::from_map(settings("SSL", &[ca()])).unwrap();
    let mut p = kafka_core::Producer::new(cfg);
    let mut d = tests::blocking::Driver::default();
    d.wall_clock = Some(95_617_584_000); // 5000-01-01
    p.send(ProducerRecord::new("t", "v", 0), d.now()).unwrap();
    let events = d.run(&mut p, Duration::from_secs(20), |e| !e.is_empty());
    use kafka_core::producer::{Outcome, ProducerEvent};
    let failed = (events.iter())
        .find_map(|e| match e {
            ProducerEvent::Outcome(_, Outcome::Failed { error, .. }) => Some(error.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no failed record in {events:?}"));
    assert_eq!(
        tls_cause(&failed),
        Some(&TlsError::CertificateExpired),
        "{failed:?}"
    );
    assert!(failed.to_string().contains("has expired"), "{failed}");
    let _ = f;
}

/// KIP-368 under load: with sessions of 4 s, a producer sends for 14 s on SCRAM; every
/// record is delivered, and its connections re-authenticate instead of being closed by the
/// broker and opened again.
#[test]
fn kafka_reauthentication_under_load_loses_nothing_and_keeps_its_connections() {
    use kafka_core::producer::{Outcome, ProducerEvent, ProducerRecord};
    let cfg = settings(
        "SASL_PLAINTEXT",
        &[
            ("sasl.mechanism", "SCRAM-SHA-512".into()),
            ("sasl.username", "alice".into()),
            ("sasl.password", PASSWORD.into()),
            ("linger.ms", "5".into()),
        ],
    );
    let t = topic("reauth");
    tests::tokio_runtime().block_on(async {
        let admin = Admin::from_map(cfg.iter().cloned()).unwrap();
        admin
            .create_topic(NewTopic::new(t.clone(), 1))
            .await
            .unwrap();
    });
    let mut p = kafka_core::Producer::new(kafka_core::ProducerConfig::from_map(cfg).unwrap());
    let mut d = tests::blocking::Driver::default();
    let started = StdInstant::now();
    let mut sent = 0u64;
    let mut delivered = 0u64;
    while started.elapsed() < Duration::from_millis(REAUTH_MS * 7 / 2) {
        for _ in 0..50 {
            p.send(
                ProducerRecord::new(t.as_str(), format!("v{sent}"), 0),
                d.now(),
            )
            .unwrap();
            sent += 1;
        }
        let events = d.run(&mut p, Duration::from_millis(100), |_| false);
        for e in events.into_iter().flat_map(ProducerEvent::per_record) {
            if let ProducerEvent::Outcome(_, o) = e {
                assert!(matches!(o, Outcome::Delivered { .. }), "{o:?}");
                delivered += 1;
            }
        }
    }
    let events = d.run(&mut p, Duration::from_secs(30), |e| {
        e.iter()
            .map(|e| match e {
                ProducerEvent::Outcome(..) => 1,
                ProducerEvent::Delivered(batch) => batch.len() as u64,
                _ => 0,
            })
            .sum::<u64>()
            == sent - delivered
    });
    for e in events.into_iter().flat_map(ProducerEvent::per_record) {
        if let ProducerEvent::Outcome(_, o) = e {
            assert!(matches!(o, Outcome::Delivered { .. }), "{o:?}");
            delivered += 1;
        }
    }
    assert_eq!(delivered, sent);
    assert!(sent > 1000, "only {sent} sent");
    // The bootstrap connection is adopted as the node's, and the broker never had to close
    // it (one more for metadata at most).
    assert!(
        d.connects <= 2,
        "{} connections in 3.5 session lifetimes: the broker closed expired sessions",
        d.connects
    );
    eprintln!(
        "{sent} records over {:?}, {} connections",
        started.elapsed(),
        d.connects
    );
}

/// librdkafka authenticates against the same listeners with the same credentials (PLAIN and
/// SCRAM-SHA-256 on SASL_PLAINTEXT, SCRAM-SHA-512 on SASL_SSL, mutual TLS on SSL), and refuses
/// the wrong password too: a failure of ours is never the broker's setup.
#[test]
fn kafka_librdkafka_authenticates_on_the_same_listener() {
    let f = fixture();
    let rt = tests::tokio_runtime();
    rt.block_on(async {
        let t = topic("rdkafka-plain");
        let ours = settings(
            "SASL_PLAINTEXT",
            &[
                ("sasl.mechanism", "PLAIN".into()),
                ("sasl.username", "alice".into()),
                ("sasl.password", PASSWORD.into()),
            ],
        );
        Admin::from_map(ours.iter().cloned())
            .unwrap()
            .create_topic(NewTopic::new(t.clone(), 1))
            .await
            .unwrap();
        let theirs = |pw: &str| -> FutureProducer {
            ClientConfig::new()
                .set(
                    "bootstrap.servers",
                    f.cluster.bootstrap_of("SASL_PLAINTEXT"),
                )
                .set("security.protocol", "SASL_PLAINTEXT")
                .set("sasl.mechanisms", "PLAIN")
                .set("sasl.username", "alice")
                .set("sasl.password", pw)
                .set("message.timeout.ms", "5000")
                .create()
                .unwrap()
        };
        let ok = theirs(PASSWORD)
            .send(
                FutureRecord::to(&t).payload("from librdkafka").key("k"),
                Duration::from_secs(5),
            )
            .await;
        assert!(ok.is_ok(), "{ok:?}");
        let bad = theirs("wrong-password")
            .send(
                FutureRecord::to(&t).payload("x").key("k"),
                Duration::from_secs(5),
            )
            .await;
        assert!(bad.is_err(), "librdkafka accepted a wrong password");
        round_trip(&ours, "ours-plain", 10).await;
    });
}

/// OAUTHBEARER with the application's async token provider, through `kafka-tokio`: the driver
/// calls it when the core asks, and again when a re-authentication finds the last token
/// expired (tokens of 3 s, sessions of 4 s); records are delivered throughout.
#[test]
fn kafka_oauthbearer_with_an_async_token_provider_is_asked_again_when_its_token_expires() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let provider = kafka_core::sasl::TokenProvider::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            // As a provider that calls an identity provider would: it takes a while.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64;
            Ok(kafka_core::sasl::OAuthToken::unsecured("alice", now_ms, 3))
        })
    });
    let settings = settings(
        "SASL_PLAINTEXT",
        &[("sasl.mechanism", "OAUTHBEARER".into())],
    );
    let t = topic("oauth-provider");
    tests::tokio_runtime().block_on(async {
        let mut admin_cfg = kafka_core::AdminConfig::from_map(settings.iter().cloned()).unwrap();
        admin_cfg.security.token_provider = Some(provider.clone());
        Admin::new(admin_cfg)
            .create_topic(NewTopic::new(t.clone(), 1))
            .await
            .unwrap();
        let mut cfg = kafka_core::ProducerConfig::from_map(settings.iter().cloned()).unwrap();
        cfg.security.token_provider = Some(provider);
        let p = Producer::new(cfg);
        let started = StdInstant::now();
        let mut n = 0;
        while started.elapsed() < Duration::from_secs(10) {
            p.send(Record::new(t.clone(), format!("v{n}")))
                .await
                .unwrap()
                .await
                .unwrap_or_else(|e| panic!("record {n}: {e}"));
            n += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        p.close(Duration::from_secs(5)).await;
        eprintln!(
            "{n} records, {} tokens fetched",
            calls.load(Ordering::SeqCst)
        );
    });
    // The admin client's token, the producer's first, and at least one more when a
    // re-authentication (every 3.4-3.8 s) found the 3 s token expired.
    assert!(
        calls.load(Ordering::SeqCst) >= 3,
        "{} tokens",
        calls.load(Ordering::SeqCst)
    );
}
