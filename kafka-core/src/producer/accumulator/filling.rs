//! How a record goes into a batch: the open batch's room and growth, the first block of a new
//! one, and how long a batch stays open.

use super::*;

/// How long a batch takes records after it opened, at least: a twentieth of its first record's
/// `delivery.timeout.ms` if that is longer, and linger.ms if longer still (see [`open_span`]).
pub(super) const OPEN_SPAN: Duration = Duration::from_millis(100);

/// How long a batch opened at `now` by a record due at `deadline` takes records, while it waits
/// to be sent. A batch's records share its delivery deadline, the latest of theirs (none fails
/// before its own `delivery.timeout.ms`: records appended 15 s after their batch opened failed
/// within a second, through a network drop, when a batch kept its first record's), so the
/// span is how far past its own deadline a first record may wait: at most a twentieth of it
/// (6 s of the default 2 minutes), or `OPEN_SPAN`, or linger.ms.
///
/// Short spans cost the broker dearly when it is the bottleneck: keyed over 10,000 partitions
/// of one Apache Kafka node, a batch waits seconds for its turn in a request, and closed after
/// 100 ms it held 1.5 records instead of 6; 300,000 records took 88 s and 3.9 CPU-s with 100
/// ms spans, 54 s and 1.5 CPU-s with 6 s (`perf produce --keys 100000`, one run each). Java
/// keeps a batch open until it is sent, and fails its later records before their time.
pub(super) fn open_span(now: Instant, deadline: Instant, linger: Duration) -> Duration {
    (deadline.saturating_duration_since(now) / 20)
        .max(OPEN_SPAN)
        .max(linger)
}

/// The smallest block a new batch reserves (see [`first_block`]).
pub(super) const MIN_BLOCK: usize = 1024;

/// The block a new batch reserves: room for as many records like this one as its partition's
/// last batch held (`hint`), at least `MIN_BLOCK` and at most `batch.size` (or the record's own
/// size if larger); [`Accumulator::append`] doubles it on demand up to `batch.size`. Not
/// rounded to a power of two: at 1,000 partitions that slack showed in peak RSS (84 MB
/// against 68, one run each of `perf produce` on Apache Kafka).
///
/// Java reserves a whole `batch.size` block per batch. Keyed over thousands of partitions a
/// batch holds a few records, so 16 KB blocks for 300-byte batches starved the pool: at
/// 1,000 partitions `buffer.memory` held 2,000 mostly empty blocks, each send waited for
/// one, and 1M records into one broker took 87 s instead of 6.
pub(super) fn first_block(batch_size: usize, need: usize, hint: usize) -> usize {
    let records = need - BATCH_HEADER_LEN;
    let want = BATCH_HEADER_LEN + records.saturating_mul(hint.max(1));
    if need >= batch_size {
        return need;
    }
    want.max(MIN_BLOCK).min(batch_size)
}

/// A record on its way into a batch, with what [`Accumulator::append`] made of it.
pub(super) struct NewRecord<'a> {
    pub(super) r: &'a ProducerRecord,
    pub(super) headers: &'a [(&'a str, Option<&'a [u8]>)],
    pub(super) token: RecordToken,
    pub(super) deadline: Instant,
}

/// What [`Room::extend`] did with a record.
pub(super) enum Extended {
    /// The open batch took it (`filled`: and filled up before it, and grew).
    Appended { bytes: usize, filled: bool },
    /// The batch is closed (`filled`: it filled up just now): the record needs a new one.
    Closed { filled: bool },
}

/// What a partition's open batch may take: memory from the pool, within the size limits.
pub(super) struct Room<'a> {
    pub(super) pool: &'a mut Pool,
    pub(super) grow_caps: &'a BTreeMap<String, usize>,
    pub(super) grow_to: usize,
    pub(super) batch_size: usize,
    pub(super) ratio: f64,
}

impl Room<'_> {
    /// Appends the record to the open batch `last` if it is still open and has room, growing
    /// it while memory allows: below `batch.size` its block doubles (see [`first_block`]), and
    /// once full it grows only while it would wait anyway (`behind` another batch, or found
    /// waiting; see [`Accumulator::grow`]).
    #[inline]
    pub(super) fn extend(
        &mut self,
        last: &mut Batch,
        record: &NewRecord<'_>,
        now: Instant,
        behind: bool,
    ) -> Extended {
        // A batch takes records for a bounded span (see `open_span`): its records share its
        // deadline, so the span bounds how long its first one waits past its own.
        if now > last.open_until {
            last.closed = true;
        }
        let mut filled = false;
        let (false, Some(b)) = (last.closed, last.builder.as_mut()) else {
            return Extended::Closed { filled };
        };
        let r = record.r;
        let (key, value) = (r.key.as_deref(), r.value.as_deref());
        loop {
            // Stay within the reserved block, and within the batch's target size on the wire
            // (`batch.size`, or what it grew to) after the estimated compression ratio.
            // At a ratio of 1 or less the block is the limit: no float division per record.
            let limit = if self.ratio <= 1.0 {
                last.reserved
            } else {
                let target = last.reserved.max(self.batch_size);
                let by_ratio = (target as f64 / self.ratio) as usize;
                last.reserved.min(by_ratio.max(BATCH_HEADER_LEN))
            };
            if let Some(bytes) = b.append_within(limit, r.timestamp, key, value, record.headers) {
                last.records.push(RecordMeta {
                    token: record.token,
                    timestamp: r.timestamp,
                });
                if record.deadline > last.deadline {
                    last.deadline = record.deadline;
                }
                return Extended::Appended { bytes, filled };
            }
            // Below `batch.size`, its block doubles while memory allows (see `first_block`);
            // only a batch that cannot is full.
            if !last.full && last.reserved < self.batch_size {
                let more = last.reserved.min(self.batch_size - last.reserved);
                if self.pool.try_take(more) {
                    last.reserved += more;
                    b.reserve(last.reserved.saturating_sub(b.size()));
                    continue;
                }
            }
            // Full: ready now. It takes more records only while it waits to be sent.
            filled |= !last.full;
            last.full = true;
            let grow = if behind || last.waited {
                let cap = self.grow_caps.get(r.topic.as_str()).copied();
                let grow_to = cap.unwrap_or(self.grow_to);
                Accumulator::grow(self.pool, self.batch_size, grow_to, last.reserved)
            } else {
                None
            };
            match grow {
                Some(more) => {
                    last.reserved += more;
                    b.reserve(more);
                }
                None => {
                    last.closed = true;
                    return Extended::Closed { filled };
                }
            }
        }
    }
}

/// The size a record adds to a batch, an upper bound computed without a builder.
pub(crate) fn record_size(r: &ProducerRecord) -> usize {
    let bytes = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len()) + 5;
    let headers: usize = r.headers.iter().map(|(k, v)| k.len() + 5 + bytes(v)).sum();
    // length + attributes + timestamp delta + offset delta + header count, all varints at most.
    5 + 1 + 10 + 5 + 5 + bytes(&r.key) + bytes(&r.value) + headers
}
