//! The record accumulator: a queue of batches per partition, memory accounted against
//! `buffer.memory`, the readiness rules, and draining per leader up to `max.request.size`.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_proto::compression::Compression;
use kafka_proto::record::{BatchBuilder, RecordBatches, BATCH_HEADER_LEN};

use super::record::{ProducerRecord, RecordMeta, RecordToken, Topic};
use crate::time::Instant;
use crate::topic::TopicKey;

/// A topic and partition.
pub use crate::topic::TopicPartition;
pub(crate) use batch::{Batch, BatchData};
pub(crate) use pool::Pool;
use queues::Queues;

pub(crate) use filling::record_size;
use filling::{first_block, open_span, Extended, NewRecord, Room};

mod batch;
mod filling;
mod pool;
mod queues;

/// Why an append did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoMemory;

/// How much memory a new batch may make do with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// A whole first block (see [`first_block`]; the record's size if larger): a send waits
    /// for one rather than take a scrap. Scraps would last: each is freed when its batch
    /// completes and taken again, at the same size, by the send waiting for memory, so a
    /// producer once short of memory would stay in small batches.
    Whole,
    /// Down to exactly this record when memory is short: for records that held their own
    /// memory while they waited for metadata, so that placing them always makes progress.
    AtLeastRecord,
}

/// What an append did, for the sticky partitioner and the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    pub new_batch: bool,
    /// The append filled a batch of the partition to `batch.size` (the open one, or, when it
    /// opened a new one, the one before): it is ready now.
    pub filled: bool,
    pub bytes: usize,
}

/// When a batch first at its partition may be sent, unless a flush, a close or a memory
/// waiter makes it ready sooner: its retry backoff's end, else at once once full, else when
/// `linger.ms` has passed.
fn ready_at(b: &Batch, linger: Duration) -> Instant {
    match b.retry_at {
        Some(t) => t,
        None if b.full => b.created,
        None => b.created + linger,
    }
}

/// The partitions' first batches by when they become ready and by delivery deadline, so that
/// the sender and `poll_timeout` find what is due without visiting every partition (a keyed
/// topic of 10,000 partitions has as many queues). A deadline key may be earlier than its
/// batch's deadline (appending to a first batch pushes its deadline later without reindexing
/// it): `expire` corrects it when it comes up, so a wake-up may be early, never late.
///
/// Queues are named by an id, not by topic and partition: an id compares in one instruction
/// and copies without touching a shared name's count (those clones and compares were most of
/// the index's cost, a fifth of a batch's at 10,000 partitions).
///
/// Deadlines are only ever asked for the earliest, so they sit in a sorted deque whose entries
/// are never searched for and removed: an entry carries its queue's generation, and one whose
/// queue has been reindexed since is stale, dropped when it reaches the front (which is kept
/// current, so that `poll_timeout` reads it) or when stale entries outnumber live ones. A new
/// batch's deadline is the latest (`delivery.timeout.ms` after its first record), so it is
/// pushed at the back, and stale entries leave from the front: where the tree's insert and
/// remove cost about 600 instructions a batch at 10,000 partitions, and a min-heap's pop of
/// each stale entry about 300.
///
/// Ready times are walked in order, so they sit in a sorted deque, their entries likewise
/// never removed but left stale (each carries the queue's ready generation). A new batch's
/// ready time is the latest (pushed at the back), and one that falls due moves to an
/// unordered list of those due ([`Accumulator::promote`]), so that a queue's next batch, ready
/// already when the one before leaves, goes in at the front: at 10,000 partitions the tree's
/// insert and remove per batch cost about 900 instructions.
#[derive(Debug, Default)]
struct Fronts {
    /// (ready time, queue id, the queue's ready generation when pushed), by ready time.
    ready: VecDeque<(Instant, u32, u32)>,
    /// Entries taken from `ready` once their time came: (queue id, ready generation).
    ready_now: Vec<(u32, u32)>,
    /// (deadline, queue id, the queue's generation when pushed), by deadline.
    due: VecDeque<(Instant, u32, u32)>,
}

#[derive(Debug)]
pub(crate) struct Accumulator {
    batch_size: usize,
    /// How large a full batch may grow while it waits to be sent (see [`Accumulator::grow`]).
    grow_to: usize,
    /// Lower growth limits for topics whose brokers refused a grown batch as too large
    /// (a topic's `max.message.bytes` below `grow_to`).
    grow_caps: BTreeMap<String, usize>,
    linger: Duration,
    compression: Compression,
    /// The compression level (`compression.gzip.level`); `None`: the codec's default.
    level: Option<i32>,
    pub pool: Pool,
    queues: Queues,
    fronts: Fronts,
    /// Partitions whose queue opened since [`Accumulator::drain_opened`] last asked.
    opened: Vec<(Topic, i32)>,
    next_id: u64,
    /// Completed batches' boxes, for new batches (see [`SPARE_BATCHES`]).
    spare_batches: Vec<Batch>,
    /// Compressed / uncompressed size, learned from sealed batches, so compressed batches
    /// fill up to `batch.size` on the wire rather than before compression.
    ratio: f64,
}

/// Stale deadline entries the heap may hold beyond as many as the live ones (see [`Fronts`]);
/// small under test, so that the index's tests make it clean up.
const DUE_SLACK: usize = if cfg!(test) { 4 } else { 64 };

/// Inserts `entry` into `keys`, sorted by its first field, looking first at the back and then
/// the front, where entries mostly go, and searching only between.
#[inline]
fn insert_sorted(keys: &mut VecDeque<(Instant, u32, u32)>, entry: (Instant, u32, u32)) {
    let at = entry.0;
    if keys.back().is_none_or(|(t, _, _)| *t <= at) {
        keys.push_back(entry);
    } else if keys.front().is_some_and(|(t, _, _)| *t > at) {
        keys.push_front(entry);
    } else {
        let i = keys.partition_point(|(t, _, _)| *t <= at);
        keys.insert(i, entry);
    }
}

/// A new block of `len` bytes' capacity for a batch, made shared (`bytes`' KIND_ARC) from the
/// start: sealing freezes a batch's block into `Bytes`, and recycling takes it back with
/// `try_into_mut`. A plain `BytesMut` (a vector) allocated a shared header at each freeze and
/// freed it at each take-back, about 300 instructions a batch, where a shared one goes back
/// and forth as is.
fn shared_block(len: usize) -> BytesMut {
    let mut block = BytesMut::with_capacity(len);
    // Splitting at the end makes the block shared (a header allocated once); the empty tail
    // is dropped at once, leaving the block the header's only owner.
    drop(block.split_off(len));
    block
}

/// A partition whose first batch may be sent, with what the sender's `admit` said of it (see
/// [`Accumulator::ready`]).
pub(crate) type Ready<K> = ((Topic, i32), K);

/// Sorts ready partitions in (topic, partition) order, as the queues are (requests fill in
/// that order).
fn sort_ready<K>(ready: &mut [Ready<K>]) {
    ready.sort_unstable_by(|a, b| a.0.cmp(&b.0));
}

/// Boxes of completed batches kept for new ones: at many partitions nearly every record
/// opens a batch, and a box's allocation and free cost more than filling it.
const SPARE_BATCHES: usize = 256;

/// Stale ready entries beyond as many as the live ones (see [`Fronts`]): few, as unlike the
/// heap's top every stale entry among those due is walked past by each `ready` (at one
/// partition a slack of 64 cost 50 instructions a record).
const READY_SLACK: usize = 4;

impl Accumulator {
    pub fn new(
        batch_size: usize,
        grow_to: usize,
        linger: Duration,
        compression: Compression,
        buffer_memory: usize,
    ) -> Self {
        Accumulator {
            batch_size,
            grow_to: grow_to.max(batch_size),
            grow_caps: BTreeMap::new(),
            linger,
            compression,
            level: None,
            pool: Pool::new(buffer_memory, batch_size),
            queues: Queues::default(),
            fronts: Fronts::default(),
            opened: Vec::new(),
            next_id: 0,
            spare_batches: Vec::new(),
            ratio: 1.0,
        }
    }

    /// Compresses batches at `level` (see `ProducerConfig::compression_level`).
    pub fn with_level(mut self, level: Option<i32>) -> Self {
        self.level = level;
        self
    }

    /// Appends to the partition's open batch, or opens a new one (see [`first_block`]; never
    /// more than the whole pool). Called per
    /// record from the producer's module (see `StickyPartitioner::partition` on `#[inline]`).
    #[inline]
    pub fn append(
        &mut self,
        partition: i32,
        r: &ProducerRecord,
        token: RecordToken,
        now: Instant,
        deadline: Instant,
        fit: Block,
    ) -> Result<Appended, NoMemory> {
        let headers: Vec<(&str, Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        let record = NewRecord {
            r,
            headers: &headers,
            token,
            deadline,
        };
        let queue = self.queues.or_default(&r.topic, partition);
        let id = queue.id;
        if queue.is_empty() {
            self.opened.push((r.topic.clone(), partition));
        }
        // A batch behind another cannot be sent before it: full, it may grow.
        let behind = queue.len() > 1;
        // Whether the open batch filled up (before this record, which may open the next).
        let mut filled = false;
        if let Some(last) = queue.back_mut() {
            let mut room = Room {
                pool: &mut self.pool,
                grow_caps: &self.grow_caps,
                grow_to: self.grow_to,
                batch_size: self.batch_size,
                ratio: self.ratio,
            };
            match room.extend(last, &record, now, behind) {
                Extended::Appended { bytes, filled } => {
                    if filled {
                        // The batch is ready now, not when linger.ms has passed.
                        self.reindex_id(id);
                    }
                    return Ok(Appended {
                        new_batch: false,
                        filled,
                        bytes,
                    });
                }
                Extended::Closed { filled: f } => filled = f,
            }
        }
        self.open_batch(id, partition, &record, now, fit, filled)
    }

    /// Opens a batch for `record` behind the others of queue `id` (whose last one, if any, is
    /// closed; `filled`: it just filled up).
    #[inline]
    fn open_batch(
        &mut self,
        id: u32,
        partition: i32,
        record: &NewRecord<'_>,
        now: Instant,
        fit: Block,
        filled: bool,
    ) -> Result<Appended, NoMemory> {
        let r = record.r;
        let queue = self.queues.by_id_mut(id);
        // The batch before, just closed, or the last one sent (see `Queue::hint`).
        let hint = (queue.back().map(|b| b.records.len()))
            .unwrap_or(0)
            .max(queue.hint as usize);
        let need = BATCH_HEADER_LEN + record_size(r);
        // `send` refuses records larger than the pool, so `need` always fits in it.
        let mut block = first_block(self.batch_size, need, hint).min(self.pool.total);
        // A spare block first: its bytes are already part of buffer.memory, and the batch
        // reserves its whole capacity (at most twice what it asked for).
        let spare = self.pool.take_spare(block);
        if let Some(buf) = &spare {
            block = buf.capacity();
        }
        let had_waiters = self.pool.waiters;
        if !self.pool.try_reserve(block) {
            let free = self.pool.free();
            if fit == Block::Whole || free < need {
                if let Some(buf) = spare {
                    self.pool.keep_spare(buf);
                }
                // The queue may be new and empty, or its last batch just filled up.
                self.reindex_id(id);
                return Err(NoMemory);
            }
            // try_reserve flagged a waiter, but nothing was refused: keep the flag as it was.
            self.pool.waiters = had_waiters;
            block = free.min(block);
            self.pool.take(block);
        }
        let b = match spare {
            Some(buf) if buf.capacity() <= block => {
                BatchBuilder::with_buffer(self.compression, buf)
            }
            _ => BatchBuilder::with_buffer(self.compression, shared_block(block)),
        };
        let mut b = b.with_level(self.level);
        let before = b.size();
        let (key, value) = (r.key.as_deref(), r.value.as_deref());
        b.append(r.timestamp, key, value, record.headers);
        let bytes = b.size() - before;
        self.next_id += 1;
        let deadline = record.deadline;
        let data = BatchData {
            id: self.next_id,
            tp: (r.topic.clone(), partition),
            builder: Some(b),
            sealed: None,
            records: {
                let mut v = Vec::with_capacity(hint.max(4));
                v.push(RecordMeta {
                    token: record.token,
                    timestamp: r.timestamp,
                });
                v
            },
            created: now,
            open_until: now + open_span(now, deadline, self.linger),
            deadline,
            attempts: 0,
            retry_at: None,
            reserved: block,
            full: need >= self.batch_size,
            closed: need >= self.batch_size,
            waited: false,
            base_sequence: -1,
            epoch: -1,
            sent: false,
            unresolved: false,
            last_error: None,
        };
        let batch = match self.spare_batches.pop() {
            Some(mut b) => {
                *b = data;
                b
            }
            None => Box::new(data),
        };
        self.queues.by_id_mut(id).push_back(batch);
        // The queue may have been empty, or its last batch (perhaps its first) filled up.
        self.reindex_id(id);
        Ok(Appended {
            new_batch: true,
            filled: filled || need >= self.batch_size,
            bytes,
        })
    }

    /// The sender found these partitions' first batches ready but their leader's connection
    /// unable to take them: once full, they may grow (see [`Accumulator::grow`]).
    pub fn waiting<T: AsRef<str>>(&mut self, partitions: &[(T, i32)]) {
        for (topic, partition) in partitions {
            if let Some(b) = self
                .queues
                .get_mut(topic.as_ref(), *partition)
                .and_then(|q| q.front_mut())
            {
                b.waited = true;
            }
        }
    }

    /// How much more memory a full batch of `reserved` bytes may take to keep growing, if any.
    ///
    /// A batch that reached `batch.size` is ready, but it may have to wait: while its
    /// partition's requests are at `max.in.flight.requests.per.connection` (the sender says so
    /// through [`Accumulator::waiting`]), or behind another batch of its partition. A batch
    /// the sender can take at once does not grow, so batches stay within `batch.size`, as
    /// Java's, unless they would wait anyway.
    ///
    /// A Produce request carries one batch per partition, so under load Java's 16 KB batches
    /// cap a partition at five 16 KB requests per round trip however much is queued behind
    /// them. Rather than queue more 16 KB batches behind it, the waiting batch grows by whole
    /// `batch.size` blocks up to `grow_to` (`max.request.size`, at most 1 MB, as librdkafka's
    /// batches), and is sent whole when the sender takes it. Each block comes from
    /// `buffer.memory` as a new batch's would, and only when a whole one is free: the pool
    /// bounds memory as before, a growing batch wastes at most part of one block, as any open
    /// batch does, and a send to another partition waits for a block just as it would behind
    /// 16 KB batches.
    fn grow(pool: &mut Pool, batch_size: usize, grow_to: usize, reserved: usize) -> Option<usize> {
        let more = batch_size.min(grow_to.saturating_sub(reserved));
        (more > 0 && pool.try_take(more)).then_some(more)
    }

    /// A broker refused a batch of `topic` of `bytes` as too large: its batches grow to half
    /// that at most from now on, so that later ones are not refused and split again.
    pub fn cap_growth(&mut self, topic: &str, bytes: usize) {
        let cap = (bytes / 2).max(self.batch_size);
        let entry = self.grow_caps.entry(topic.to_owned()).or_insert(cap);
        *entry = (*entry).min(cap);
    }

    /// Takes back a completed batch (its reservation already released): its block for reuse
    /// if nothing else (an adapter still writing it) holds it, and its box.
    pub fn recycle(&mut self, mut b: Batch) {
        if let Some(sealed) = b.sealed.take() {
            if let Ok(buf) = sealed.try_into_mut() {
                self.pool.keep_spare(buf);
            }
        }
        if self.spare_batches.len() < SPARE_BATCHES {
            b.records = Vec::new();
            b.last_error = None;
            self.spare_batches.push(b);
        }
    }

    /// Learns the compression ratio from a sealed batch.
    pub fn observe_ratio(&mut self, uncompressed: usize, compressed: usize) {
        if self.compression != Compression::None && uncompressed > 0 {
            let r = compressed as f64 / uncompressed as f64;
            // Quick to grow (overfull batches are worse), slow to shrink, as Java does.
            self.ratio = if r > self.ratio {
                r
            } else {
                self.ratio * 0.95 + r * 0.05
            };
        }
    }

    fn is_ready(&self, b: &Batch, now: Instant, force: bool) -> bool {
        match b.retry_at {
            Some(t) => t <= now,
            None => force || b.full || self.pool.waiters || b.created + self.linger <= now,
        }
    }

    /// Until when a partition's first batch, ready because its `linger.ms` has passed, may be
    /// held back while a request is in flight on its leader's connection (see
    /// `Producer::send_round`): twice `linger.ms` from its opening. None for a batch that may
    /// not wait: a full one, a retry, or any while a send waits for memory.
    pub fn hold_until(&self, topic: &(impl TopicKey + ?Sized), partition: i32) -> Option<Instant> {
        if self.pool.waiters {
            return None;
        }
        let b = self.queues.get(topic, partition)?.front()?;
        (b.retry_at.is_none() && !b.full).then(|| b.created + self.linger * 2)
    }

    /// The partitions with queued batches.
    pub fn partitions(&self) -> impl Iterator<Item = (&str, i32)> + '_ {
        self.queues
            .iter()
            .filter(|(_, _, q)| !q.is_empty())
            .map(|(t, p, _)| (t.as_str(), p))
    }

    /// The partitions whose first batch may be sent now, each with what `admit` said of that
    /// batch (`None`: it may not go yet), and the next instant an admitted one becomes ready.
    /// `force` is set while a flush or close is under way. The sender's `admit` looks up the
    /// partition's leader, which it then needs to send: answering with it saves a second
    /// lookup per batch.
    pub fn ready<K>(
        &self,
        now: Instant,
        force: bool,
        admit: impl Fn(&BatchData) -> Option<K>,
    ) -> (Vec<Ready<K>>, Option<Instant>) {
        if force || self.pool.waiters {
            // Every first batch may be ready, whatever its key says.
            return self.ready_scan(now, force, admit);
        }
        // The index: those due already, then in key order those due now, then the first one
        // that is not blocked.
        let mut ready = Vec::new();
        let queues = &self.queues;
        let now_keys = (self.fronts.ready_now.iter()).map(|&(id, gen)| (Instant::ZERO, id, gen));
        for (at, id, gen) in now_keys.chain(self.fronts.ready.iter().copied()) {
            let (topic, partition, q) = queues.by_id(id);
            if q.ready_generation != gen {
                continue;
            }
            let Some(b) = q.front() else {
                continue;
            };
            let Some(k) = admit(b) else {
                continue;
            };
            if at > now {
                sort_ready(&mut ready);
                return (ready, Some(at));
            }
            // The index's shared name, not the batch's own: a clone is a count, not a copy.
            ready.push(((topic.clone(), partition), k));
        }
        sort_ready(&mut ready);
        (ready, None)
    }

    /// The next instant a first batch becomes ready, after `now` (the linger half of
    /// [`Accumulator::ready`], none blocked).
    pub fn next_ready(&self, now: Instant, force: bool) -> Option<Instant> {
        if force || self.pool.waiters {
            return self.ready_scan(now, force, |_| Some(())).1;
        }
        // Those due already (in `ready_now`, or at the front) are not asked for. Usually
        // the first entry answers (the sender just took what was due).
        let ready = &self.fronts.ready;
        match ready.front() {
            None => return None,
            Some(&(at, id, gen)) if at > now && self.queues.is_ready_current(id, gen) => {
                return Some(at)
            }
            Some(_) => {}
        }
        let after = ready.partition_point(|(at, _, _)| *at <= now);
        (ready.range(after..))
            .find(|(_, id, gen)| self.queues.is_ready_current(*id, *gen))
            .map(|(at, _, _)| *at)
    }

    /// Moves the ready times that came by `now` out of the sorted index (see [`Fronts`]), and
    /// drops stale entries from the list of those due. Called before each [`Accumulator::ready`]
    /// of the sender (which borrows the accumulator shared, beside its other state).
    pub fn promote(&mut self, now: Instant) {
        let queues = &self.queues;
        let fronts = &mut self.fronts;
        if !fronts.ready_now.is_empty() {
            fronts
                .ready_now
                .retain(|(id, gen)| queues.is_ready_current(*id, *gen));
        }
        while let Some(&(at, id, gen)) = fronts.ready.front() {
            if at > now {
                break;
            }
            fronts.ready.pop_front();
            if queues.is_ready_current(id, gen) {
                fronts.ready_now.push((id, gen));
            }
        }
    }

    /// The partitions whose queue opened since the last call (some may be empty again),
    /// drained in place: the list keeps its room, which at 10,000 partitions it needs again at
    /// every step (taking it had regrown it from nothing, by doubling, each time).
    pub fn drain_opened(&mut self) -> std::vec::Drain<'_, (Topic, i32)> {
        self.opened.drain(..)
    }

    /// [`Accumulator::ready`] by visiting every queue.
    fn ready_scan<K>(
        &self,
        now: Instant,
        force: bool,
        admit: impl Fn(&BatchData) -> Option<K>,
    ) -> (Vec<Ready<K>>, Option<Instant>) {
        let mut ready = Vec::new();
        let mut next: Option<Instant> = None;
        for (topic, partition, q) in self.queues.iter() {
            let Some(b) = q.front() else { continue };
            let Some(k) = admit(b) else {
                continue;
            };
            if self.is_ready(b, now, force) {
                ready.push(((topic.clone(), partition), k));
            } else {
                let at = b.retry_at.unwrap_or(b.created + self.linger);
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        (ready, next)
    }

    /// Takes ready first batches of partitions led by `node`, up to `max_size` bytes in all
    /// (one batch always goes, so an oversized batch is not stuck forever).
    pub fn drain<T: TopicKey>(&mut self, partitions: &[(T, i32)], max_size: usize) -> Vec<Batch> {
        let mut out = Vec::with_capacity(partitions.len());
        let mut size = 0;
        for (topic, partition) in partitions {
            let Some(q) = self.queues.get_mut(topic, *partition) else {
                continue;
            };
            let Some(first) = q.front() else { continue };
            if !out.is_empty() && size + first.size() > max_size {
                break;
            }
            let Some(b) = q.pop_front() else { continue };
            q.hint = u32::try_from(b.records.len()).unwrap_or(u32::MAX);
            let id = q.id;
            size += b.size();
            out.push(b);
            self.reindex_id(id);
        }
        out
    }

    /// Puts a batch back for a retry, ahead of newer batches: in send order, which is the
    /// order of the records' tokens (a partition's records are queued as they were sent). So a
    /// queue's deadlines never decrease, which `expire` relies on, and with idempotence its
    /// sequences rise. Not by sequence: after an epoch bump the queued batches wait to be
    /// renumbered (-1) while one already renumbered comes back (found by the simulation with
    /// brokers that forget producer ids: a batch refused at sequence 0 went behind the
    /// next one, and the log held them out of send order).
    pub fn reenqueue(&mut self, b: Batch) {
        let topic = Topic::from(&b.tp.0);
        let q = self.queues.or_default(&topic, b.tp.1);
        if q.is_empty() {
            self.opened.push((topic, b.tp.1));
        }
        let first = b.records.first().map(|r| r.token);
        let at = q
            .iter()
            .position(|o| o.sealed.is_none() || o.records.first().map(|r| r.token) > first)
            .unwrap_or(q.len());
        let (topic, partition) = (b.tp.0.clone(), b.tp.1);
        q.insert(at, b);
        self.reindex(&topic, partition);
    }

    /// Removes queued batches whose delivery deadline has passed. A partition's batches are
    /// queued in creation order, so their deadlines never decrease (a retry goes back to the
    /// front, older still): only fronts need looking at, and a step costs nothing per batch.
    pub fn expire(&mut self, now: Instant) -> Vec<Batch> {
        let mut due: Vec<(&Topic, i32, u32)> = Vec::new();
        while let Some(&(at, id, gen)) = self.fronts.due.front() {
            if at > now {
                break;
            }
            self.fronts.due.pop_front();
            if self.queues.is_current(id, gen) {
                let (t, p, _) = self.queues.by_id(id);
                due.push((t, p, id));
            }
        }
        // Failed in (topic, partition) order, as the queues are.
        due.sort_unstable();
        let due: Vec<u32> = due.into_iter().map(|(_, _, id)| id).collect();
        let mut out = Vec::new();
        for id in due {
            let q = self.queues.by_id_mut(id);
            while q.front().is_some_and(|b| b.deadline <= now) {
                out.extend(q.pop_front());
            }
            // Also when nothing expired: the key was early (see `Fronts`). Its entry left the
            // heap above, so it goes back even if its keys are unchanged.
            self.reindex_keys(id, true);
        }
        out
    }

    /// Removes every queued batch (close, drop).
    pub fn take_all(&mut self) -> Vec<Batch> {
        self.fronts.ready.clear();
        self.fronts.ready_now.clear();
        self.fronts.due.clear();
        self.queues.take_all()
    }

    /// The earliest delivery deadline of a queued batch, or an instant before it (see
    /// [`Fronts`]).
    pub fn next_deadline(&self) -> Option<Instant> {
        // The fronts suffice: see `expire`. The top is never stale (see `Fronts`).
        self.fronts.due.front().map(|(at, _, _)| *at)
    }

    /// Keeps a partition's index keys (see [`Fronts`]) those of its first batch after its
    /// queue changed, and counts the queues that hold batches (see [`Queues`]). Every change
    /// to which batch is first, or to its retry time or fullness, is followed by this.
    fn reindex(&mut self, topic: &(impl TopicKey + ?Sized), partition: i32) {
        if let Some(q) = self.queues.get(topic, partition) {
            self.reindex_id(q.id);
        }
    }

    /// [`Accumulator::reindex`] of the queue named `id`.
    fn reindex_id(&mut self, id: u32) {
        self.reindex_keys(id, false);
    }

    /// [`Accumulator::reindex_id`]; `requeue_due`: the queue's deadline entry was taken off
    /// the heap, so a new one goes in even if its keys are unchanged.
    fn reindex_keys(&mut self, id: u32, requeue_due: bool) {
        let place = &self.queues.places[id as usize];
        let (at, partition) = (place.at, place.partition as usize);
        let parts = &mut self.queues.topics[at];
        let q = &mut parts.partitions[partition];
        let keys = q.front().map(|b| (ready_at(b, self.linger), b.deadline));
        if keys == q.keys && !requeue_due {
            return;
        }
        let new_ready = keys.map(|k| k.0) != q.keys.map(|k| k.0);
        if new_ready {
            // Its entry among the ready times, if any, is stale from now on.
            q.ready_generation = q.ready_generation.wrapping_add(1);
        }
        let new_due = requeue_due || keys.map(|k| k.1) != q.keys.map(|k| k.1);
        if new_due {
            // The queue's entry in the heap, if any, is stale from now on.
            q.generation = q.generation.wrapping_add(1);
        }
        let was_indexed = q.keys.is_some();
        q.keys = keys;
        match keys {
            Some((ready, due)) => {
                if new_ready {
                    // Usually the latest (a new batch), else usually the earliest (a next
                    // batch, due already).
                    insert_sorted(&mut self.fronts.ready, (ready, id, q.ready_generation));
                }
                if new_due {
                    // Usually the latest (a new batch).
                    insert_sorted(&mut self.fronts.due, (due, id, q.generation));
                }
                if !was_indexed {
                    parts.nonempty += 1;
                    self.queues.nonempty += 1;
                }
            }
            None if was_indexed => {
                // The entry stays (see `Queues`), and its room: four boxed batches' pointers,
                // 320 KB over 10,000 partitions. (Room for four unboxed batches was 9 MB there,
                // and was freed: peak RSS on one Kafka node 66 MB kept, 52 MB freed.)
                parts.nonempty -= 1;
                self.queues.nonempty -= 1;
            }
            None => {}
        }
        if new_due {
            self.tidy_due();
        }
        if new_ready {
            self.tidy_ready();
        }
    }

    /// Drops stale ready entries (see [`Fronts`]) once they outnumber the live ones.
    fn tidy_ready(&mut self) {
        let queues = &self.queues;
        let fronts = &mut self.fronts;
        if fronts.ready.len() + fronts.ready_now.len() > 2 * queues.nonempty + READY_SLACK {
            (fronts.ready).retain(|(_, id, gen)| queues.is_ready_current(*id, *gen));
            (fronts.ready_now).retain(|(id, gen)| queues.is_ready_current(*id, *gen));
        }
    }

    /// Drops stale deadline entries (see [`Fronts`]) from the top of the heap, so that it
    /// names a live deadline, and all of them once they outnumber the live ones (each entry
    /// is looked at a bounded number of times, and the heap stays as large as the queues).
    fn tidy_due(&mut self) {
        let queues = &self.queues;
        if self.fronts.due.len() > 2 * queues.nonempty + DUE_SLACK {
            (self.fronts.due).retain(|(_, id, gen)| queues.is_current(*id, *gen));
        }
        while let Some(&(_, id, gen)) = self.fronts.due.front() {
            if queues.is_current(id, gen) {
                break;
            }
            self.fronts.due.pop_front();
        }
    }

    /// Drops the queues of topics that hold no batch and that `wanted` no longer names (the
    /// producer's metadata let them go: idle for `metadata.max.idle.ms`, or failed), so that a
    /// producer that wrote to many topics over its life keeps queues only for its current ones.
    pub fn forget_idle_topics(&mut self, wanted: impl Fn(&str) -> bool) {
        self.queues.retain(wanted);
        // Stale entries may name the ids just freed: the heap is made again from the live
        // queues' keys (this happens when metadata lets a topic go, not per batch).
        let mut due: Vec<_> = (self.queues.iter())
            .filter_map(|(_, _, q)| Some((q.keys?.1, q.id, q.generation)))
            .collect();
        due.sort_unstable();
        self.fronts.due = due.into();
        let mut ready: Vec<_> = (self.queues.iter())
            .filter_map(|(_, _, q)| Some((q.keys?.0, q.id, q.ready_generation)))
            .collect();
        ready.sort_unstable();
        self.fronts.ready = ready.into();
        self.fronts.ready_now.clear();
    }

    /// Batches waiting for each partition.
    pub fn queue_len(&self, topic: &(impl TopicKey + ?Sized), partition: i32) -> usize {
        self.queues.get(topic, partition).map_or(0, |q| q.len())
    }

    /// Splits a rejected (MESSAGE_TOO_LARGE) batch of several records into two halves, each
    /// keeping its records' tokens, order and sequence range. Returns the batch unchanged
    /// (`Err`) if it cannot be split. Halving always makes progress, even when the broker's
    /// limit is below `batch.size`.
    pub fn split(&mut self, b: Batch) -> Result<[Batch; 2], Batch> {
        let Some(sealed) = b.sealed.clone() else {
            return Err(b);
        };
        if b.records.len() < 2 {
            return Err(b);
        }
        let mut decoded = Vec::with_capacity(b.records.len());
        for batch in RecordBatches::new(sealed) {
            let Ok(records) = batch.and_then(|batch| batch.records()) else {
                return Err(b);
            };
            for r in records {
                let Ok(r) = r else { return Err(b) };
                decoded.push(r);
            }
        }
        if decoded.len() != b.records.len() {
            return Err(b);
        }
        let mid = decoded.len() / 2;
        let mut halves = Vec::with_capacity(2);
        for (i, range) in [(0, 0..mid), (1, mid..decoded.len())] {
            let mut builder =
                BatchBuilder::new(self.compression, b.size() / 2 + 64).with_level(self.level);
            for r in &decoded[range.clone()] {
                let headers: Vec<(String, Option<Bytes>)> = r
                    .headers
                    .clone()
                    .map(|h| (h.key_str().to_owned(), h.value))
                    .collect();
                let headers: Vec<(&str, Option<&[u8]>)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect();
                builder.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
            }
            self.next_id += 1;
            halves.push(Box::new(BatchData {
                id: self.next_id,
                tp: b.tp.clone(),
                builder: Some(builder),
                sealed: None,
                records: b.records[range.clone()].to_vec(),
                created: b.created,
                open_until: b.open_until,
                deadline: b.deadline,
                attempts: b.attempts,
                retry_at: None,
                // The memory stays with the first half until it completes.
                reserved: if i == 0 { b.reserved } else { 0 },
                full: true,
                closed: true,
                waited: false,
                base_sequence: if b.base_sequence >= 0 {
                    super::idempotence::seq_add(b.base_sequence, range.start)
                } else {
                    -1
                },
                epoch: b.epoch,
                sent: b.sent,
                unresolved: b.unresolved,
                last_error: b.last_error.clone(),
            }));
        }
        let second = halves.pop().expect("two halves");
        let first = halves.pop().expect("two halves");
        Ok([first, second])
    }

    /// Forgets the sequences of a partition's queued batches, so they are renumbered from the
    /// partition's new sequence start when next drained (after an epoch bump).
    pub fn reset_sequences(&mut self, tp: &TopicPartition) {
        for b in self
            .queues
            .get_mut(&tp.0, tp.1)
            .into_iter()
            .flat_map(|q| q.iter_mut())
        {
            b.base_sequence = -1;
        }
    }

    /// Takes a partition's queued batches that hold a sequence and may have been written
    /// ([`Batch::unresolved`]): they cannot be renumbered.
    pub fn take_unresolved(&mut self, tp: &TopicPartition) -> Vec<Batch> {
        let Some(q) = self.queues.get_mut(&tp.0, tp.1) else {
            return Vec::new();
        };
        let (out, keep): (VecDeque<Batch>, VecDeque<Batch>) = std::mem::take(&mut q.batches)
            .into_iter()
            .partition(|b| b.unresolved && b.base_sequence >= 0);
        q.batches = keep;
        self.reindex(&tp.0, tp.1);
        out.into()
    }

    /// Takes every queued batch that was never sent (a retry stays: its fate must be
    /// settled first).
    pub fn take_never_sent(&mut self) -> Vec<Batch> {
        let mut out = Vec::new();
        for q in self.queues.values_mut() {
            let (never, keep): (VecDeque<Batch>, VecDeque<Batch>) = std::mem::take(&mut q.batches)
                .into_iter()
                .partition(|b| b.sealed.is_none());
            q.batches = keep;
            out.extend(never);
        }
        let all: Vec<(Topic, i32)> = (self.queues.iter())
            .map(|(t, p, _)| (t.clone(), p))
            .collect();
        for (topic, partition) in all {
            self.reindex(&topic, partition);
        }
        out
    }

    /// Whether a queued batch of the partition holds a sequence of `epoch` before `seq`.
    pub fn has_earlier(&self, tp: &(impl TopicKey, i32), epoch: i16, seq: i32) -> bool {
        self.queues.get(&tp.0, tp.1).is_some_and(|q| {
            q.iter().any(|b| {
                b.base_sequence >= 0
                    && b.epoch == epoch
                    && super::idempotence::seq_before(b.base_sequence, seq)
            })
        })
    }

    /// Whether the partition's first batch is a retry.
    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }
}

#[cfg(test)]
mod tests;
