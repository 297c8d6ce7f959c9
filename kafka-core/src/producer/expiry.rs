//! Endings: batches and waiting records past their deadlines, records placed once their
//! topic's metadata arrives, and everything failed at a fatal error or resolved at close.

use super::*;

impl Producer {
    /// A delivery timeout naming the later of the batch's last error and the last connection
    /// problem.
    fn timeout_error(&self, b: &Batch) -> DeliveryError {
        let batch = b.last_error.as_deref().map(|(e, at)| (e.as_str(), *at));
        let net = self.net.last_problem_seen();
        let last = match (batch, net) {
            (Some((e, at)), Some((p, seen))) => Some(if seen > at { p } else { e }),
            (b, n) => b.or(n).map(|(e, _)| e),
        };
        DeliveryError::DeliveryTimeout {
            last: last.map(str::to_owned),
        }
    }

    pub(super) fn expire(&mut self, now: Instant) {
        for b in self.acc.expire(now) {
            if b.base_sequence >= 0 {
                // A retry that expired in the queue leaves a hole in its partition's
                // sequences, whether or not an earlier attempt was written: later batches
                // would be out of order for good, so the partition starts over under a new
                // epoch (KIP-360; found on Apache Kafka with its broker down past the
                // delivery timeout).
                self.request_bump(&b.tp);
            }
            let error = self.timeout_error(&b);
            self.fail_batch(b, error, false);
        }
        for id in self.in_flight.late(now) {
            // Its response, if it comes, is ignored.
            let b = self.in_flight.take(id).expect("listed above");
            // Its sequence's fate is unknown: the partition must start over (KIP-360).
            self.request_bump(&b.tp);
            let error = self.timeout_error(&b);
            self.fail_batch(b, error, true);
        }
        while let Some(p) = self.pending.take_expired(now) {
            let last =
                (self.net.last_problem().map(str::to_owned)).or_else(|| self.net.waiting_on(now));
            let error = DeliveryError::MetadataTimeout {
                topic: p.record.topic.to_string(),
                last,
            };
            self.fail_pending(p, error);
        }
    }

    /// Fails a record that never left the pending queue: it was never sent.
    fn fail_pending(&mut self, p: Pending, error: DeliveryError) {
        self.free_pending(p.size);
        self.metrics.failed(&p.record.topic, 1, self.now);
        self.fail_transaction(&error, None, false);
        let outcome = Outcome::Failed {
            error,
            certainty: Certainty::NotSent,
        };
        self.resolve(p.token, outcome);
    }

    fn free_pending(&mut self, size: usize) {
        if self.acc.pool.release(size) {
            self.events.push_back(ProducerEvent::MemoryAvailable);
        }
    }

    /// Moves records whose topic metadata arrived into batches, in send order, until memory
    /// runs short. Cheap when nothing can move: sends for a topic whose metadata is on its way
    /// each step the producer, and a full scan per send would be quadratic.
    pub(super) fn place_pending(&mut self, now: Instant) {
        if !self.pending.any_topic(|t| self.metadata.topic(t).is_some()) {
            return;
        }
        let mut skipped = VecDeque::new();
        // How many records at the front of `pending` were looked at ahead of their turn: those
        // of known topics have their memory back in the pool already.
        let mut ahead: usize = 0;
        // Records skipped or placed leave `queue` directly: a skipped one's topic still counts.
        while let Some(p) = self.pending.queue.pop_front() {
            let released = ahead > 0;
            ahead = ahead.saturating_sub(1);
            if self.metadata.topic(&p.record.topic).is_none() {
                skipped.push_back(p);
                continue;
            }
            if !released {
                self.acc.pool.used -= p.size.min(self.acc.pool.used);
            }
            // Memory comes back a batch's worth ahead, so that these records share batches.
            // Freed one at a time, each would find only its own size free (a burst sent before
            // the metadata fills the pool) and open a one-record batch; and those small blocks
            // would last, each taken again at its size when freed.
            while self.acc.pool.free() < self.cfg.batch_size && ahead < self.pending.queue.len() {
                let q = &self.pending.queue[ahead];
                if self.metadata.topic(&q.record.topic).is_some() {
                    self.acc.pool.used -= q.size.min(self.acc.pool.used);
                }
                ahead += 1;
            }
            let deadline = now + self.cfg.delivery_timeout;
            // Forgotten first: the append takes the record (and its topic) by value.
            self.pending.forget(&p.record.topic);
            let Pending {
                token,
                record,
                deadline: max_block,
                size,
            } = p;
            if let Err((_, record)) = self.append(token, record, deadline, Block::AtLeastRecord) {
                // Batches took more than these records' sizes (the unused ends of full
                // batches): this record and those freed ahead hold their memory again, and
                // wait for more to free. Keep the waiters flag as it is: a user send may still
                // be waiting for memory, and only a release should clear it (with a
                // MemoryAvailable event). Later records wait too, so none overtakes this one.
                let held: usize = (self.pending.queue.iter().take(ahead))
                    .filter(|q| self.metadata.topic(&q.record.topic).is_some())
                    .map(|q| q.size)
                    .sum();
                self.acc.pool.take(size + held);
                self.pending.put_back(Pending {
                    token,
                    record,
                    deadline: max_block,
                    size,
                });
                break;
            }
        }
        while let Some(p) = skipped.pop_back() {
            self.pending.queue.push_front(p);
        }
    }

    pub(super) fn fail_topic(&mut self, topic: &str, error: DeliveryError) {
        for p in self.pending.take_topic(topic) {
            self.fail_pending(p, error.clone());
        }
    }

    /// Fails every record not in flight: those waiting for metadata, and batches waiting for
    /// a connection (each as sent or not, as its history says).
    pub(super) fn fail_unsent(&mut self, error: DeliveryError) {
        for b in self.acc.take_all() {
            if b.base_sequence >= 0 {
                // Its sequences leave a hole: the partition starts over (KIP-360).
                self.request_bump(&b.tp);
            }
            self.fail_batch(b, error.clone(), false);
        }
        for p in self.pending.take_all() {
            self.fail_pending(p, error.clone());
        }
    }

    pub(super) fn fail_everything(&mut self) {
        self.fail_everything_with(DeliveryError::Closed, Certainty::NotSent);
    }

    pub(super) fn fail_everything_with(&mut self, error: DeliveryError, certainty: Certainty) {
        for b in self.acc.take_all() {
            let unknown = certainty == Certainty::PossiblySent;
            self.fail_batch(b, error.clone(), unknown);
        }
        for id in self.in_flight.ids() {
            let b = self.in_flight.take(id).expect("listed");
            self.fail_batch(b, error.clone(), true);
        }
        for p in self.pending.take_all() {
            self.fail_pending(p, error.clone());
        }
    }

    pub(super) fn finish_flushes_and_close(&mut self, now: Instant) {
        let lowest = self.outstanding.first().unwrap_or(u64::MAX);
        let (done, waiting): (Vec<_>, Vec<_>) = self
            .flushes
            .drain(..)
            .partition(|(_, upto)| lowest >= *upto);
        self.flushes = waiting;
        for (token, _) in done {
            self.events.push_back(ProducerEvent::FlushComplete(token));
        }
        let Some(deadline) = self.closing else { return };
        if self.closed {
            return;
        }
        if deadline <= now {
            self.fail_everything();
        }
        if self.outstanding.is_empty() {
            self.closed = true;
            if let Some(txn) = &mut self.txn {
                txn.close();
            }
            self.take_transaction_results();
            self.events.push_back(ProducerEvent::Closed);
        }
    }
}
