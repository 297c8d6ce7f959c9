//! RecordBatch v2 (magic 2, Kafka 0.11+): the incremental [`BatchBuilder`] and the zero-copy,
//! lazily iterated [`RecordBatches`] decoder.
//!
//! Batch layout (61-byte header, then the records, possibly compressed):
//!
//! ```text
//! baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
//! attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
//! producerId i64 | producerEpoch i16 | baseSequence i32 | recordCount i32 | records...
//! ```
//!
//! The crc32c covers everything from `attributes` to the end of the batch.

mod builder;
mod decode;

pub use builder::{rewrite_producer_fields, BatchBuilder, BatchMeta};
pub use decode::{ControlRecordType, Header, Headers, Record, RecordBatch, RecordBatches, Records};

/// Size of the fixed batch header.
pub const BATCH_HEADER_LEN: usize = 61;
/// Bytes before `batchLength` ends: the length counts from here.
pub(crate) const LOG_OVERHEAD: usize = 12;
/// Offset of the magic byte.
pub(crate) const MAGIC_OFFSET: usize = 16;
/// Offset of the crc.
pub(crate) const CRC_OFFSET: usize = 17;
/// Offset where crc coverage (the attributes) begins.
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;

/// The batch attributes bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attributes(pub i16);

impl Attributes {
    const COMPRESSION_MASK: i16 = 0x07;
    const LOG_APPEND_TIME: i16 = 0x08;
    const TRANSACTIONAL: i16 = 0x10;
    const CONTROL: i16 = 0x20;

    /// Builds the attributes for a batch.
    pub fn new(
        compression: crate::compression::Compression,
        log_append_time: bool,
        transactional: bool,
        control: bool,
    ) -> Self {
        let mut a = i16::from(compression.id());
        if log_append_time {
            a |= Self::LOG_APPEND_TIME;
        }
        if transactional {
            a |= Self::TRANSACTIONAL;
        }
        if control {
            a |= Self::CONTROL;
        }
        Attributes(a)
    }

    /// The compression codec id (0-7).
    pub fn compression_id(self) -> u8 {
        (self.0 & Self::COMPRESSION_MASK) as u8
    }
    /// Whether timestamps are LogAppendTime (set by the broker) rather than CreateTime.
    pub fn is_log_append_time(self) -> bool {
        self.0 & Self::LOG_APPEND_TIME != 0
    }
    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(self) -> bool {
        self.0 & Self::TRANSACTIONAL != 0
    }
    /// Whether the batch holds a control record (transaction commit or abort marker).
    pub fn is_control(self) -> bool {
        self.0 & Self::CONTROL != 0
    }
}
