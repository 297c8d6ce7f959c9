//! The incremental RecordBatch v2 encoder: records go straight into one buffer; sealing
//! fills in the header, compresses if asked, and computes the crc32c.

use bytes::{BufMut, Bytes, BytesMut};

use super::{Attributes, ATTRIBUTES_OFFSET, BATCH_HEADER_LEN, CRC_OFFSET};
use crate::compression::Compression;
use crate::wire::{put_varint, varint_len, varlong_len};
use crate::EncodeError;

/// The header values fixed when a batch is sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMeta {
    /// Offset of the first record; producers send 0 and the broker assigns real offsets.
    pub base_offset: i64,
    /// The leader epoch, -1 from producers.
    pub partition_leader_epoch: i32,
    /// The idempotent producer id, or -1.
    pub producer_id: i64,
    /// The producer epoch, or -1.
    pub producer_epoch: i16,
    /// The sequence number of the first record, or -1.
    pub base_sequence: i32,
    /// Part of a transaction.
    pub transactional: bool,
    /// A control batch (commit or abort marker).
    pub control: bool,
    /// Timestamps are LogAppendTime.
    pub log_append_time: bool,
}

impl Default for BatchMeta {
    fn default() -> Self {
        BatchMeta {
            base_offset: 0,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            control: false,
            log_append_time: false,
        }
    }
}

/// Builds one RecordBatch v2.
///
/// ```
/// use kafka_proto::compression::Compression;
/// use kafka_proto::record::{BatchBuilder, BatchMeta, RecordBatches};
///
/// let mut b = BatchBuilder::new(Compression::None, 1024);
/// b.append(1_700_000_000_000, Some(b"key"), Some(b"value"), &[("h", Some(&b"v"[..]))]);
/// let bytes = b.seal(&BatchMeta::default()).unwrap();
/// let batch = RecordBatches::new(bytes).next().unwrap().unwrap();
/// let record = batch.records().unwrap().next().unwrap().unwrap();
/// assert_eq!(record.value.as_deref(), Some(&b"value"[..]));
/// ```
#[derive(Debug)]
pub struct BatchBuilder {
    buf: BytesMut,
    compression: Compression,
    /// The compression level (see [`Compression::compress_at`]); `None`: the default.
    level: Option<i32>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchBuilder {
    /// A builder whose buffer starts with room for `capacity` bytes of records.
    pub fn new(compression: Compression, capacity: usize) -> Self {
        Self::with_buffer(
            compression,
            BytesMut::with_capacity(BATCH_HEADER_LEN + capacity),
        )
    }

    /// A builder reusing `buf`'s allocation (a recycled block from an earlier batch).
    pub fn with_buffer(compression: Compression, mut buf: BytesMut) -> Self {
        buf.clear();
        buf.put_bytes(0, BATCH_HEADER_LEN);
        BatchBuilder {
            buf,
            compression,
            level: None,
            count: 0,
            base_timestamp: 0,
            max_timestamp: i64::MIN,
        }
    }

    /// Compresses at `level` when sealed (see [`Compression::compress_at`]).
    pub fn with_level(mut self, level: Option<i32>) -> Self {
        self.level = level;
        self
    }

    /// Makes room for `additional` more bytes at once (a batch allowed to grow), rather than
    /// by doubling as records come.
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Records appended so far.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes written so far, header included, before compression.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// The codec the batch will be sealed with.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The encoded size of a record (its length prefix included) if appended now, so callers
    /// can decide whether it fits before appending. This is an upper bound: the timestamp
    /// delta of a first record is 0.
    pub fn record_size(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> usize {
        let body = self.body_len(timestamp, key, value, headers);
        varint_len(body as i32) + body
    }

    fn body_len(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> usize {
        let ts_delta = if self.count == 0 {
            0
        } else {
            timestamp.wrapping_sub(self.base_timestamp)
        };
        let mut n =
            1 + varlong_len(ts_delta) + varint_len(self.count) + bytes_len(key) + bytes_len(value);
        n += varint_len(headers.len() as i32);
        for (k, v) in headers {
            n += varint_len(k.len() as i32) + k.len() + bytes_len(*v);
        }
        n
    }

    /// Appends a record only if the batch stays within `limit` bytes (header included);
    /// returns the bytes it added. One size computation serves both the check and the write.
    pub fn append_within(
        &mut self,
        limit: usize,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> Option<usize> {
        let body = self.body_len(timestamp, key, value, headers);
        let add = varint_len(body as i32) + body;
        if self.buf.len() + add > limit && self.count > 0 {
            return None;
        }
        self.write_record(body, timestamp, key, value, headers);
        Some(add)
    }

    /// Appends a record with a CreateTime `timestamp` (epoch ms); returns its offset delta.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> i32 {
        // body_len gives the first record a timestamp delta of 0; write_record then makes
        // its timestamp the batch's base.
        let body = self.body_len(timestamp, key, value, headers);
        self.write_record(body, timestamp, key, value, headers)
    }

    fn write_record(
        &mut self,
        body: usize,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&str, Option<&[u8]>)],
    ) -> i32 {
        if self.count == 0 {
            self.base_timestamp = timestamp;
        }
        let offset_delta = self.count;
        // The varints between the byte strings are built on the stack and copied in runs:
        // BytesMut's per-byte puts check capacity and advance its length on every byte (about
        // 60 instructions of a 100-byte record), and sizing the buffer first with `resize`
        // cost more (a memset and its checks).
        let buf = &mut self.buf;
        buf.reserve(body + 5);
        let (mut run, mut at) = ([0u8; 32], 0);
        run_varint(&mut run, &mut at, body as i32);
        at += 1; // record attributes: unused, 0
        run_varlong(
            &mut run,
            &mut at,
            timestamp.wrapping_sub(self.base_timestamp),
        );
        run_varint(&mut run, &mut at, offset_delta);
        for bytes in [key, value] {
            match bytes {
                None => run_varint(&mut run, &mut at, -1),
                Some(b) => {
                    run_varint(&mut run, &mut at, b.len() as i32);
                    buf.extend_from_slice(&run[..at]);
                    at = 0;
                    buf.extend_from_slice(b);
                }
            }
        }
        run_varint(&mut run, &mut at, headers.len() as i32);
        buf.extend_from_slice(&run[..at]);
        for (k, v) in headers {
            put_varint(buf, k.len() as i32);
            buf.put_slice(k.as_bytes());
            put_opt_bytes(buf, *v);
        }
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        offset_delta
    }

    /// Finishes the batch: compresses the records if asked, fills in the header and the crc32c.
    pub fn seal(self, meta: &BatchMeta) -> Result<Bytes, EncodeError> {
        let mut buf = self.buf;
        if self.compression != Compression::None {
            let compressed =
                (self.compression).compress_at(&buf[BATCH_HEADER_LEN..], self.level)?;
            buf.truncate(BATCH_HEADER_LEN);
            buf.extend_from_slice(&compressed);
        }
        let batch_len = buf.len() - super::LOG_OVERHEAD;
        let batch_len = i32::try_from(batch_len).map_err(|_| EncodeError::TooLong {
            what: "record batch",
            len: batch_len,
        })?;
        let max_ts = if self.count == 0 {
            -1
        } else {
            self.max_timestamp
        };
        let attrs = Attributes::new(
            self.compression,
            meta.log_append_time,
            meta.transactional,
            meta.control,
        );
        let mut h = &mut buf[..BATCH_HEADER_LEN];
        h.put_i64(meta.base_offset);
        h.put_i32(batch_len);
        h.put_i32(meta.partition_leader_epoch);
        h.put_i8(2);
        h.put_u32(0); // crc, below
        h.put_i16(attrs.0);
        h.put_i32(self.count - 1); // lastOffsetDelta
        h.put_i64(if self.count == 0 {
            -1
        } else {
            self.base_timestamp
        });
        h.put_i64(max_ts);
        h.put_i64(meta.producer_id);
        h.put_i16(meta.producer_epoch);
        h.put_i32(meta.base_sequence);
        h.put_i32(self.count);
        let crc = crc32c::crc32c(&buf[ATTRIBUTES_OFFSET..]);
        buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(buf.freeze())
    }
}

/// Varints collected on the stack and written to the batch in one copy. The longest run a
/// record makes is its length, attributes, timestamp and offset deltas and two byte-string
/// lengths: 5 + 1 + 10 + 5 + 5 + 5 bytes. The position is a local (`&mut usize` inlined away)
/// so that it lives in a register, not in memory as a struct's field would.
type Run = [u8; 32];

#[inline(always)]
fn run_uvarint(run: &mut Run, at: &mut usize, mut v: u64) {
    while v >= 0x80 {
        run[*at] = (v as u8) | 0x80;
        *at += 1;
        v >>= 7;
    }
    run[*at] = v as u8;
    *at += 1;
}

#[inline(always)]
fn run_varlong(run: &mut Run, at: &mut usize, v: i64) {
    run_uvarint(run, at, ((v << 1) ^ (v >> 63)) as u64);
}

#[inline(always)]
fn run_varint(run: &mut Run, at: &mut usize, v: i32) {
    run_uvarint(run, at, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

fn bytes_len(b: Option<&[u8]>) -> usize {
    match b {
        None => varint_len(-1),
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
}

fn put_opt_bytes(buf: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => put_varint(buf, -1),
        Some(b) => {
            put_varint(buf, b.len() as i32);
            buf.put_slice(b);
        }
    }
}

/// Rewrites a sealed batch's producer epoch and base sequence, recomputing the crc32c, for a
/// producer that bumped its epoch (KIP-360) and must resend queued batches under it.
/// Returns `None` if `batch` is not a whole v2 batch.
pub fn rewrite_producer_fields(
    batch: &Bytes,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
) -> Option<Bytes> {
    if batch.len() < BATCH_HEADER_LEN || batch[16] != 2 {
        return None;
    }
    let mut b = BytesMut::from(&batch[..]);
    b[43..51].copy_from_slice(&producer_id.to_be_bytes());
    b[51..53].copy_from_slice(&producer_epoch.to_be_bytes());
    b[53..57].copy_from_slice(&base_sequence.to_be_bytes());
    let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
    b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Some(b.freeze())
}
