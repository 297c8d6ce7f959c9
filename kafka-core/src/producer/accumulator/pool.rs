//! `buffer.memory`: the bytes batches and waiting records hold, and the blocks of completed
//! batches kept for reuse.

use bytes::BytesMut;

/// Size classes of spare blocks: class `k` holds blocks of `2^k..2^(k+1)` bytes.
const CLASSES: usize = usize::BITS as usize;

/// `buffer.memory` accounting. As in Java's buffer pool, the blocks of completed batches kept
/// for reuse (`spare`) are part of `buffer.memory`: what batches hold plus what is kept never
/// exceeds `total`, and spare blocks are let go when a reservation needs their room.
///
/// Java keeps only `batch.size` blocks. Here a new batch's block is sized from its
/// partition's last batch (see `first_block`), mostly 1 KiB when keys spread records over
/// thousands of partitions, and blocks up to `batch.size` are kept, by size class: at 10,000
/// partitions, allocating and freeing each batch's block was a sixth of the producer's
/// instructions (malloc's slow path for kilobyte blocks, `scripts/instructions`).
#[derive(Debug)]
pub(crate) struct Pool {
    pub total: usize,
    /// Bytes reserved by batches and by records waiting for metadata.
    pub used: usize,
    /// A send was refused for lack of memory; tell the user when some frees.
    pub waiters: bool,
    /// Spare blocks by size class (see [`CLASSES`]).
    pub(super) spare: Vec<Vec<BytesMut>>,
    /// The spare blocks' capacity, in all.
    pub(super) spare_bytes: usize,
    /// The largest block kept (`batch.size`): a batch grown past it while it waited (up to
    /// 1 MB), or one sized for a record larger than it, is let go, as no usual batch asks for
    /// such a block. Kept, grown blocks held a single-partition producer's RSS at 52 MB
    /// instead of 33 (`scripts/bench scale`).
    max_block: usize,
}

impl Pool {
    pub(super) fn new(total: usize, max_block: usize) -> Self {
        Pool {
            total,
            used: 0,
            waiters: false,
            spare: Vec::new(),
            spare_bytes: 0,
            max_block,
        }
    }

    /// Bytes a reservation may still take (spare blocks are let go for it).
    #[inline]
    pub fn free(&self) -> usize {
        self.total.saturating_sub(self.used)
    }

    /// Takes `n` bytes if they are free; a refused send then waits (see `waiters`).
    #[inline]
    pub(super) fn try_reserve(&mut self, n: usize) -> bool {
        let taken = self.try_take(n);
        self.waiters |= !taken;
        taken
    }

    /// Takes `n` bytes if they are free, without making anyone wait when they are not (a
    /// batch that would only have grown).
    #[inline]
    pub(super) fn try_take(&mut self, n: usize) -> bool {
        let free = self.used + n <= self.total;
        if free {
            self.take(n);
        }
        free
    }

    /// Takes `n` bytes the caller knows are free, letting spare blocks go to make room
    /// (the largest first).
    #[inline]
    pub fn take(&mut self, n: usize) {
        self.used += n;
        while self.used + self.spare_bytes > self.total {
            let Some(class) = self.spare.iter().rposition(|c| !c.is_empty()) else {
                break;
            };
            let buf = self.spare[class].pop().expect("a non-empty class");
            self.spare_bytes -= buf.capacity();
        }
    }

    /// A spare block of `want` to `2 * want` bytes, if one is kept: its bytes move from the
    /// spare to the caller's reservation, which must take its whole capacity next.
    #[inline]
    pub(super) fn take_spare(&mut self, want: usize) -> Option<BytesMut> {
        let class = class_of(want.max(1));
        let fits = |b: &BytesMut| (want..=want.saturating_mul(2)).contains(&b.capacity());
        let at = [class, class + 1]
            .into_iter()
            .find(|c| self.spare.get(*c).and_then(|s| s.last()).is_some_and(fits))?;
        let buf = self.spare[at].pop()?;
        self.spare_bytes -= buf.capacity();
        Some(buf)
    }

    /// Keeps a completed batch's block for reuse if its room is free.
    #[inline]
    pub(super) fn keep_spare(&mut self, mut buf: BytesMut) {
        let cap = buf.capacity();
        if cap == 0 || cap > self.max_block || self.used + self.spare_bytes + cap > self.total {
            return;
        }
        buf.clear();
        let class = class_of(cap);
        if self.spare.len() <= class {
            self.spare.resize_with(CLASSES, Vec::new);
        }
        self.spare[class].push(buf);
        self.spare_bytes += cap;
    }

    /// Frees `n` bytes; true if someone was waiting for memory.
    #[inline]
    pub fn release(&mut self, n: usize) -> bool {
        self.used -= n.min(self.used);
        std::mem::take(&mut self.waiters)
    }
}

/// The size class of a block of `n > 0` bytes.
#[inline]
fn class_of(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}
