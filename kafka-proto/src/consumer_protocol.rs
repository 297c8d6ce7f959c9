//! The ConsumerProtocol payloads: the version-prefixed Subscription (JoinGroup metadata) and
//! Assignment (SyncGroup assignment) that Java, librdkafka and this client all agree on.

use bytes::{BufMut, Bytes};

pub use crate::messages::consumer_protocol_assignment::ConsumerProtocolAssignment;
pub use crate::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use crate::wire::{Ctx, Encoder, Reader, Wire};
use crate::{DecodeError, EncodeError};

/// The highest payload version this codec writes and fully understands.
pub const MAX_VERSION: i16 = 3;

/// A version-prefixed consumer-protocol payload.
pub trait ConsumerPayload: Wire {
    /// Encodes `[version: i16][body]` at `version` (0..=[`MAX_VERSION`]).
    fn encode_payload(&self, version: i16) -> Result<Bytes, EncodeError> {
        if !(0..=MAX_VERSION).contains(&version) {
            return Err(EncodeError::UnsupportedVersion {
                api: "ConsumerProtocol",
                version,
            });
        }
        let mut buf = Encoder::default();
        buf.put_i16(version);
        self.write(
            &mut buf,
            Ctx {
                version,
                flexible: false,
            },
        )?;
        Ok(buf.into_inner().freeze())
    }

    /// Decodes a payload, returning the version it was written at.
    ///
    /// A newer member may write a version above [`MAX_VERSION`]: newer versions only append
    /// fields, so it is read at [`MAX_VERSION`] and the unknown tail is ignored, as Java does.
    fn decode_payload(buf: &Bytes) -> Result<(i16, Self), DecodeError> {
        let mut r = Reader::new(buf);
        let version = r.i16()?;
        if version < 0 {
            return Err(DecodeError::UnsupportedVersion {
                api: "ConsumerProtocol",
                version,
            });
        }
        let ctx = Ctx {
            version: version.min(MAX_VERSION),
            flexible: false,
        };
        let value = Self::read(&mut r, ctx)?;
        if version <= MAX_VERSION {
            r.finish()?;
        }
        Ok((version, value))
    }
}

impl ConsumerPayload for ConsumerProtocolSubscription {}
impl ConsumerPayload for ConsumerProtocolAssignment {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::consumer_protocol_subscription::TopicPartition;

    #[test]
    fn a_newer_version_is_read_at_ours_ignoring_the_tail() {
        let sub = ConsumerProtocolSubscription {
            topics: vec!["t".into()],
            user_data: None,
            owned_partitions: vec![TopicPartition {
                topic: "t".into(),
                partitions: vec![0, 2],
                ..Default::default()
            }],
            generation_id: 5,
            rack_id: Some("r1".into()),
            ..Default::default()
        };
        let bytes = sub.encode_payload(3).unwrap();
        let mut v4 = bytes::BytesMut::from(&bytes[..]);
        v4[..2].copy_from_slice(&4i16.to_be_bytes());
        v4.extend_from_slice(&[9, 9, 9]); // a field from the future
        let (version, back) = ConsumerProtocolSubscription::decode_payload(&v4.freeze()).unwrap();
        assert_eq!(version, 4);
        assert_eq!(back, sub);
    }
}
