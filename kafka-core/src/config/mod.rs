//! Client configuration with Java's key names and defaults: typed values, parsing from a string
//! map, and errors that name the key and the rule it broke.

mod admin;
mod assignors;
mod consumer;
pub mod java_keys;
mod metrics;
pub(crate) mod parse;
mod producer;
mod security;
#[cfg(feature = "tls")]
mod tls;
mod token;

use thiserror::Error;

pub use admin::AdminConfig;
pub use assignors::{Assignor, RebalanceProtocol};
pub use consumer::{ConsumerConfig, GroupProtocol, IsolationLevel, OffsetReset};
pub use metrics::{MetricsConfig, RecordingLevel, Window};
pub use parse::HostPort;
pub use producer::{Acks, MetadataRecoveryStrategy, ProducerConfig, ProducerConfigBuilder};
pub use security::{
    SaslMechanism, SaslSettings, Secret, SecurityConfig, SecurityProtocol, TlsSettings,
};
#[cfg(feature = "tls")]
pub use tls::TlsClient;
pub use token::{OAuthToken, TokenFuture, TokenProvider};

/// A configuration key or value was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No Java client knows the key (keys of another client, or Java keys this client does
    /// not use, are accepted with a note instead: see the configs' `notes`).
    #[error("unknown config key `{key}`: no Java {} setting has this name; check its spelling against {}", client.name(), client.docs())]
    UnknownKey {
        /// The key as given.
        key: String,
        /// The client being configured.
        client: java_keys::Client,
    },
    /// The value does not satisfy the key's rule.
    #[error("invalid value `{value}` for `{key}`: {rule}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// What the key accepts.
        rule: String,
    },
    /// Two explicit settings contradict each other.
    #[error("`{key}` conflicts with `{other}`: {reason}")]
    Conflict {
        /// The setting that cannot hold.
        key: &'static str,
        /// The setting it conflicts with.
        other: &'static str,
        /// Why, and how to fix it.
        reason: String,
    },
}

/// Warns once, as a client is built, of each setting it accepted without applying (its
/// config's `notes`): a key taken without a word sends its user the wrong way.
pub(crate) fn warn_notes(client: &str, notes: &[String]) {
    for note in notes {
        tracing::warn!(client, "{note}");
    }
}

/// Declares a config struct from a table of `field: Type = "java.key", "default", parser;` lines.
/// It generates the struct, its defaults, the list of keys, and parsing from a string map.
macro_rules! config_table {
    (
        client = $client:expr;
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal, $default:literal, $parse:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            /// `security.protocol`, SASL and TLS (`sasl.*`, `ssl.*`).
            pub security: $crate::config::SecurityConfig,
            /// `metrics.sample.window.ms`, `metrics.num.samples`, `metrics.recording.level`,
            /// `enable.metrics.push`.
            pub metrics: $crate::config::MetricsConfig,
            /// The keys that were set explicitly (Java treats defaults and explicit values differently).
            explicit: std::collections::BTreeSet<&'static str>,
            /// Keys accepted without effect (another client's, or Java keys this client has
            /// no use for), each with why.
            notes: Vec<String>,
        }

        impl $name {
            /// Every key with its default, as Java documents them.
            pub const KEYS: &'static [(&'static str, &'static str)] = &[$( ($key, $default), )*];

            /// The configuration with every default, before validation.
            fn defaults() -> Self {
                $name {
                    $( $field: ($parse)($key, $default).expect(concat!("the default of ", $key, " parses")), )*
                    security: $crate::config::SecurityConfig::defaults(),
                    metrics: $crate::config::MetricsConfig::default(),
                    explicit: Default::default(),
                    notes: Vec::new(),
                }
            }

            /// Applies one `key = value` setting.
            fn set(&mut self, key: &str, value: &str) -> Result<(), $crate::config::ConfigError> {
                match key {
                    $( $key => {
                        self.$field = ($parse)($key, value)?;
                        self.explicit.insert($key);
                    } )*
                    other => return Err($crate::config::ConfigError::UnknownKey { key: other.to_owned(), client: $client }),
                }
                Ok(())
            }

            /// Keys that were accepted without effect (another Java client's settings, or
            /// Java settings this client has no use for, such as serializer classes), each
            /// with a note saying so: one settings map can serve every client.
            pub fn notes(&self) -> &[String] {
                &self.notes
            }

            /// Whether `key` was set explicitly rather than defaulted.
            pub fn is_explicit(&self, key: &str) -> bool {
                self.explicit.contains(key)
            }

            /// Defaults overlaid with a string map, with the checks every client shares:
            /// a non-empty `bootstrap.servers`, and backoff ceilings never below their bases.
            fn parse_map<K: AsRef<str>, V: AsRef<str>>(
                map: impl IntoIterator<Item = (K, V)>,
            ) -> Result<Self, $crate::config::ConfigError> {
                let mut c = Self::defaults();
                for (k, v) in map {
                    let key = k.as_ref().trim();
                    if let Some(r) = c.security.set(key, v.as_ref()) {
                        r?;
                        continue;
                    }
                    if let Some(r) = c.metrics.set(key, v.as_ref()) {
                        r?;
                        continue;
                    }
                    match c.set(key, v.as_ref()) {
                        Err($crate::config::ConfigError::UnknownKey { .. })
                            if $crate::config::java_keys::note($client, key).is_some() =>
                        {
                            let note = $crate::config::java_keys::note($client, key);
                            c.notes.extend(note);
                        }
                        other => other?,
                    }
                }
                c.security.finish()?;
                if c.bootstrap_servers.is_empty() {
                    return Err($crate::config::ConfigError::InvalidValue {
                        key: "bootstrap.servers",
                        value: String::new(),
                        rule: "must list at least one host:port".into(),
                    });
                }
                // A ceiling below the base means no growth, as in Java.
                c.retry_backoff_max = c.retry_backoff_max.max(c.retry_backoff);
                c.reconnect_backoff_max = c.reconnect_backoff_max.max(c.reconnect_backoff);
                c.connection_setup_timeout_max = c.connection_setup_timeout_max.max(c.connection_setup_timeout);
                Ok(c)
            }
        }
    };
}
pub(crate) use config_table;
