//! The records sent before their topic's metadata came: held in send order (each with its
//! memory taken from `buffer.memory`) until the metadata says where they go, and counted by
//! topic so that a step asks "may any move now?" without visiting each record.

use std::collections::{BTreeMap, VecDeque};

use super::{ProducerRecord, RecordToken};
use crate::time::Instant;

/// A record waiting for its topic's metadata.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) token: RecordToken,
    pub(super) record: ProducerRecord,
    /// When it fails for want of metadata (`max.block.ms` after its send).
    pub(super) deadline: Instant,
    /// Its size, held in the memory pool.
    pub(super) size: usize,
}

/// The waiting records in send order, and how many each topic has.
#[derive(Debug, Default)]
pub(super) struct PendingRecords {
    /// In send order, so deadlines grow from front to back.
    pub(super) queue: VecDeque<Pending>,
    /// How many records of `queue` each topic has (topics with none are absent).
    topics: BTreeMap<String, usize>,
}

impl PendingRecords {
    /// Queues a record at the back; whether it is the first waiting for its topic.
    pub(super) fn push_back(&mut self, p: Pending) -> bool {
        let first = self.count(&p.record.topic);
        self.queue.push_back(p);
        first
    }

    /// Puts a record taken out of `queue` (and [`PendingRecords::forget`]) back at the front.
    pub(super) fn put_back(&mut self, p: Pending) {
        self.count(&p.record.topic);
        self.queue.push_front(p);
    }

    /// Takes the front record out, topic count and all.
    fn take_front(&mut self) -> Option<Pending> {
        let p = self.queue.pop_front()?;
        self.forget(&p.record.topic);
        Some(p)
    }

    /// The front record's deadline: the earliest.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|p| p.deadline)
    }

    /// The front record, once its deadline passed.
    pub(super) fn take_expired(&mut self, now: Instant) -> Option<Pending> {
        if self.queue.front()?.deadline > now {
            return None;
        }
        self.take_front()
    }

    /// Whether a record waits for a topic `known` says is known now.
    pub(super) fn any_topic(&self, mut known: impl FnMut(&str) -> bool) -> bool {
        self.topics.keys().any(|t| known(t))
    }

    /// Takes out every record of `topic`.
    pub(super) fn take_topic(&mut self, topic: &str) -> Vec<Pending> {
        let (gone, keep): (Vec<Pending>, Vec<Pending>) =
            self.queue.drain(..).partition(|p| p.record.topic == topic);
        self.queue = keep.into();
        self.topics.remove(topic);
        gone
    }

    /// Takes out every record.
    pub(super) fn take_all(&mut self) -> Vec<Pending> {
        self.topics.clear();
        self.queue.drain(..).collect()
    }

    /// Counts one more record waiting for `topic`; true if it is the first.
    fn count(&mut self, topic: &str) -> bool {
        match self.topics.get_mut(topic) {
            Some(n) => {
                *n += 1;
                false
            }
            None => {
                self.topics.insert(topic.to_owned(), 1);
                true
            }
        }
    }

    /// Counts one record fewer waiting for `topic` (one taken out of `queue`).
    pub(super) fn forget(&mut self, topic: &str) {
        if let Some(n) = self.topics.get_mut(topic) {
            *n -= 1;
            if *n == 0 {
                self.topics.remove(topic);
            }
        }
        // A burst sent before metadata came (every record of a fast producer's first
        // moments, 94,000 of them in one run) grew the queue, which kept that room for good
        // once placed: 19 MB beside a 32 MB buffer.memory.
        if self.queue.is_empty() && self.queue.capacity() > 64 {
            self.queue = VecDeque::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::ProducerRecord;

    /// A burst that waited for metadata leaves no room behind once placed.
    #[test]
    fn an_emptied_queue_lets_its_room_go() {
        let mut pending = PendingRecords::default();
        for i in 0..10_000 {
            pending.push_back(Pending {
                token: RecordToken(i),
                record: ProducerRecord::new("t", "v", 0),
                deadline: Instant::ZERO,
                size: 100,
            });
        }
        assert!(pending.queue.capacity() >= 10_000);
        while pending.take_expired(Instant::ZERO).is_some() {}
        assert_eq!(pending.queue.capacity(), 0, "the burst's room went");
        assert!(!pending.any_topic(|_| true));
    }
}
