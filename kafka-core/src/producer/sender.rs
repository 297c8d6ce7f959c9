//! The sender: each step handles what the network reported, expires what is overdue, refreshes
//! metadata, gets a producer id, and writes the ready batches into Produce requests, one
//! request per leader connection at a time up to its in-flight limit.

use super::*;
use bytes::Bytes;

use super::accumulator::Ready;

impl Producer {
    /// The main step: handle what the network reported, then expire, refresh and send.
    pub(super) fn drive(&mut self, now: Instant) {
        self.attention = true;
        self.now = self.now.max(now);
        let now = self.now;
        while let Some(e) = self.net.poll_event() {
            self.on_net_event(e, now);
        }
        if self.net.take_node_failure() {
            // A leader's connection failed: it may lead no more (found on Apache Kafka, where
            // a killed leader stays in metadata until the controller fences it, and the
            // producer kept retrying it until the next periodic refresh).
            self.metadata.request_update();
        }
        if let Some(e) = self.net.take_auth_failure() {
            self.fail_unsent(DeliveryError::Authentication(e));
        }
        if self.metadata.removals() != self.queues_pruned {
            self.queues_pruned = self.metadata.removals();
            let metadata = &self.metadata;
            (self.acc).forget_idle_topics(|t| metadata.topic(t).is_some());
        }
        self.expire(now);
        self.place_pending(now);
        self.refresh_metadata(now);
        // A bump may drop the producer id (a broker that does not know it): the new id is
        // asked for in this same step, as nothing may come to wake the producer for it (found
        // on Tansu: after a restart, every record waited for its delivery timeout).
        self.apply_epoch_bumps();
        self.init_producer_id(now);
        self.drive_transaction(now);
        self.send_ready(now);
        // Sending may have asked for metadata (a leader it cannot reach), due already since
        // the last refresh was longer ago than the backoff: poll_timeout passes over a refresh
        // already due, so it goes now or waits for its connection (found by the simulation:
        // a partition whose leader had been killed waited 15 s for its delivery timeout,
        // seed 4380).
        self.refresh_metadata(now);
        self.finish_flushes_and_close(now);
    }

    fn refresh_metadata(&mut self, now: Instant) {
        if self.metadata.next_refresh().is_none_or(|t| t > now) {
            return;
        }
        // With no broker to ask, the network counts towards KIP-1102's rebootstrap.
        let Some(conn) = self.net.least_loaded(now) else {
            return;
        };
        if let Some(req) = self.metadata.poll_request(now) {
            if self.net.send(conn, &req, Tag::Metadata, now).is_err() {
                self.metadata.handle_failure(now);
            }
        }
    }

    fn init_producer_id(&mut self, now: Instant) {
        // A transactional producer's id comes from its transaction coordinator.
        if self.cfg.enable_idempotence && self.txn.is_none() && !self.acc.is_empty() {
            self.idem.request_id(&mut self.net, now);
        }
    }

    /// Sends what is ready, round after round: a round takes one batch per partition, and
    /// more may be ready behind it (a burst placed at once when metadata came) with nothing
    /// else to wake the producer (acks=0 has no response; their linger passed already). It
    /// stops when a round sends nothing (connections at their in-flight limit, or nothing
    /// ready).
    fn send_ready(&mut self, now: Instant) {
        while self.send_round(now) {}
    }

    /// One round of [`Producer::send_ready`]; whether another may send more.
    fn send_round(&mut self, now: Instant) -> bool {
        if self.cfg.enable_idempotence && self.idem.id.is_none() {
            return false;
        }
        let force = self.forced();
        self.acc.promote(now);
        // A partition without a leader (not elected yet, or it moved) waits for metadata,
        // which must then be asked for: nothing else would wake its batches. (Such partitions
        // are left out of `ready` below.)
        let unknown_leader = self.any_leaderless();
        let metadata = &self.metadata;
        let txn = &self.txn;
        let in_flight = &self.in_flight;
        let sequences = &self.idem.sequences;
        let idempotent = self.cfg.enable_idempotence;
        let acc = &self.acc;
        let lanes = self.cfg.connections_per_broker;
        // Each ready partition with its leader's connection (leader and lane), or blocked.
        let (ready, linger) = acc.ready(now, force, |b| {
            let tp = &b.tp;
            let node = metadata.leader(&tp.0, tp.1)?;
            let seq = sequences.get(tp);
            // A partition's batches wait until it is in the transaction, and while an epoch
            // bump is pending.
            if seq.is_some_and(|p| p.bump) || txn.as_ref().is_some_and(|t| !t.is_added(tp)) {
                return None;
            }
            // With idempotence, a retry waits until the partition has nothing else in flight,
            // so its sequences reach the broker in order; and until the broker has taken one
            // batch under this epoch, one at a time (see `PartitionSequence::confirmed`).
            let ordered = b.attempts > 0 || seq.is_some_and(|p| !p.confirmed);
            if idempotent && ordered && in_flight.is_busy(&tp.0, tp.1) {
                return None;
            }
            Some((node, lane(tp.1, lanes)))
        });
        self.linger_at = linger;
        let (tps, by_conn) = by_connection(ready);
        if unknown_leader {
            self.metadata.request_update();
        }
        // Whether a partition sent from this round has more queued behind (only then may
        // another round send anything).
        let mut more = false;
        // Batches that are ready only because their linger.ms passed wait, up to a second
        // linger.ms, while their connection has a request in flight: a broker serves one
        // request per connection at a time, so a Produce sent now would wait behind it there
        // anyway, and the batches that become ready meanwhile go with it in one request. With
        // keys spread over 1,000 partitions nearly every batch lingers alone, and sending each
        // as its linger ends made a request per few records, costing both sides CPU.
        let may_hold = !force && !self.cfg.linger.is_zero();
        self.holding = None;
        for ((node, lane), range) in by_conn {
            let partitions = &tps[range];
            let purpose = Purpose::lane(lane);
            let Some(conn) = self.net.ready(node, purpose, now) else {
                if !self.net.knows(node) {
                    // The leader is a broker the last metadata did not list (it was down when
                    // asked): only another refresh can name one to connect to (found on
                    // librdkafka's mock cluster, where such a partition waited until its
                    // records' delivery timeout).
                    self.metadata.request_update();
                }
                self.stalled_since.entry((node, lane)).or_insert(now);
                // Their batches wait: once full, they may grow rather than queue more.
                self.acc.waiting(partitions);
                continue;
            };
            self.stalled_since.remove(&(node, lane));
            if may_hold && self.net.in_flight(conn) > 0 {
                // None (the least) if any of them may not wait.
                let until = (partitions.iter())
                    .map(|(t, p)| self.acc.hold_until(t, *p))
                    .min()
                    .flatten();
                if let Some(until) = until.filter(|t| *t > now) {
                    self.holding = Some(self.holding.map_or(until, |h| h.min(until)));
                    continue;
                }
            }
            let batches = self.acc.drain(partitions, self.cfg.max_request_size);
            // A request that could not be written (its batches went back) is no progress.
            if !batches.is_empty() && self.send_batches(conn, batches, now) {
                more |= partitions
                    .iter()
                    .any(|tp| self.acc.queue_len(&tp.0, tp.1) > 0);
            }
        }
        more
    }

    /// Whether a queued partition has no known leader. The list is rebuilt from every queue
    /// only when metadata may have taken a leader away; partitions queued since are added as
    /// their queues open.
    fn any_leaderless(&mut self) -> bool {
        let (set, generation) = &mut self.leaderless;
        let metadata = &self.metadata;
        if *generation != Some(metadata.generation()) {
            *generation = Some(metadata.generation());
            self.acc.drain_opened();
            set.clear();
            set.extend(
                self.acc
                    .partitions()
                    .filter(|(t, p)| metadata.leader(t, *p).is_none())
                    .map(|(t, p)| (t.to_owned(), p)),
            );
        } else {
            for (t, p) in self.acc.drain_opened() {
                if metadata.leader(&t, p).is_none() {
                    set.insert((t.to_string(), p));
                }
            }
        }
        let acc = &self.acc;
        set.retain(|(t, p)| acc.queue_len(t, *p) > 0 && metadata.leader(t, *p).is_none());
        !set.is_empty()
    }

    /// Writes one Produce request; whether it was written (else its batches went back).
    fn send_batches(&mut self, conn: ConnId, mut batches: Vec<Batch>, now: Instant) -> bool {
        let (pid, epoch) = self.idem.id.unwrap_or((-1, -1));
        // By topic, in name order as a map would give them.
        let mut topics = self.topic_data(&mut batches, (pid, epoch), now);
        self.metrics.batches_sent(now);
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let req = ProduceRequest {
            transactional_id: self.cfg.transactional_id.clone(),
            acks: self.cfg.acks.wire_value(),
            timeout_ms: self.cfg.request_timeout.as_millis().min(i32::MAX as u128) as i32,
            topic_data: topics,
            ..Default::default()
        };
        let ids: Vec<u64> = batches.iter().map(|b| b.id).collect();
        let expect = if self.cfg.acks == Acks::None {
            Expect::Nothing
        } else {
            Expect::Response
        };
        // Produce v13 names topics only by id: without every id, stay at v12 (as Java does).
        // Inside transactions of version 1, v11 at most: v12 is version 2's, whose Produce
        // adds the partition to the transaction (KIP-890).
        let all_ids = req.topic_data.iter().all(|t| !t.topic_id.is_nil());
        let max_version = match &self.txn {
            Some(t) if !t.tv2() => 11,
            _ if all_ids => 13,
            _ => 12,
        };
        let sent = self
            .net
            .send_at_most(conn, &req, Tag::Produce(ids), expect, max_version, now);
        if sent.is_ok() {
            if let Some(t) = &mut self.txn {
                t.batch_sent();
            }
            let records = batches.iter().map(|b| b.records.len()).sum();
            self.metrics.request_sent(records, now);
        }
        match sent {
            Ok(_) if expect == Expect::Nothing => {
                // acks=0: complete once written, with no offset.
                for b in batches {
                    self.complete(b, None, -1);
                }
            }
            Ok(_) => {
                for b in batches {
                    self.in_flight.insert(b);
                }
            }
            Err(_) => {
                for b in batches {
                    self.acc.reenqueue(b);
                }
                return false;
            }
        }
        true
    }

    /// The Produce request's topics for `batches` (drained in topic order), each batch sealed
    /// for it (see [`Producer::seal_for_request`]).
    #[inline]
    fn topic_data(
        &mut self,
        batches: &mut [Batch],
        (pid, epoch): (i64, i16),
        now: Instant,
    ) -> Vec<TopicProduceData> {
        let mut topics: Vec<TopicProduceData> = Vec::new();
        // The topic of the batch before, and its place in `topics`: a run of one topic's
        // batches finds it by pointer; another is found from the back, rather than by cloning
        // each batch's topic name into a map key.
        let mut last: Option<(Topic, usize)> = None;
        for i in 0..batches.len() {
            let topic = &batches[i].tp.0;
            let at = match &last {
                Some((t, at)) if t == topic => *at,
                _ => {
                    let at = match topics
                        .iter()
                        .rposition(|t| t.name.as_str() == topic.as_str())
                    {
                        Some(at) => at,
                        None => {
                            let topic_id = (self.metadata.topic(topic))
                                .map(|t| t.id)
                                .unwrap_or_default();
                            // Room for the topic's run of batches (drained in topic order):
                            // grown a push at a time, the list was reallocated and copied
                            // about seven times a request.
                            let run = (batches[i..].iter())
                                .take_while(|b| b.tp.0 == *topic)
                                .count();
                            topics.push(TopicProduceData {
                                name: topic.to_string(),
                                topic_id,
                                partition_data: Vec::with_capacity(run),
                                ..Default::default()
                            });
                            topics.len() - 1
                        }
                    };
                    last = Some((topic.clone(), at));
                    at
                }
            };
            let b = &mut batches[i];
            let bytes = self.seal_for_request(b, (pid, epoch), now);
            topics[at].partition_data.push(PartitionProduceData {
                index: b.tp.1,
                records: Some(bytes),
                ..Default::default()
            });
        }
        topics
    }

    /// A batch's bytes for a Produce request: its sequence under the producer id and epoch
    /// (with idempotence), sealed on its first send (learning the compression ratio), and
    /// counted in the metrics.
    fn seal_for_request(&mut self, b: &mut Batch, (pid, epoch): (i64, i16), now: Instant) -> Bytes {
        let (mut base_sequence, mut batch_epoch) = (-1, epoch);
        if self.cfg.enable_idempotence {
            (batch_epoch, base_sequence) =
                self.idem.assign(&b.tp, b.base_sequence, b.records.len());
        }
        let uncompressed = b.size();
        let first = b.sealed.is_none();
        let bytes = b.seal(&BatchMeta {
            producer_id: pid,
            producer_epoch: batch_epoch,
            base_sequence,
            transactional: self.txn.is_some(),
            ..BatchMeta::default()
        });
        if first {
            self.acc.observe_ratio(uncompressed, bytes.len());
        }
        let first = first.then(|| FirstSend {
            uncompressed,
            queue_ms: now.saturating_duration_since(b.created).as_secs_f64() * 1e3,
        });
        let sent = BatchSent {
            topic: &b.tp.0,
            records: b.records.len(),
            bytes: bytes.len(),
            first,
        };
        self.metrics.batch_sent(sent);
        bytes
    }

    fn on_net_event(&mut self, e: NetEvent<Tag>, now: Instant) {
        match e {
            NetEvent::Response {
                tag: Tag::Metadata,
                body: ResponseBody::Metadata(resp),
                ..
            } => {
                let update = self.metadata.handle_response(&resp, now);
                // Not after a refusal: after REBOOTSTRAP_REQUIRED the network forgot the
                // known brokers, to start over from bootstrap.servers.
                if resp.error_code == 0 {
                    self.net.set_cluster_id(resp.cluster_id.as_deref());
                    self.net.update_nodes(self.metadata.nodes(), now);
                }
                // A recreated topic has no producer state on the broker: its partitions'
                // sequences start over at 0.
                for topic in &update.recreated {
                    for tp in self.idem.topic_recreated(topic) {
                        self.acc.reset_sequences(&tp);
                    }
                }
                for (topic, error) in update.topic_errors {
                    self.fail_topic(&topic, DeliveryError::Broker(error));
                }
            }
            NetEvent::Failed {
                tag: Tag::Metadata, ..
            } => self.metadata.handle_failure(now),
            NetEvent::Response {
                tag: Tag::InitProducerId,
                body: ResponseBody::InitProducerId(resp),
                ..
            } => {
                let fatal = self
                    .idem
                    .handle_id(&resp, &self.retry_backoff, &mut self.rng, now);
                if let Some(e) = fatal {
                    self.fail_everything_with(DeliveryError::Broker(e), Certainty::NotSent);
                }
            }
            NetEvent::Failed {
                tag: Tag::InitProducerId,
                ..
            } => self
                .idem
                .handle_id_failure(&self.retry_backoff, &mut self.rng, now),
            NetEvent::Response {
                tag: Tag::Produce(ids),
                body: ResponseBody::Produce(resp),
                version,
                ..
            } => {
                self.on_produce_response(ids, resp, version, now);
            }
            NetEvent::Failed {
                tag: Tag::Produce(ids),
                error,
                ..
            } => {
                for id in ids {
                    if let Some(b) = self.in_flight.take(id) {
                        self.retry_or_fail(b, DeliveryError::Request(error.clone()), now, true);
                    }
                }
            }
            NetEvent::Response {
                tag: Tag::Txn,
                body,
                ..
            } => {
                if let Some(txn) = &mut self.txn {
                    txn.handle_response(&body, now);
                }
            }
            NetEvent::Failed { tag: Tag::Txn, .. } => {
                if let Some(txn) = &mut self.txn {
                    txn.handle_failure(now);
                }
            }
            NetEvent::Response { tag, .. } => {
                debug_assert!(false, "response type does not match its request: {tag:?}");
            }
        }
    }
}

/// Ready partitions grouped by connection (leader and lane), in (topic, partition) order within
/// each, as `ready` gave them: a stable sort by connection (with one broker the list is sorted
/// already), then each connection's range of the list. A tree of lists, one entry per
/// partition, cost a search and its lists' growth per batch.
#[allow(clippy::type_complexity)]
#[inline]
fn by_connection(
    mut ready: Vec<Ready<(NodeId, usize)>>,
) -> (
    Vec<(Topic, i32)>,
    Vec<((NodeId, usize), std::ops::Range<usize>)>,
) {
    ready.sort_by_key(|(_, conn)| *conn);
    let mut by_conn: Vec<((NodeId, usize), std::ops::Range<usize>)> = Vec::new();
    for (i, (_, conn)) in ready.iter().enumerate() {
        match by_conn.last_mut() {
            Some((c, range)) if c == conn => range.end = i + 1,
            _ => by_conn.push((*conn, i..i + 1)),
        }
    }
    (ready.into_iter().map(|(tp, _)| tp).collect(), by_conn)
}
