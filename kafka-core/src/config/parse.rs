//! Value parsers for config keys; each error names the key, the value and the rule.

use std::time::Duration;

use kafka_proto::compression::Compression;

use super::ConfigError;

fn invalid(key: &'static str, value: &str, rule: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key,
        value: value.to_owned(),
        rule: rule.into(),
    }
}

/// A `host:port` pair, as given in `bootstrap.servers` or advertised by a broker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl HostPort {
    /// A host and port.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        HostPort {
            host: host.into(),
            port,
        }
    }

    /// Parses `host:port` or `[v6addr]:port`.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, p) = rest.split_once("]:")?;
            (h, p)
        } else {
            s.rsplit_once(':')?
        };
        if host.is_empty() || host.contains(':') && !s.starts_with('[') {
            return None;
        }
        Some(HostPort::new(host, port.parse().ok().filter(|p| *p > 0)?))
    }
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// `bootstrap.servers`: a comma-separated list of `host:port`.
pub(crate) fn hosts(key: &'static str, v: &str) -> Result<Vec<HostPort>, ConfigError> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            HostPort::parse(s)
                .ok_or_else(|| invalid(key, s, "expected host:port, for example localhost:9092"))
        })
        .collect()
}

pub(crate) fn string(_: &'static str, v: &str) -> Result<String, ConfigError> {
    Ok(v.to_owned())
}

pub(crate) fn boolean(key: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, v, "expected true or false")),
    }
}

pub(crate) fn compression(key: &'static str, v: &str) -> Result<Compression, ConfigError> {
    let c = Compression::from_name(v.trim())
        .ok_or_else(|| invalid(key, v, "expected one of none, gzip, snappy, lz4, zstd"))?;
    if !c.is_enabled() {
        return Err(invalid(
            key,
            v,
            format!("the `{}` feature of kafka-proto is disabled", c.name()),
        ));
    }
    Ok(c)
}

/// An integer in `[min, max]`.
pub(crate) fn int<T>(min: i64, max: i64) -> impl Fn(&'static str, &str) -> Result<T, ConfigError>
where
    T: TryFrom<i64>,
{
    move |key, v| {
        let rule = || {
            if max == i64::MAX {
                format!("expected an integer of at least {min}")
            } else {
                format!("expected an integer from {min} to {max}")
            }
        };
        let n: i64 = v.trim().parse().map_err(|_| invalid(key, v, rule()))?;
        if n < min || n > max {
            return Err(invalid(key, v, rule()));
        }
        T::try_from(n).map_err(|_| invalid(key, v, rule()))
    }
}

/// `compression.gzip.level`: 1 (fastest) to 9 (smallest), or -1 for the default (6), as
/// Java's `GzipCompression` accepts.
pub(crate) fn gzip_level(key: &'static str, v: &str) -> Result<i32, ConfigError> {
    match v.trim().parse::<i32>() {
        Ok(n @ (-1 | 1..=9)) => Ok(n),
        _ => Err(invalid(
            key,
            v,
            "expected 1 (fastest) to 9 (smallest), or -1 for the default",
        )),
    }
}

/// A duration in milliseconds, at least `min_ms`.
pub(crate) fn millis(min_ms: u64) -> impl Fn(&'static str, &str) -> Result<Duration, ConfigError> {
    move |key, v| {
        let n: u64 = v
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= min_ms)
            .ok_or_else(|| invalid(key, v, format!("expected milliseconds, at least {min_ms}")))?;
        Ok(Duration::from_millis(n))
    }
}

/// An optional string: empty means unset.
pub fn optional(_: &'static str, v: &str) -> Result<Option<String>, ConfigError> {
    Ok(Some(v.trim().to_owned()).filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(
            HostPort::parse("localhost:9092"),
            Some(HostPort::new("localhost", 9092))
        );
        assert_eq!(
            HostPort::parse("[::1]:9092"),
            Some(HostPort::new("::1", 9092))
        );
        assert_eq!(
            HostPort::parse("[::1]:9092").unwrap().to_string(),
            "[::1]:9092"
        );
        for bad in ["localhost", ":9092", "h:0", "h:99999", "::1:9092", "h:x"] {
            assert_eq!(HostPort::parse(bad), None, "{bad}");
        }
    }
}
