//! The security settings every client shares: `security.protocol`, SASL (Java's and
//! librdkafka's keys) and TLS, with secrets that never reach `Debug`, `Display` or an error.

use std::fmt;

#[cfg(feature = "tls")]
pub use super::tls::TlsClient;
use super::ConfigError;

/// A password, key or token: compared and used, never printed. Its `Debug` says
/// `Secret(<redacted>)` and it has no `Display`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that needs it (the authentication exchange).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SecurityProtocol {
    /// No TLS, no SASL.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL without TLS.
    SaslPlaintext,
    /// SASL inside TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Whether connections start with a TLS handshake.
    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    pub fn sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SaslMechanism {
    /// PLAIN (RFC 4616): the password goes to the broker, so use it inside TLS.
    Plain,
    /// SCRAM-SHA-256 (RFC 5802, 7677).
    ScramSha256,
    /// SCRAM-SHA-512.
    ScramSha512,
    /// OAUTHBEARER (KIP-255).
    OAuthBearer,
    /// GSSAPI (Kerberos), Java's default: not supported, so naming it is a config error.
    #[default]
    Gssapi,
}

impl SaslMechanism {
    /// The mechanism's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
            SaslMechanism::Gssapi => "GSSAPI",
        }
    }

    fn parse(key: &'static str, value: &str) -> Result<Self, ConfigError> {
        match value.trim().to_ascii_uppercase().as_str() {
            "PLAIN" => Ok(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Ok(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Ok(SaslMechanism::ScramSha512),
            "OAUTHBEARER" => Ok(SaslMechanism::OAuthBearer),
            "GSSAPI" => Ok(SaslMechanism::Gssapi),
            _ => Err(ConfigError::InvalidValue {
                key,
                value: value.to_owned(),
                rule: "one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER".into(),
            }),
        }
    }
}

/// The SASL credentials of a client, from `sasl.username`/`sasl.password`,
/// `sasl.jaas.config`, or for OAUTHBEARER an unsecured token's claims.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SaslSettings {
    /// `sasl.mechanism` (or librdkafka's `sasl.mechanisms`).
    pub mechanism: SaslMechanism,
    /// The user name (`sasl.username`, or `username` in the JAAS config).
    pub username: Option<String>,
    /// The password (`sasl.password`, or `password` in the JAAS config).
    pub password: Option<Secret>,
    /// OAUTHBEARER: the subject of an unsecured token the client makes itself
    /// (`unsecuredLoginStringClaim_sub` in the JAAS config, or `principal=` in librdkafka's
    /// `sasl.oauthbearer.config`), for tests. `None`: the application supplies tokens.
    pub unsecured_subject: Option<String>,
    /// OAUTHBEARER: the unsecured token's lifetime in seconds (`unsecuredLoginLifetimeSeconds`,
    /// or `lifeSeconds=`), one hour by default.
    pub unsecured_lifetime_s: u64,
}

/// The TLS settings as given: PEM text (inline, or read from the named files at config time).
#[derive(Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// Trusted CA certificates in PEM; `None`: the system's trust store.
    pub ca_pem: Option<String>,
    /// The client's certificate chain in PEM, for mutual TLS.
    pub cert_pem: Option<String>,
    /// The client's private key in PEM.
    pub key_pem: Option<Secret>,
    /// `ssl.key.password`: the private key's password (encrypted PKCS#8 keys).
    pub key_password: Option<Secret>,
    /// `ssl.endpoint.identification.algorithm`: `https` (the default) checks that the
    /// broker's certificate names the host connected to; empty or `none` does not.
    pub verify_hostname: bool,
    /// Where each PEM came from, for errors (file names, or "inline").
    origins: Vec<(&'static str, String)>,
}

impl Default for TlsSettings {
    /// Java's defaults: the system's trust store, no client certificate, hostname checked.
    fn default() -> Self {
        TlsSettings {
            ca_pem: None,
            cert_pem: None,
            key_pem: None,
            key_password: None,
            verify_hostname: true,
            origins: Vec::new(),
        }
    }
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("ca", &self.ca_pem.as_ref().map(|_| "<PEM>"))
            .field("cert", &self.cert_pem.as_ref().map(|_| "<PEM>"))
            .field("key", &self.key_pem)
            .field("key_password", &self.key_password)
            .field("verify_hostname", &self.verify_hostname)
            .finish()
    }
}

impl TlsSettings {
    /// Where the setting `key` came from (a file name or "inline PEM"), for errors.
    pub fn origin(&self, key: &str) -> String {
        self.origins
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map_or_else(|| "inline PEM".to_owned(), |(_, o)| o.clone())
    }
}

/// The security settings of a client.
#[derive(Debug, Clone, Default)]
pub struct SecurityConfig {
    /// `security.protocol`.
    pub protocol: SecurityProtocol,
    /// SASL, when the protocol uses it.
    pub sasl: SaslSettings,
    /// TLS as configured.
    pub tls: TlsSettings,
    /// OAUTHBEARER: the application's token source (set it on the parsed configuration;
    /// there is no string key for a function). Without it, `sasl.oauthbearer.config` or the
    /// JAAS line's `unsecuredLoginStringClaim_sub` make unsecured tokens, and otherwise tokens
    /// come only through `set_oauth_token`.
    pub token_provider: Option<super::TokenProvider>,
    /// The TLS client built from [`SecurityConfig::tls`] (certificates parsed, files read),
    /// when the protocol uses TLS.
    #[cfg(feature = "tls")]
    pub tls_client: Option<TlsClient>,
    truststore_type: Option<String>,
    keystore_type: Option<String>,
}

impl PartialEq for SecurityConfig {
    fn eq(&self, other: &Self) -> bool {
        self.protocol == other.protocol && self.sasl == other.sasl && self.tls == other.tls
    }
}

fn read_pem(key: &'static str, path: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path.trim()).map_err(|e| ConfigError::InvalidValue {
        key,
        value: path.to_owned(),
        rule: format!("a readable PEM file ({e})"),
    })
}

/// Secret values are never echoed in errors.
fn redacted(key: &'static str, rule: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key,
        value: "<redacted>".into(),
        rule: rule.into(),
    }
}

/// Pairs `name="value"` of a JAAS login module line, after its class and `required`.
fn jaas_options(text: &str) -> Option<(String, Vec<(String, String)>)> {
    let text = text.trim().trim_end_matches(';').trim();
    let (module, mut rest) = text.split_once(char::is_whitespace)?;
    rest = rest.trim_start();
    rest = rest
        .strip_prefix("required")
        .or_else(|| rest.strip_prefix("requisite"))
        .or_else(|| rest.strip_prefix("sufficient"))
        .or_else(|| rest.strip_prefix("optional"))?;
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let (name, after) = rest.split_once('=')?;
        let after = after.trim_start();
        let (value, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"')?;
            (&q[..end], &q[end + 1..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        out.push((name.trim().to_owned(), value.to_owned()));
        rest = next;
    }
    Some((module.to_owned(), out))
}

impl SecurityConfig {
    /// Applies a security key; `None` if `key` is not one of them.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Option<Result<(), ConfigError>> {
        match self.set_inner(key, value.trim()) {
            Ok(true) => Some(Ok(())),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// Applies a security key: `Ok(false)` if it is not one.
    fn set_inner(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        let tls = &mut self.tls;
        match key {
            "security.protocol" => {
                self.protocol = match value.to_ascii_uppercase().as_str() {
                    "PLAINTEXT" => SecurityProtocol::Plaintext,
                    "SSL" => SecurityProtocol::Ssl,
                    "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
                    "SASL_SSL" => SecurityProtocol::SaslSsl,
                    _ => {
                        return Err(ConfigError::InvalidValue {
                            key: "security.protocol",
                            value: value.to_owned(),
                            rule: "one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL".into(),
                        })
                    }
                }
            }
            "sasl.mechanism" => {
                self.sasl.mechanism = SaslMechanism::parse("sasl.mechanism", value)?
            }
            "sasl.mechanisms" => {
                self.sasl.mechanism = SaslMechanism::parse("sasl.mechanisms", value)?
            }
            "sasl.username" => self.sasl.username = Some(value.to_owned()),
            "sasl.password" => self.sasl.password = Some(Secret::new(value)),
            "sasl.jaas.config" => self.set_jaas(value)?,
            "sasl.oauthbearer.config" => {
                for pair in value.split_whitespace() {
                    match pair.split_once('=') {
                        Some(("principal", v)) => self.sasl.unsecured_subject = Some(v.to_owned()),
                        Some(("lifeSeconds", v)) => {
                            self.sasl.unsecured_lifetime_s = v.parse().map_err(|_| {
                                redacted("sasl.oauthbearer.config", "lifeSeconds=N, in seconds")
                            })?
                        }
                        _ => {}
                    }
                }
            }
            "ssl.ca.location" | "ssl.truststore.location" => {
                tls.ca_pem = Some(read_pem(static_key(key), value)?);
                tls.origins.push(("ca", value.to_owned()));
            }
            "ssl.ca.pem" | "ssl.truststore.certificates" => {
                tls.ca_pem = Some(value.to_owned());
                tls.origins.push(("ca", format!("inline PEM of {key}")));
            }
            "ssl.certificate.location" => {
                tls.cert_pem = Some(read_pem("ssl.certificate.location", value)?);
                tls.origins.push(("cert", value.to_owned()));
            }
            "ssl.certificate.pem" | "ssl.keystore.certificate.chain" => {
                tls.cert_pem = Some(value.to_owned());
                tls.origins.push(("cert", format!("inline PEM of {key}")));
            }
            "ssl.key.location" => {
                tls.key_pem = Some(Secret::new(read_pem("ssl.key.location", value)?));
                tls.origins.push(("key", value.to_owned()));
            }
            "ssl.keystore.location" => {
                // A PEM keystore file holds the key and the certificate chain.
                let pem = read_pem("ssl.keystore.location", value)?;
                tls.cert_pem = Some(pem.clone());
                tls.key_pem = Some(Secret::new(pem));
                tls.origins.push(("cert", value.to_owned()));
                tls.origins.push(("key", value.to_owned()));
            }
            "ssl.key.pem" | "ssl.keystore.key" => {
                tls.key_pem = Some(Secret::new(value));
                tls.origins.push(("key", format!("inline PEM of {key}")));
            }
            "ssl.key.password" | "ssl.keystore.password" => {
                tls.key_password = (!value.is_empty()).then(|| Secret::new(value))
            }
            "ssl.truststore.type" => self.truststore_type = Some(value.to_ascii_uppercase()),
            "ssl.keystore.type" => self.keystore_type = Some(value.to_ascii_uppercase()),
            "ssl.endpoint.identification.algorithm" => {
                tls.verify_hostname = match value.to_ascii_lowercase().as_str() {
                    "https" => true,
                    "" | "none" => false,
                    _ => {
                        return Err(ConfigError::InvalidValue {
                            key: "ssl.endpoint.identification.algorithm",
                            value: value.to_owned(),
                            rule: "`https` (check the broker's host name) or empty/`none`".into(),
                        })
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn set_jaas(&mut self, value: &str) -> Result<(), ConfigError> {
        let rule = "a JAAS line: `<LoginModule class> required username=\"...\" password=\"...\";`";
        let (module, options) =
            jaas_options(value).ok_or_else(|| redacted("sasl.jaas.config", rule))?;
        for (name, v) in options {
            match name.as_str() {
                "username" => self.sasl.username = Some(v),
                "password" => self.sasl.password = Some(Secret::new(v)),
                "unsecuredLoginStringClaim_sub" => self.sasl.unsecured_subject = Some(v),
                "unsecuredLoginLifetimeSeconds" => {
                    self.sasl.unsecured_lifetime_s = v.parse().map_err(|_| {
                        redacted(
                            "sasl.jaas.config",
                            "unsecuredLoginLifetimeSeconds in seconds",
                        )
                    })?
                }
                _ => {}
            }
        }
        if module.ends_with("OAuthBearerLoginModule") && self.sasl.unsecured_subject.is_none() {
            // Java's default OAUTHBEARER handler makes an unsecured token; so do we, for "".
            self.sasl.unsecured_subject = Some(String::new());
        }
        Ok(())
    }

    /// Checks the settings against each other and builds the TLS client.
    pub(crate) fn finish(&mut self) -> Result<(), ConfigError> {
        if self.sasl.unsecured_lifetime_s == 0 {
            self.sasl.unsecured_lifetime_s = 3600;
        }
        for (key, ty) in [
            ("ssl.truststore.type", &self.truststore_type),
            ("ssl.keystore.type", &self.keystore_type),
        ] {
            if let Some(t) = ty.as_deref().filter(|t| *t != "PEM") {
                return Err(ConfigError::InvalidValue {
                    key,
                    value: t.to_owned(),
                    rule: "only PEM stores are supported; convert a JKS or PKCS12 store to PEM \
                           (keytool -exportcert -rfc, openssl pkcs12 -nodes) and set the type PEM"
                        .into(),
                });
            }
        }
        if self.protocol.sasl() {
            let s = &self.sasl;
            match s.mechanism {
                SaslMechanism::Gssapi => {
                    return Err(ConfigError::InvalidValue {
                        key: "sasl.mechanism",
                        value: "GSSAPI".into(),
                        rule: "GSSAPI (Kerberos, the Java default) is not supported: set \
                               sasl.mechanism to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or \
                               OAUTHBEARER"
                            .into(),
                    })
                }
                SaslMechanism::OAuthBearer => {}
                m if s.username.is_none() || s.password.is_none() => {
                    return Err(ConfigError::Conflict {
                        key: "sasl.mechanism",
                        other: "sasl.username",
                        reason: format!(
                            "{} needs a user name and password: set sasl.username and \
                             sasl.password, or sasl.jaas.config",
                            m.name()
                        ),
                    })
                }
                _ => {}
            }
        }
        if self.protocol.tls() {
            #[cfg(feature = "tls")]
            {
                self.tls_client = Some(TlsClient::new(&self.tls)?);
            }
            #[cfg(not(feature = "tls"))]
            return Err(ConfigError::InvalidValue {
                key: "security.protocol",
                value: format!("{:?}", self.protocol),
                rule: "this build has no TLS: enable the `tls` feature of kafka-core (on by \
                       default)"
                    .into(),
            });
        }
        Ok(())
    }

    /// The defaults: PLAINTEXT, Java's `https` hostname check for TLS.
    pub(crate) fn defaults() -> Self {
        SecurityConfig::default()
    }
}

fn static_key(key: &str) -> &'static str {
    match key {
        "ssl.truststore.location" => "ssl.truststore.location",
        _ => "ssl.ca.location",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaas_lines_parse_and_secrets_stay_out_of_debug_and_errors() {
        let mut s = SecurityConfig::defaults();
        s.set(
            "sasl.jaas.config",
            r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cr3t-pw";"#,
        )
        .unwrap()
        .unwrap();
        s.set("security.protocol", "SASL_PLAINTEXT")
            .unwrap()
            .unwrap();
        s.set("sasl.mechanism", "SCRAM-SHA-512").unwrap().unwrap();
        s.finish().unwrap();
        assert_eq!(s.sasl.username.as_deref(), Some("alice"));
        assert_eq!(s.sasl.password.as_ref().unwrap().expose(), "s3cr3t-pw");
        assert!(!format!("{s:?}").contains("s3cr3t-pw"));
        let err = s
            .set("sasl.jaas.config", "garbage password=\"s3cr3t-pw\"")
            .unwrap()
            .unwrap_err();
        assert!(!err.to_string().contains("s3cr3t-pw"), "{err}");
        assert!(s.set("ssl.enabled.protocols", "TLSv1.3").is_none());
    }

    #[test]
    fn sasl_without_credentials_and_gssapi_are_config_errors() {
        let mut s = SecurityConfig::defaults();
        s.set("security.protocol", "SASL_PLAINTEXT")
            .unwrap()
            .unwrap();
        let e = s.clone().finish().unwrap_err().to_string();
        assert!(e.contains("GSSAPI"), "{e}");
        s.set("sasl.mechanisms", "PLAIN").unwrap().unwrap();
        let e = s.clone().finish().unwrap_err().to_string();
        assert!(e.contains("sasl.username"), "{e}");
        assert!(s.set("sasl.mechanism", "MD5").unwrap().is_err());
        assert!(s.set("security.protocol", "TLS").unwrap().is_err());
    }
}
