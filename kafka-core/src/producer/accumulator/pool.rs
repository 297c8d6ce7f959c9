//! `buffer.memory`: the bytes batches and waiting records hold, and the `batch.size` blocks
//! kept for reuse.

use bytes::BytesMut;

/// `buffer.memory` accounting. As in Java's buffer pool, recycled `batch.size` blocks kept
/// for reuse (`spare`) are part of `buffer.memory`: what batches hold plus what is kept never
/// exceeds `total`, and spare blocks are let go when a reservation needs their room.
#[derive(Debug)]
pub(crate) struct Pool {
    pub total: usize,
    /// Bytes reserved by batches and by records waiting for metadata.
    pub used: usize,
    /// A send was refused for lack of memory; tell the user when some frees.
    pub waiters: bool,
    /// The size of a spare block (`batch.size`).
    block: usize,
    /// Recycled `batch.size` blocks (exact-size blocks for larger records are not kept).
    pub(super) spare: Vec<BytesMut>,
}

impl Pool {
    pub(super) fn new(total: usize, block: usize) -> Self {
        Pool {
            total,
            used: 0,
            waiters: false,
            block,
            spare: Vec::new(),
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

    /// Takes `n` bytes the caller knows are free, letting spare blocks go to make room.
    #[inline]
    pub fn take(&mut self, n: usize) {
        self.used += n;
        while self.used + self.spare.len() * self.block > self.total && self.spare.pop().is_some() {
        }
    }

    /// A spare `batch.size` block, if one is kept: its bytes move from the spare to the
    /// caller's reservation, which must be taken next.
    #[inline]
    pub(super) fn take_spare(&mut self) -> Option<BytesMut> {
        self.spare.pop()
    }

    /// Keeps a completed batch's block for reuse if its room is free.
    #[inline]
    pub(super) fn keep_spare(&mut self, buf: BytesMut) {
        if self.used + (self.spare.len() + 1) * self.block <= self.total {
            self.spare.push(buf);
        }
    }

    /// Frees `n` bytes; true if someone was waiting for memory.
    #[inline]
    pub fn release(&mut self, n: usize) -> bool {
        self.used -= n.min(self.used);
        std::mem::take(&mut self.waiters)
    }
}
