//! The Kafka wire protocol: framing, primitive types, every message the client speaks,
//! version negotiation, error codes, RecordBatch v2 and compression.
//!
//! This crate does no IO. It turns bytes into typed values and back, and never panics or
//! over-allocates, whatever the input: every decoder returns a typed [`DecodeError`].
//!
//! # Layers
//! - [`frame::FrameDecoder`] splits a byte stream into size-prefixed frames ("need more" until whole).
//! - [`header`] reads and writes request and response headers and whole frames.
//!   [`encode_request_into`] with a splicing [`wire::Encoder`] leaves large byte fields (a
//!   produce request's record batches) out of the frame, to be written from their own
//!   buffers by a vectored write.
//! - [`messages`] holds one module per message body, declared once in a table (see [`schema`]),
//!   for every version from Kafka 4.0's minimum to Kafka 4.1's maximum ([`ApiKey::min_version`],
//!   [`ApiKey::max_version`]).
//! - [`BrokerVersions`] picks the highest version both sides speak.
//! - [`record`] builds and reads RecordBatch v2, zero-copy, with crc32c and [`compression`].
//!
//! The client encodes requests and decodes responses. The `broker` feature adds the other
//! direction (request decoders, response encoders) for simulators and tests.
//!
//! # Example: a Metadata round trip
//! ```
//! use bytes::BytesMut;
//! use kafka_proto::messages::metadata_request::MetadataRequest;
//! use kafka_proto::{encode_request, FrameDecoder};
//!
//! let mut out = BytesMut::new();
//! let req = MetadataRequest { topics: None, ..Default::default() }; // all topics
//! encode_request(&mut out, &req, 12, 7, Some("my-client")).unwrap();
//!
//! let mut frames = FrameDecoder::default();
//! frames.extend(&out[..5]);
//! assert!(frames.next_frame().unwrap().is_none()); // need more bytes
//! frames.extend(&out[5..]);
//! let frame = frames.next_frame().unwrap().expect("a whole frame");
//! assert_eq!(&frame[..2], &3i16.to_be_bytes()); // Metadata's API key
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[macro_use]
pub mod schema;

pub mod api;
pub mod compression;
pub mod consumer_protocol;
mod encoder;
mod error;
pub mod error_code;
pub mod frame;
pub mod header;
#[allow(missing_docs)]
pub mod messages;
pub mod record;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod versions;
pub mod wire;

#[cfg(feature = "broker")]
pub use api::RequestBody;
pub use api::{ApiKey, Decode, Direction, Encode, Request, Response, ResponseBody};
pub use error::{DecodeError, EncodeError};
pub use error_code::ErrorCode;
pub use frame::FrameDecoder;
#[cfg(feature = "broker")]
pub use header::{decode_request, encode_response};
pub use header::{
    decode_response, decode_response_body, encode_request, encode_request_into, RequestHeader,
    ResponseHeader,
};
pub use versions::{BrokerVersions, NegotiationError};
