//! Group and offset administration against Apache Kafka (one node): listing and describing a
//! group with a live member, its committed offsets and lag (checked against the Java client's
//! AdminClient for the same group), offsets by time, a member's commits of offsets of its
//! choosing, altering offsets (refused while the group has members; then a new member starts
//! where they say), and deleting the group; describing the cluster, a consumer-protocol
//! (KIP-848) group, and topic and broker configurations, altered incrementally.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::OnceLock;

use kafka_tokio::{
    Admin, AdminError, AlterConfigOp, ConfigResource, ConfigSource, Consumer, ErrorCode, NewTopic,
    OffsetSpec, Producer, Record,
};
use tests::kafka::{peer, Cluster};
use tests::tokio_block_on as block_on;

const TOPIC: &str = "admin-groups";
const GROUP: &str = "admin-group";

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 60 s"))
}

fn member(bootstrap: &str) -> Consumer {
    Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("group.id", GROUP),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        ("client.id", "admin-test-member"),
    ])
    .unwrap()
}

fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    C.get_or_init(|| Cluster::start(1))
}

#[test]
fn groups_and_offsets_are_listed_described_altered_and_deleted() {
    let cluster = cluster();
    let bootstrap = cluster.bootstrap.clone();
    cluster.create_topic(TOPIC, 3, 1, &[]);
    block_on(async {
        // 100 records a partition, with timestamps 1,000 ms apart from t0.
        let t0 = 1_700_000_000_000i64;
        let p = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        for i in 0..300i64 {
            let r = Record::new(TOPIC, format!("v{i}"))
                .partition((i % 3) as i32)
                .timestamp(t0 + (i / 3) * 1000);
            p.send(r).await.unwrap();
        }
        p.flush().await;
        p.close(Duration::from_secs(5)).await;

        // A member reads 150 records and commits them.
        let mut m = member(&bootstrap);
        m.subscribe([TOPIC]).unwrap();
        let mut read = 0;
        while read < 150 {
            read += within("reading", m.recv_batch()).await.unwrap().len();
        }
        within("commit", m.commit()).await.unwrap();

        let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        let groups = within("list_groups", admin.list_groups()).await.unwrap();
        let g = groups
            .iter()
            .find(|g| g.group_id == GROUP)
            .unwrap_or_else(|| panic!("{GROUP} listed: {groups:?}"));
        assert_eq!(g.protocol_type, "consumer");

        let d = within("describe_group", admin.describe_group(GROUP))
            .await
            .unwrap();
        assert_eq!(d.state, "Stable", "{d:?}");
        assert_eq!(d.members.len(), 1, "{d:?}");
        assert_eq!(d.members[0].client_id, "admin-test-member");
        let mut assigned = d.members[0].assignment.clone();
        assigned.sort();
        assert_eq!(
            assigned,
            (0..3).map(|p| (TOPIC.to_owned(), p)).collect::<Vec<_>>()
        );

        // Committed offsets and lag, beside Java's AdminClient.
        let committed = within("list_group_offsets", admin.list_group_offsets(GROUP))
            .await
            .unwrap();
        // (The member's first batches may not reach every partition.)
        assert!(committed.values().sum::<i64>() >= 150, "{committed:?}");
        let partitions: Vec<(String, i32)> = (0..3).map(|p| (TOPIC.to_owned(), p)).collect();
        let ends = within(
            "list_offsets",
            admin.list_offsets(partitions.clone(), OffsetSpec::Latest),
        )
        .await;
        let ours: Vec<String> = committed
            .iter()
            .map(|(tp, c)| {
                let end = ends[tp].clone().unwrap();
                format!("{} {} {c} {end} {}", tp.0, tp.1, end - c)
            })
            .collect();
        let (ok, out, err) = peer(&["lag", &bootstrap, GROUP], None);
        assert!(ok, "Java's lag: {err}");
        let java: Vec<String> = out.lines().map(str::to_owned).collect();
        assert_eq!(
            ours, java,
            "committed, end and lag per partition, as Java's AdminClient"
        );

        // Offsets by time: the earliest is 0, the latest 100, and the first at t0 + 50 s is 50.
        let earliest = within(
            "earliest",
            admin.list_offsets(partitions.clone(), OffsetSpec::Earliest),
        )
        .await;
        assert!(
            earliest.values().all(|o| o.as_ref().ok() == Some(&0)),
            "{earliest:?}"
        );
        assert!(
            ends.values().all(|o| o.as_ref().ok() == Some(&100)),
            "{ends:?}"
        );
        let at = within(
            "by time",
            admin.list_offsets(partitions.clone(), OffsetSpec::Timestamp(t0 + 50_000)),
        )
        .await;
        assert!(at.values().all(|o| o.as_ref().ok() == Some(&50)), "{at:?}");
        let unknown = within(
            "an unknown topic",
            admin.list_offsets(vec![("no-such-topic".into(), 0)], OffsetSpec::Latest),
        )
        .await;
        assert!(unknown.values().all(|r| r.is_err()), "{unknown:?}");

        // The member commits offsets of its choosing (sync, then async), not what it read.
        within("commit_offsets", m.commit_offsets([((TOPIC, 0), 5)]))
            .await
            .unwrap();
        within(
            "commit_offsets_async",
            m.commit_offsets_async([((TOPIC, 1), 6)]),
        )
        .await
        .unwrap();
        let chosen = within("offsets", admin.list_group_offsets(GROUP))
            .await
            .unwrap();
        assert_eq!(chosen.get(&(TOPIC.to_owned(), 0)), Some(&5), "{chosen:?}");
        assert_eq!(chosen.get(&(TOPIC.to_owned(), 1)), Some(&6), "{chosen:?}");

        // Altering offsets is refused while the member runs.
        let to_10: BTreeMap<(String, i32), i64> =
            partitions.iter().map(|tp| (tp.clone(), 10)).collect();
        let refused = within("alter", admin.alter_group_offsets(GROUP, to_10.clone())).await;
        assert!(
            matches!(refused, Err(AdminError::GroupNotEmpty { .. })),
            "{refused:?}"
        );
        let refused = within("delete", admin.delete_group(GROUP)).await;
        // DeleteGroups v3 (Kafka 4.4) may add a message; NON_EMPTY_GROUP comes without one.
        assert!(
            matches!(
                refused,
                Err(AdminError::Broker {
                    code: ErrorCode::NonEmptyGroup,
                    ..
                })
            ),
            "deleting a group with members: {refused:?}"
        );
        m.close(Duration::from_secs(10)).await;

        // Then it is taken, and a new member starts there: 90 records a partition are left.
        within("alter", admin.alter_group_offsets(GROUP, to_10))
            .await
            .unwrap();
        let after = within("offsets", admin.list_group_offsets(GROUP))
            .await
            .unwrap();
        assert!(after.values().all(|o| *o == 10), "{after:?}");
        let mut m = member(&bootstrap);
        m.subscribe([TOPIC]).unwrap();
        let mut first: BTreeMap<i32, i64> = BTreeMap::new();
        let mut read = 0;
        while read < 270 {
            for r in within("reading again", m.recv_batch()).await.unwrap() {
                first.entry(r.partition).or_insert(r.offset);
                read += 1;
            }
        }
        assert!(first.values().all(|o| *o == 10), "{first:?}");
        m.close(Duration::from_secs(10)).await;

        within("delete", admin.delete_group(GROUP)).await.unwrap();
        let groups = within("list_groups", admin.list_groups()).await.unwrap();
        assert!(groups.iter().all(|g| g.group_id != GROUP), "{groups:?}");
        let gone = within("describe", admin.describe_group(GROUP)).await;
        assert!(
            matches!(
                gone,
                Err(AdminError::Broker {
                    code: kafka_tokio::ErrorCode::GroupIdNotFound,
                    ..
                })
            ),
            "a deleted group: {gone:?}"
        );
    });
}

/// DescribeCluster, ConsumerGroupDescribe (with the classic group of the test above described
/// through the fallback to DescribeGroups), and DescribeConfigs / IncrementalAlterConfigs on
/// a topic and on the broker.
#[test]
fn the_cluster_a_consumer_protocol_group_and_configs_are_described_and_altered() {
    let cluster = cluster();
    let bootstrap = cluster.bootstrap.clone();
    block_on(async {
        let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        // The cluster.
        let c = within("describe_cluster", admin.describe_cluster())
            .await
            .unwrap();
        let m = within("metadata", admin.metadata(Some(&[]))).await.unwrap();
        assert_eq!(Some(c.cluster_id.clone()), m.cluster_id, "{c:?}");
        assert_eq!(c.brokers.len(), 1, "{c:?}");
        let port = bootstrap.rsplit(':').next().unwrap();
        assert_eq!(c.brokers[0].addr.port.to_string(), port, "{c:?}");
        let broker = c.brokers[0].id;

        // A consumer-protocol group, described by ConsumerGroupDescribe.
        admin
            .create_topic(NewTopic::new("admin-848", 3))
            .await
            .unwrap();
        let p = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        for i in 0..30 {
            p.send(Record::new("admin-848", format!("v{i}")).partition(i % 3))
                .await
                .unwrap();
        }
        p.flush().await;
        let mut member = Consumer::from_map([
            ("bootstrap.servers", bootstrap.as_str()),
            ("group.id", "admin-848-group"),
            ("group.protocol", "consumer"),
            ("auto.offset.reset", "earliest"),
            ("client.id", "kip848-member"),
        ])
        .unwrap();
        member.subscribe(["admin-848"]).unwrap();
        let mut read = 0;
        while read < 30 {
            read += within("reading", member.recv_batch()).await.unwrap().len();
        }
        let d = within("describe_group", admin.describe_group("admin-848-group"))
            .await
            .unwrap();
        assert!(d.consumer_protocol, "{d:?}");
        assert_eq!(d.state, "Stable", "{d:?}");
        assert_eq!(
            d.protocol, "uniform",
            "the broker's default assignor: {d:?}"
        );
        assert_eq!(d.members.len(), 1, "{d:?}");
        assert_eq!(d.members[0].client_id, "kip848-member", "{d:?}");
        assert!(d.members[0].member_epoch.is_some_and(|e| e > 0), "{d:?}");
        let mut parts = d.members[0].assignment.clone();
        parts.sort();
        assert_eq!(
            parts,
            [0, 1, 2].map(|p| ("admin-848".to_owned(), p)),
            "{d:?}"
        );
        member.close(Duration::from_secs(10)).await;

        // A topic's configuration: set at creation, altered, and reset.
        let topic = ConfigResource::Topic("admin-configs".into());
        admin
            .create_topic(NewTopic {
                configs: vec![("retention.ms".into(), "123456789".into())],
                ..NewTopic::new("admin-configs", 1)
            })
            .await
            .unwrap();
        let find = |entries: &[kafka_tokio::ConfigEntry], key: &str| {
            entries
                .iter()
                .find(|e| e.name == key)
                .unwrap_or_else(|| panic!("{key} is listed"))
                .clone()
        };
        // The new topic reaches the broker's metadata shortly after the controller answered.
        let mut entries = Vec::new();
        for _ in 0..100 {
            if let Ok(e) = within("describe_configs", admin.describe_configs(topic.clone())).await {
                entries = e;
                if entries.iter().any(|e| e.name == "retention.ms") {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let retention = find(&entries, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("123456789"));
        assert_eq!(retention.source, ConfigSource::DynamicTopic);
        assert_eq!(
            find(&entries, "cleanup.policy").source,
            ConfigSource::Default
        );
        within(
            "alter_configs",
            admin.alter_configs(
                topic.clone(),
                vec![
                    AlterConfigOp::Set("cleanup.policy".into(), "compact".into()),
                    AlterConfigOp::Delete("retention.ms".into()),
                ],
            ),
        )
        .await
        .unwrap();
        // Applied through the metadata log: the broker shows it shortly.
        let mut entries = Vec::new();
        for _ in 0..100 {
            entries = within("describe_configs", admin.describe_configs(topic.clone()))
                .await
                .unwrap();
            if find(&entries, "cleanup.policy").value.as_deref() == Some("compact")
                && find(&entries, "retention.ms").source != ConfigSource::DynamicTopic
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let policy = find(&entries, "cleanup.policy");
        assert_eq!(policy.value.as_deref(), Some("compact"));
        assert_eq!(policy.source, ConfigSource::DynamicTopic);
        let retention = find(&entries, "retention.ms");
        assert_ne!(
            retention.source,
            ConfigSource::DynamicTopic,
            "{retention:?}"
        );
        assert_ne!(
            retention.value.as_deref(),
            Some("123456789"),
            "{retention:?}"
        );
        // A topic that does not exist.
        let missing = admin
            .describe_configs(ConfigResource::Topic("no-such-topic".into()))
            .await
            .unwrap_err();
        assert!(matches!(missing, AdminError::Broker { .. }), "{missing:?}");

        // The broker's configuration: a dynamic per-broker value, then reset.
        let node = ConfigResource::Broker(broker);
        let entries = within("describe broker", admin.describe_configs(node.clone()))
            .await
            .unwrap();
        assert_eq!(find(&entries, "node.id").source, ConfigSource::StaticBroker);
        within(
            "alter broker",
            admin.alter_configs(
                node.clone(),
                vec![AlterConfigOp::Set(
                    "message.max.bytes".into(),
                    "2000000".into(),
                )],
            ),
        )
        .await
        .unwrap();
        // The controller applies it through the metadata log: the broker sees it shortly.
        let mut max = None;
        for _ in 0..100 {
            let entries = within("describe broker", admin.describe_configs(node.clone()))
                .await
                .unwrap();
            let e = find(&entries, "message.max.bytes");
            if e.value.as_deref() == Some("2000000") {
                max = Some(e);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let max = max.expect("the broker's new message.max.bytes within 10 s");
        assert_eq!(max.source, ConfigSource::DynamicBroker);
        within(
            "reset broker",
            admin.alter_configs(
                node,
                vec![AlterConfigOp::Delete("message.max.bytes".into())],
            ),
        )
        .await
        .unwrap();
    });
}

/// The consumer's own offset lookups (Java's `beginningOffsets`, `endOffsets`,
/// `offsetsForTimes`), on a consumer that reads nothing and has no group, agree with the
/// admin client's ListOffsets.
#[test]
fn the_consumer_looks_up_beginning_end_and_offsets_for_times() {
    let cluster = cluster();
    let bootstrap = cluster.bootstrap.clone();
    cluster.create_topic("consumer-lookups", 2, 1, &[]);
    block_on(async {
        let t0 = 1_700_000_000_000i64;
        let p = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        // 40 records a partition, 1,000 ms apart.
        for i in 0..80i64 {
            let r = Record::new("consumer-lookups", format!("v{i}"))
                .partition((i % 2) as i32)
                .timestamp(t0 + (i / 2) * 1000);
            p.send(r).await.unwrap();
        }
        p.flush().await;
        let c = Consumer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        let tps = || (0..2).map(|p| ("consumer-lookups".to_owned(), p));
        let begin = within("beginning_offsets", c.beginning_offsets(tps()))
            .await
            .unwrap();
        let end = within("end_offsets", c.end_offsets(tps())).await.unwrap();
        for tp in tps() {
            assert_eq!(begin[&tp], 0);
            assert_eq!(end[&tp], 40);
        }
        let times = within(
            "offsets_for_times",
            c.offsets_for_times(tps().map(|tp| (tp, t0 + 10_500))),
        )
        .await
        .unwrap();
        for tp in tps() {
            let found = times[&tp].expect("a record at or after the time");
            assert_eq!((found.offset, found.timestamp), (11, t0 + 11_000));
        }
        let none = within(
            "offsets_for_times (future)",
            c.offsets_for_times(tps().map(|tp| (tp, t0 + 1_000_000))),
        )
        .await
        .unwrap();
        assert!(none.values().all(Option::is_none), "{none:?}");
        // The admin client says the same.
        let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        let listed = admin
            .list_offsets(tps().collect(), OffsetSpec::Timestamp(t0 + 10_500))
            .await;
        for tp in tps() {
            assert_eq!(listed[&tp].clone().unwrap(), 11);
        }
        // DeleteRecords moves the log start: the consumer's beginning follows.
        let deleted = admin_delete(&bootstrap).await;
        assert_eq!(
            deleted[&("consumer-lookups".to_owned(), 0)]
                .clone()
                .unwrap(),
            25
        );
        let begin = within("beginning_offsets", c.beginning_offsets(tps()))
            .await
            .unwrap();
        assert_eq!(begin[&("consumer-lookups".to_owned(), 0)], 25);
        assert_eq!(begin[&("consumer-lookups".to_owned(), 1)], 0);
    });
}

/// Deletes partition 0's records of `consumer-lookups` before offset 25, and past partition
/// 1's end (refused: OFFSET_OUT_OF_RANGE).
async fn admin_delete(bootstrap: &str) -> BTreeMap<(String, i32), Result<i64, AdminError>> {
    let admin = Admin::from_map([("bootstrap.servers", bootstrap)]).unwrap();
    let before = BTreeMap::from([
        (("consumer-lookups".to_owned(), 0), 25),
        (("consumer-lookups".to_owned(), 1), 1000),
    ]);
    let r = within("delete_records", admin.delete_records(before)).await;
    let beyond = r[&("consumer-lookups".to_owned(), 1)].clone().unwrap_err();
    assert!(
        matches!(
            beyond,
            AdminError::Broker {
                code: kafka_tokio::ErrorCode::OffsetOutOfRange,
                ..
            }
        ),
        "{beyond:?}"
    );
    r
}
