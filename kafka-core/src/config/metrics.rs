//! The metrics settings every client shares (`metrics.sample.window.ms`, `metrics.num.samples`,
//! `metrics.recording.level`, `enable.metrics.push`), with Java's keys and defaults.

use std::time::Duration;

use super::ConfigError;

/// `metrics.sample.window.ms` and `metrics.num.samples`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// How long one sample collects events.
    pub length: Duration,
    /// How many samples are kept (at least 1).
    pub samples: u32,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            length: Duration::from_secs(30),
            samples: 2,
        }
    }
}

/// The metrics settings every client shares, with Java's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `metrics.sample.window.ms` and `metrics.num.samples`.
    pub window: Window,
    /// `metrics.recording.level`: `INFO` (default), `DEBUG` or `TRACE`. Every metric this
    /// client keeps is recorded at `INFO` already; the key is validated as Java does.
    pub recording_level: RecordingLevel,
    /// `enable.metrics.push`: push the metrics the broker subscribes to (KIP-714).
    pub push: bool,
}

/// `metrics.recording.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordingLevel {
    /// `INFO`.
    Info,
    /// `DEBUG`.
    Debug,
    /// `TRACE`.
    Trace,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            window: Window::default(),
            recording_level: RecordingLevel::Info,
            push: true,
        }
    }
}

impl MetricsConfig {
    /// The keys, with Java's defaults.
    pub const KEYS: &'static [(&'static str, &'static str)] = &[
        ("metrics.sample.window.ms", "30000"),
        ("metrics.num.samples", "2"),
        ("metrics.recording.level", "INFO"),
        ("enable.metrics.push", "true"),
    ];

    /// Applies `key = value` if `key` is a metrics setting (`None` otherwise).
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Option<Result<(), ConfigError>> {
        use super::parse;
        let r = match key {
            "metrics.sample.window.ms" => {
                parse::millis(1)(Self::KEYS[0].0, value).map(|d| self.window.length = d)
            }
            "metrics.num.samples" => parse::int::<u32>(1, i32::MAX as i64)(Self::KEYS[1].0, value)
                .map(|n| self.window.samples = n),
            "metrics.recording.level" => {
                let level = match value.trim().to_ascii_uppercase().as_str() {
                    "INFO" => Some(RecordingLevel::Info),
                    "DEBUG" => Some(RecordingLevel::Debug),
                    "TRACE" => Some(RecordingLevel::Trace),
                    _ => None,
                };
                level
                    .map(|l| self.recording_level = l)
                    .ok_or_else(|| ConfigError::InvalidValue {
                        key: "metrics.recording.level",
                        value: value.to_owned(),
                        rule: "must be one of INFO, DEBUG, TRACE".into(),
                    })
            }
            "enable.metrics.push" => {
                parse::boolean("enable.metrics.push", value).map(|b| self.push = b)
            }
            _ => return None,
        };
        Some(r)
    }
}
