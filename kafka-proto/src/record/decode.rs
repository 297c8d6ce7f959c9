//! The zero-copy RecordBatch v2 decoder: batches and records are read lazily, borrow the
//! response's `Bytes`, and every length and the crc32c are checked.

use bytes::Bytes;

use super::{Attributes, ATTRIBUTES_OFFSET, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_OFFSET};
use crate::compression::{Compression, DEFAULT_MAX_DECOMPRESSED};
use crate::wire::Reader;
use crate::DecodeError;

/// Iterates the record batches in a partition's `records` bytes.
///
/// A fetch response may cut its last batch short (the broker fills up to the byte limit). That
/// partial batch is not an error: iteration stops, and [`RecordBatches::truncated`] says how many
/// bytes were left over. A malformed batch yields an error, after which iteration ends.
#[derive(Debug, Clone)]
pub struct RecordBatches {
    data: Bytes,
    pos: usize,
    truncated: usize,
    failed: bool,
    max_decompressed: usize,
}

impl RecordBatches {
    /// Batches in `data`, with the default decompression cap.
    pub fn new(data: Bytes) -> Self {
        RecordBatches {
            data,
            pos: 0,
            truncated: 0,
            failed: false,
            max_decompressed: DEFAULT_MAX_DECOMPRESSED,
        }
    }

    /// Sets the largest decompressed size accepted for one batch.
    pub fn with_max_decompressed(mut self, limit: usize) -> Self {
        self.max_decompressed = limit;
        self
    }

    /// Bytes of a partial trailing batch, once iteration has reached it (0 if none).
    pub fn truncated(&self) -> usize {
        self.truncated
    }

    fn parse_next(&mut self) -> Result<Option<RecordBatch>, DecodeError> {
        let rest = &self.data[self.pos..];
        if rest.len() < LOG_OVERHEAD {
            self.truncated = rest.len();
            return Ok(None);
        }
        let batch_len = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
        if batch_len < (BATCH_HEADER_LEN - LOG_OVERHEAD) as i32 {
            return Err(DecodeError::InvalidBatch(
                "batch length is shorter than the batch header",
            ));
        }
        let total = LOG_OVERHEAD + batch_len as usize;
        if rest.len() > MAGIC_OFFSET && rest[MAGIC_OFFSET] != 2 {
            return Err(DecodeError::UnsupportedMagic(rest[MAGIC_OFFSET] as i8));
        }
        if rest.len() < total {
            self.truncated = rest.len();
            return Ok(None);
        }
        let bytes = self.data.slice(self.pos..self.pos + total);
        self.pos += total;
        RecordBatch::parse(bytes, self.max_decompressed).map(Some)
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.parse_next() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// One decoded batch header, with its (possibly compressed) records not yet read.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordBatch {
    /// Offset of the first record.
    pub base_offset: i64,
    /// The leader epoch when the batch was appended.
    pub partition_leader_epoch: i32,
    /// The attributes bits.
    pub attributes: Attributes,
    /// Offset delta of the last record.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// Largest timestamp in the batch (the LogAppendTime, when that is the type).
    pub max_timestamp: i64,
    /// Producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence of the first record, or -1.
    pub base_sequence: i32,
    /// Records the header claims.
    pub record_count: i32,
    /// The whole batch, header included.
    raw: Bytes,
    max_decompressed: usize,
}

impl RecordBatch {
    /// Parses and crc-checks one whole batch.
    pub fn parse(raw: Bytes, max_decompressed: usize) -> Result<Self, DecodeError> {
        let mut r = Reader::new(&raw);
        let base_offset = r.i64()?;
        let _batch_len = r.i32()?;
        let partition_leader_epoch = r.i32()?;
        let magic = r.i8()?;
        if magic != 2 {
            return Err(DecodeError::UnsupportedMagic(magic));
        }
        let expected = r.u32()?;
        let actual = crc32c::crc32c(&raw[ATTRIBUTES_OFFSET..]);
        if expected != actual {
            return Err(DecodeError::CrcMismatch { expected, actual });
        }
        let batch = RecordBatch {
            base_offset,
            partition_leader_epoch,
            attributes: Attributes(r.i16()?),
            last_offset_delta: r.i32()?,
            base_timestamp: r.i64()?,
            max_timestamp: r.i64()?,
            producer_id: r.i64()?,
            producer_epoch: r.i16()?,
            base_sequence: r.i32()?,
            record_count: r.i32()?,
            raw: raw.clone(),
            max_decompressed,
        };
        if batch.record_count < 0 {
            return Err(DecodeError::InvalidBatch("negative record count"));
        }
        Ok(batch)
    }

    /// The batch's codec.
    pub fn compression(&self) -> Result<Compression, DecodeError> {
        Compression::from_id(self.attributes.compression_id())
    }

    /// Whether this is a control batch (transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes.is_control()
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes.is_transactional()
    }

    /// Offset of the last record (it may have been compacted away).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// Offset the next batch starts at.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The encoded size of the whole batch.
    pub fn size(&self) -> usize {
        self.raw.len()
    }

    /// The whole batch as received, header included.
    pub fn as_bytes(&self) -> &Bytes {
        &self.raw
    }

    /// Decompresses if needed and iterates the records.
    pub fn records(&self) -> Result<Records, DecodeError> {
        let body = self.raw.slice(BATCH_HEADER_LEN..);
        let data = match self.compression()? {
            Compression::None => body,
            c => c.decompress(&body, self.max_decompressed)?,
        };
        // A count larger than the bytes could hold is forged: each record takes at least 7 bytes.
        if self.record_count as usize > data.len() / 7 + 1 {
            return Err(DecodeError::InvalidBatch(
                "record count exceeds what the data can hold",
            ));
        }
        Ok(Records {
            data,
            pos: 0,
            left: self.record_count,
            base_offset: self.base_offset,
            base_timestamp: self.base_timestamp,
            log_append_time: self
                .attributes
                .is_log_append_time()
                .then_some(self.max_timestamp),
            failed: false,
        })
    }

    /// For a control batch, the marker type of its record: commit or abort.
    pub fn control_type(&self) -> Result<Option<ControlRecordType>, DecodeError> {
        if !self.is_control() {
            return Ok(None);
        }
        let record = self
            .records()?
            .next()
            .ok_or(DecodeError::InvalidBatch("control batch without a record"))??;
        let key = record
            .key
            .ok_or(DecodeError::InvalidBatch("control record without a key"))?;
        let mut r = Reader::new(&key);
        let _version = r.i16()?;
        Ok(Some(match r.i16()? {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            other => ControlRecordType::Unknown(other),
        }))
    }
}

/// The kind of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlRecordType {
    /// The transaction aborted.
    Abort,
    /// The transaction committed.
    Commit,
    /// A type this client does not know.
    Unknown(i16),
}

/// The records of one batch, read lazily.
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    data: Bytes,
    pos: usize,
    left: i32,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    failed: bool,
}

impl Records {
    fn parse_next(&mut self) -> Result<Record, DecodeError> {
        let mut outer = Reader::at(&self.data, self.pos);
        let len = outer.varint()?;
        if len < 0 {
            return Err(DecodeError::InvalidBatch("negative record length"));
        }
        let mut r = outer.sub(len as usize)?;
        let _attributes = r.i8()?;
        let ts_delta = r.varlong()?;
        let offset_delta = r.varint()?;
        let key = varbytes(&mut r)?;
        let value = varbytes(&mut r)?;
        let count = r.varint()?;
        if count < 0 || count as usize > r.remaining() {
            return Err(DecodeError::InvalidBatch("invalid header count"));
        }
        let headers_start = r.position();
        // Validate the headers now so that iterating them later cannot fail.
        for _ in 0..count {
            let k = varbytes(&mut r)?.ok_or(DecodeError::InvalidBatch("null header key"))?;
            std::str::from_utf8(&k).map_err(|_| DecodeError::InvalidUtf8)?;
            varbytes(&mut r)?;
        }
        if r.remaining() != 0 {
            return Err(DecodeError::InvalidBatch(
                "record length does not match its fields",
            ));
        }
        let headers_end = outer.position();
        self.pos = headers_end;
        Ok(Record {
            offset: self.base_offset.wrapping_add(i64::from(offset_delta)),
            timestamp: self
                .log_append_time
                .unwrap_or(self.base_timestamp.wrapping_add(ts_delta)),
            key,
            value,
            headers: Headers {
                // Most records have no headers: skip the refcount bump of a slice.
                data: if count == 0 {
                    Bytes::new()
                } else {
                    self.data.slice(headers_start..headers_end)
                },
                left: count,
            },
        })
    }
}

impl Iterator for Records {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.left == 0 {
            if self.pos != self.data.len() {
                self.failed = true;
                return Some(Err(DecodeError::InvalidBatch(
                    "bytes left after the batch's last record",
                )));
            }
            return None;
        }
        self.left -= 1;
        let r = self.parse_next();
        self.failed = r.is_err();
        Some(r)
    }
}

#[inline]
fn varbytes(r: &mut Reader<'_>) -> Result<Option<Bytes>, DecodeError> {
    match r.varint()? {
        -1 => Ok(None),
        n if n < 0 => Err(DecodeError::InvalidLength(i64::from(n))),
        n => r.take(n as usize).map(Some),
    }
}

/// One record. Key, value and headers are zero-copy slices of the fetched (or decompressed) bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The record's offset.
    pub offset: i64,
    /// CreateTime, or the broker's LogAppendTime when the batch says so (epoch ms).
    pub timestamp: i64,
    /// The key, if any.
    pub key: Option<Bytes>,
    /// The value, if any (null is a tombstone).
    pub value: Option<Bytes>,
    /// The headers.
    pub headers: Headers,
}

/// A record's headers, already validated, iterated without allocating.
#[derive(Debug, Clone, PartialEq)]
pub struct Headers {
    data: Bytes,
    left: i32,
}

/// One record header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The header key (UTF-8, checked when the record was read).
    pub key: Bytes,
    /// The header value, if any.
    pub value: Option<Bytes>,
}

impl Header {
    /// The key as a string.
    pub fn key_str(&self) -> &str {
        // Checked in Records::parse_next; an invalid key never reaches here.
        std::str::from_utf8(&self.key).unwrap_or_default()
    }
}

impl Headers {
    /// How many headers there are.
    pub fn len(&self) -> usize {
        self.left as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl Iterator for Headers {
    type Item = Header;

    fn next(&mut self) -> Option<Header> {
        if self.left <= 0 {
            return None;
        }
        let mut r = Reader::new(&self.data);
        let key = varbytes(&mut r).ok()??;
        let value = varbytes(&mut r).ok()?;
        let used = self.data.len() - r.remaining();
        self.data = self.data.slice(used..);
        self.left -= 1;
        Some(Header { key, value })
    }
}
