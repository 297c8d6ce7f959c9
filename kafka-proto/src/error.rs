//! The codec's typed errors: what went wrong while decoding or encoding, and where.

use thiserror::Error;

/// A failure to decode bytes received from the wire.
///
/// Every decoder in this crate returns this instead of panicking, whatever the input.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the value did.
    #[error("input ended early: needed {needed} more byte(s)")]
    UnexpectedEnd {
        /// How many more bytes the value needed, at least.
        needed: usize,
    },
    /// A length or count prefix was negative (and not the null marker -1).
    #[error("invalid length {0}")]
    InvalidLength(i64),
    /// An array claims more elements than the remaining bytes could hold.
    #[error("array of {len} elements cannot fit in the {remaining} remaining byte(s)")]
    ArrayTooLong {
        /// The claimed element count.
        len: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A field that is not nullable at this version held null.
    #[error("null value for a field that is not nullable at this version")]
    UnexpectedNull,
    /// A string was not valid UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A varint ran past its maximum length.
    #[error("varint is longer than {max_bytes} bytes")]
    VarintTooLong {
        /// The longest encoding allowed for the type.
        max_bytes: usize,
    },
    /// A tagged field's declared size did not match the value inside it.
    #[error("tagged field {tag} declared {declared} byte(s) but its value used {used}")]
    TaggedFieldSize {
        /// The tag.
        tag: u32,
        /// The size prefix.
        declared: usize,
        /// What the value consumed.
        used: usize,
    },
    /// Bytes were left over after a complete message.
    #[error("{0} unexpected trailing byte(s) after the message")]
    TrailingBytes(usize),
    /// The API key is not one this crate knows.
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    /// The version is outside what this crate implements for the API.
    #[error("{api} v{version} is not supported by this codec")]
    UnsupportedVersion {
        /// API name.
        api: &'static str,
        /// Requested version.
        version: i16,
    },
    /// A frame's size prefix was negative.
    #[error("frame size {0} is negative")]
    NegativeFrameSize(i32),
    /// A frame's size prefix exceeded the configured maximum.
    #[error("frame of {size} bytes exceeds the maximum of {max} bytes; raise the limit if this peer is trusted")]
    FrameTooLarge {
        /// Declared frame size.
        size: usize,
        /// Configured maximum.
        max: usize,
    },
    /// A record batch had a magic byte other than 2.
    #[error("record batch magic {0} is not supported (only v2, Kafka 0.11+)")]
    UnsupportedMagic(i8),
    /// A record batch's crc32c did not match its contents.
    #[error(
        "record batch CRC mismatch: header says {expected:#010x}, contents give {actual:#010x}"
    )]
    CrcMismatch {
        /// CRC stored in the batch header.
        expected: u32,
        /// CRC computed over the batch.
        actual: u32,
    },
    /// A record batch or record was structurally invalid.
    #[error("invalid record batch: {0}")]
    InvalidBatch(&'static str),
    /// A response arrived whose correlation id matches no request in flight (or none was).
    #[error("a response that answers no request in flight")]
    UnexpectedResponse,
    /// The batch's compression codec id is unknown.
    #[error("unknown compression codec id {0}")]
    UnknownCompression(u8),
    /// The batch uses a codec whose cargo feature is disabled.
    #[error("{0} compression is disabled; enable the `{0}` feature of kafka-proto")]
    CompressionDisabled(&'static str),
    /// Decompression failed.
    #[error("{codec} decompression failed: {reason}")]
    Decompression {
        /// The codec.
        codec: &'static str,
        /// What the decompressor said.
        reason: String,
    },
    /// Decompressed data exceeded the configured cap (a compression bomb, or a cap set too low).
    #[error("decompressed data exceeds the {limit}-byte limit")]
    DecompressedTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// An error inside a named field; `path` reads like `FetchResponse.responses`.
    #[error("{path}: {source}")]
    InField {
        /// `Struct.field` where the error happened.
        path: &'static str,
        /// The underlying error.
        source: Box<DecodeError>,
    },
}

impl DecodeError {
    /// The innermost error, without the field path.
    pub fn root(&self) -> &DecodeError {
        match self {
            DecodeError::InField { source, .. } => source.root(),
            other => other,
        }
    }
}

/// A failure to encode a value for the wire.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A null value for a field that is not nullable at the chosen version.
    #[error("{0} is null, but is not nullable at this version")]
    UnexpectedNull(&'static str),
    /// A string, byte array or array is longer than its length prefix can say.
    #[error("{what} of length {len} is too long for its length prefix")]
    TooLong {
        /// What was too long.
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// The version is outside what this crate implements for the API.
    #[error("{api} v{version} is not supported by this codec")]
    UnsupportedVersion {
        /// API name.
        api: &'static str,
        /// Requested version.
        version: i16,
    },
    /// The batch uses a codec whose cargo feature is disabled.
    #[error("{0} compression is disabled; enable the `{0}` feature of kafka-proto")]
    CompressionDisabled(&'static str),
    /// Compression failed.
    #[error("{codec} compression failed: {reason}")]
    Compression {
        /// The codec.
        codec: &'static str,
        /// What the compressor said.
        reason: String,
    },
}
