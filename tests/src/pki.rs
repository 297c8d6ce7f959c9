//! A certificate authority made at test time (rcgen): a CA, a broker certificate for
//! 127.0.0.1, a client certificate for mutual TLS, and a second, untrusted CA.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// A certificate and its private key, in PEM.
#[derive(Debug, Clone)]
pub struct Pem {
    /// The certificate.
    pub cert: String,
    /// Its private key (PKCS#8).
    pub key: String,
}

/// The test PKI, written to files under a directory.
#[derive(Debug)]
pub struct Pki {
    /// The trusted CA.
    pub ca: Pem,
    /// The broker's certificate, for 127.0.0.1 only (so that `localhost`, which reaches the
    /// same listener, is a name it does not list), signed by `ca`.
    pub broker: Pem,
    /// A client certificate signed by `ca`, for mutual TLS.
    pub client: Pem,
    /// A CA that signed nothing here: trusting only it, the broker is untrusted.
    pub other_ca: Pem,
    /// Where the PEM files are.
    pub dir: PathBuf,
}

fn make_ca(name: &str) -> (Pem, rcgen::Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().expect("a key");
    let cert = p.self_signed(&key).expect("self-signed CA");
    (
        Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        },
        cert,
        key,
    )
}

fn leaf(names: &[&str], cn: &str, ca: &rcgen::Certificate, ca_key: &KeyPair) -> Pem {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(names).expect("leaf params");
    p.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().expect("a key");
    let cert = p.signed_by(&key, ca, ca_key).expect("signed leaf");
    Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

impl Pki {
    /// Makes the PKI and writes `ca.pem`, `broker.pem` (key and chain, a PEM keystore),
    /// `client.crt`, `client.key` and `other-ca.pem` under `dir`.
    pub fn create(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).expect("the PKI's directory");
        let (ca, ca_cert, ca_key) = make_ca("kafka-rs test CA");
        let broker = leaf(&["127.0.0.1"], "broker", &ca_cert, &ca_key);
        let client = leaf(&["client"], "client", &ca_cert, &ca_key);
        let (other_ca, _, _) = make_ca("an unrelated CA");
        let pki = Pki {
            ca,
            broker,
            client,
            other_ca,
            dir: dir.to_owned(),
        };
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text).expect("write a PEM file");
        };
        write("ca.pem", &pki.ca.cert);
        write(
            "broker.pem",
            &format!("{}{}{}", pki.broker.key, pki.broker.cert, pki.ca.cert),
        );
        write("client.crt", &pki.client.cert);
        write("client.key", &pki.client.key);
        write("other-ca.pem", &pki.other_ca.cert);
        pki
    }

    /// A file's path, as a string.
    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}
