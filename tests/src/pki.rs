//! A certificate authority made at test time (rcgen): a CA, a broker certificate for
//! 127.0.0.1, a client certificate for mutual TLS, and a second, untrusted CA.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// The password of `client-enc.key`, the client's key encrypted (PBES2: PBKDF2-SHA256, AES-256-CBC).
pub const KEY_PASSWORD: &str = "key-pw-Tq5";

/// A PKCS#8 PEM private key, encrypted with `password`.
pub fn encrypt_key(pem: &str, password: &str) -> String {
    use pkcs8::der::pem::LineEnding;
    use pkcs8::der::Decode;
    let (_, doc) = pkcs8::SecretDocument::from_pem(pem).expect("a PKCS#8 PEM key");
    let info = pkcs8::PrivateKeyInfo::from_der(doc.as_bytes()).expect("PKCS#8");
    let params = pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(
        2048,
        b"0123456789abcdef",
        b"fedcba9876543210",
    )
    .expect("PBES2 parameters");
    info.encrypt_with_params(params, password)
        .expect("encrypt the key")
        .to_pem("ENCRYPTED PRIVATE KEY", LineEnding::LF)
        .expect("PEM")
        .to_string()
}

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
    /// `client.crt`, `client.key`, `client-enc.key` (encrypted with [`KEY_PASSWORD`]) and
    /// `other-ca.pem` under `dir`.
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
        write(
            "client-enc.key",
            &encrypt_key(&pki.client.key, KEY_PASSWORD),
        );
        write("other-ca.pem", &pki.other_ca.cert);
        pki
    }

    /// A file's path, as a string.
    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}
