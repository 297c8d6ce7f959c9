//! What the fetcher asks of the brokers at each step: metadata for its partitions, the
//! offsets to start from (ListOffsets), and Fetch requests per leader within the prefetch
//! budget and each leader's fetch session.

use super::*;
use crate::net::ConnId;

impl Consumer {
    pub(super) fn drive(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let now = self.now;
        self.part_timers.prune(now);
        while let Some(e) = self.net.poll_event() {
            self.on_event(e, now);
        }
        if self.net.take_node_failure() {
            // A broker's connection failed: its leaderships may have moved.
            self.metadata.request_update();
        }
        if let Some(e) = self.net.take_auth_failure() {
            self.events.push_back(FetchEvent::AuthenticationFailed(e));
        }
        for (tp, p) in &mut self.parts {
            self.metadata.use_topic(&tp.0, now);
            if p.retry_at.is_some_and(|t| t <= now) {
                p.retry_at = None;
            }
        }
        self.refresh_metadata(now);
        self.drive_group(now);
        if let Some(g) = &self.group {
            let m = &g.membership;
            self.metrics.membership(m.is_active(), m.is_stable(), now);
        }
        self.check_health(now);
        self.check_leader_epochs();
        self.validate(now);
        self.list_offsets(now);
        self.drive_lookups(now);
        self.fetch(now);
        // Fetching may have asked for metadata (a leader it cannot reach), due already:
        // poll_timeout passes over a refresh already due, so it goes now (as the producer's).
        self.refresh_metadata(now);
    }

    /// Sends the metadata request if one is due and a connection is ready.
    fn refresh_metadata(&mut self, now: Instant) {
        if self.metadata.next_refresh().is_some_and(|t| t <= now) {
            if let Some(conn) = self.net.least_loaded(now) {
                if let Some(req) = self.metadata.poll_request(now) {
                    if self.net.send(conn, &req, Tag::Metadata, now).is_err() {
                        self.metadata.handle_failure(now);
                    }
                }
            }
        }
    }

    /// Partitions that may get a request now, grouped by leader.
    pub(super) fn by_leader(
        &mut self,
        want: impl Fn(&Part) -> bool,
    ) -> BTreeMap<NodeId, Vec<TopicPartition>> {
        let mut out: BTreeMap<NodeId, Vec<TopicPartition>> = BTreeMap::new();
        let mut unknown = false;
        for (tp, p) in &self.parts {
            if p.busy.is_some() || p.paused || p.stopped || p.retry_at.is_some() || !want(p) {
                continue;
            }
            match self.metadata.leader(&tp.0, tp.1) {
                Some(node) => {
                    // A leader the last metadata did not list (it was down when asked) cannot
                    // be reached until a refresh names it or another leader.
                    unknown |= !self.net.knows(node);
                    out.entry(node).or_default().push(tp.clone());
                }
                None => unknown = true,
            }
        }
        if unknown {
            self.metadata.request_update();
        }
        out
    }

    /// The partitions to fetch now, grouped by the broker to fetch from: the leader, or the
    /// replica the leader preferred (KIP-392, with `client.rack`) until `metadata.max.age.ms`
    /// after it said so, while that replica's address is known (as Java's
    /// `selectReadReplica`). An expired choice is forgotten, and the leader asked again.
    fn by_fetch_node(&mut self, now: Instant) -> BTreeMap<NodeId, Vec<TopicPartition>> {
        let mut out = self.by_leader(|p| p.position.is_some() && !p.validate);
        let (parts, net) = (&mut self.parts, &self.net);
        let mut replicas: Vec<(NodeId, TopicPartition)> = Vec::new();
        let mut unreachable: Vec<NodeId> = Vec::new();
        for (leader, tps) in out.iter_mut() {
            tps.retain(|tp| {
                let Some(p) = parts.get_mut(tp) else {
                    return true;
                };
                match p.read_replica {
                    Some((node, until)) if until > now && net.knows(node) => {
                        replicas.push((node, tp.clone()));
                        false
                    }
                    Some((node, until)) => {
                        p.read_replica = None;
                        if until > now && !unreachable.contains(leader) {
                            // A replica this client cannot reach (no address for it): the
                            // leader would name it again and send nothing, so its fetches go
                            // without the rack for a while (found by the simulation, seed 104:
                            // leader and client went back and forth with no records).
                            tracing::debug!(
                                leader,
                                replica = node,
                                "preferred read replica unknown"
                            );
                            unreachable.push(*leader);
                        }
                        true
                    }
                    None => true,
                }
            });
        }
        let until = now + self.cfg.metadata_max_age;
        for leader in unreachable {
            self.rackless.insert(leader, until);
            self.metadata.request_update();
        }
        self.rackless.retain(|_, t| *t > now);
        for (node, tp) in replicas {
            out.entry(node).or_default().push(tp);
        }
        out.retain(|_, tps| !tps.is_empty());
        out
    }

    fn list_offsets(&mut self, now: Instant) {
        for (node, tps) in self.by_leader(|p| p.position.is_none() && !p.awaiting_committed) {
            let Some(conn) = self.net.ready(node, Purpose::Data, now) else {
                continue;
            };
            let asked: Vec<(TopicPartition, i64)> = tps
                .iter()
                .map(|tp| {
                    let timestamp = match self.parts[tp].start {
                        StartFrom::Earliest => EARLIEST,
                        _ => LATEST,
                    };
                    (tp.clone(), timestamp)
                })
                .collect();
            let req = self.list_offsets_request(&asked);
            if self
                .net
                .send(conn, &req, Tag::ListOffsets(self.reqs(&tps)), now)
                .is_ok()
            {
                self.mark_busy(&tps);
            }
        }
    }

    fn fetch(&mut self, now: Instant) {
        let lanes = self.cfg.connections_per_broker;
        let mut wanted: BTreeMap<Lane, Vec<TopicPartition>> = BTreeMap::new();
        for (node, tps) in self.by_fetch_node(now) {
            for tp in tps {
                wanted
                    .entry((node, lane(tp.1, lanes)))
                    .or_default()
                    .push(tp);
            }
        }
        // Each connection with partitions to read may reserve at most its share of the
        // budget: a long poll to one broker must not hold all of it while another's data
        // waits (found by the simulation, seed 27).
        let conns: BTreeSet<Lane> = wanted.keys().chain(&self.fetching).copied().collect();
        let share = (self.budget() / conns.len().max(1)).max(1);
        let mut wanted: Vec<_> = wanted.into_iter().collect();
        if !wanted.is_empty() {
            let turn = self.node_turn % wanted.len();
            wanted.rotate_left(turn);
            self.node_turn = self.node_turn.wrapping_add(1);
        }
        // The largest batch a fetch may bring: the user says batches fit in
        // `max.partition.fetch.bytes`. (The largest batch seen so far is no bound: a larger one
        // can come next, found by the simulation, seed 112389.)
        let largest = self.cfg.max_partition_fetch_bytes.max(1) as usize;
        for (key, mut tps) in wanted {
            // Each fetch starts at a different partition, so that a spent budget (or
            // fetch.max.bytes) does not always favour the same ones.
            if !tps.is_empty() {
                let start = self.fetch_seq % tps.len();
                tps.rotate_left(start);
                self.fetch_seq = self.fetch_seq.wrapping_add(1);
            }
            if self.fetching.contains(&key) {
                continue;
            }
            // The prefetch budget, across all brokers: what the application has not taken yet,
            // plus what fetches in flight may still bring.
            let room = self.budget().saturating_sub(self.buffered + self.reserved);
            if room == 0 {
                break;
            }
            let Some(conn) = self.net.ready(key.0, Purpose::lane(key.1), now) else {
                continue;
            };
            let max_bytes = room
                .min(share)
                .min(self.cfg.fetch_max_bytes.max(1) as usize);
            // KIP-74: a response holds its first batch whole, even past `max_bytes`. So a fetch
            // whose limit is below a batch may overshoot the budget: only one such fetch may be
            // in flight, and the budget is exceeded by one batch at most (found by the
            // simulation: two overshooting fetches at once, seed 1450). A fetch whose limit
            // holds any batch cannot overshoot, and may go beside others.
            if max_bytes < largest && !self.fetching.is_empty() {
                break;
            }
            self.send_fetch(key, conn, tps, max_bytes, now);
        }
    }

    /// Sends one connection's Fetch for partitions `tps` (in the order to name them), within
    /// `max_bytes`, through its fetch session, and reserves that much of the budget.
    fn send_fetch(
        &mut self,
        key: Lane,
        conn: ConnId,
        tps: Vec<TopicPartition>,
        max_bytes: usize,
        now: Instant,
    ) {
        let want: BTreeMap<TopicPartition, session::FetchState> = tps
            .iter()
            .map(|tp| {
                let p = &self.parts[tp];
                (tp.clone(), (p.position.expect("filtered"), p.leader_epoch))
            })
            .collect();
        let supported = self
            .net
            .version(conn, ApiKey::Fetch)
            .is_some_and(|v| v >= 7);
        let mut plan = self
            .sessions
            .entry(key)
            .or_default()
            .prepare(&want, supported);
        // A full fetch names the partitions in the rotated order.
        let send = if plan.incremental {
            std::mem::take(&mut plan.send)
        } else {
            tps.clone()
        };
        let (mut req, max_version) =
            self.fetch_request(&send, &plan, &want, &tps, max_bytes as i32);
        if self.rackless.contains_key(&key.0) {
            req.rack_id.clear();
        }
        let offsets = self
            .reqs(&tps)
            .into_iter()
            .map(|req| {
                let offset = want[&req.0].0;
                (req, offset)
            })
            .collect();
        let tag = Tag::Fetch(key, offsets, plan.incremental);
        if self
            .net
            .send_at_most(conn, &req, tag, Expect::Response, max_version, now)
            .is_ok()
        {
            self.fetching.insert(key);
            self.fetch_sent.insert(key, now);
            self.reserved += max_bytes;
            self.reservations.insert(key, max_bytes);
            self.mark_busy(&tps);
        }
    }

    /// The Fetch request for one connection: the partitions `send` at their positions in
    /// `want`, what the session `plan` forgets, and the highest version that may carry it
    /// (v13+ names topics only by id, so every topic must have one).
    fn fetch_request(
        &self,
        send: &[TopicPartition],
        plan: &session::Prepared,
        want: &BTreeMap<TopicPartition, session::FetchState>,
        tps: &[TopicPartition],
        max_bytes: i32,
    ) -> (FetchRequest, i16) {
        let mut topics: BTreeMap<String, FetchTopic> = BTreeMap::new();
        for tp in send {
            let topic_id = self.metadata.topic(&tp.0).map(|t| t.id).unwrap_or_default();
            let (offset, leader_epoch) = want[tp];
            topics
                .entry(tp.0.clone())
                .or_insert_with(|| FetchTopic {
                    topic: tp.0.clone(),
                    topic_id,
                    ..Default::default()
                })
                .partitions
                .push(FetchPartition {
                    partition: tp.1,
                    current_leader_epoch: leader_epoch,
                    fetch_offset: offset,
                    partition_max_bytes: self.cfg.max_partition_fetch_bytes,
                    ..Default::default()
                });
        }
        let mut forgotten: BTreeMap<String, ForgottenTopic> = BTreeMap::new();
        for tp in &plan.forget {
            let topic_id = self.metadata.topic(&tp.0).map(|t| t.id).unwrap_or_default();
            forgotten
                .entry(tp.0.clone())
                .or_insert_with(|| ForgottenTopic {
                    topic: tp.0.clone(),
                    topic_id,
                    ..Default::default()
                })
                .partitions
                .push(tp.1);
        }
        let all_ids = topics.values().all(|t| !t.topic_id.is_nil())
            && forgotten.values().all(|t| !t.topic_id.is_nil())
            && tps
                .iter()
                .all(|tp| self.metadata.topic(&tp.0).is_some_and(|t| !t.id.is_nil()));
        let req = FetchRequest {
            replica_id: -1,
            max_wait_ms: self.cfg.fetch_max_wait.as_millis().min(i32::MAX as u128) as i32,
            min_bytes: self.cfg.fetch_min_bytes,
            max_bytes,
            isolation_level: self.cfg.isolation_level.wire_value(),
            session_id: plan.session_id,
            session_epoch: plan.epoch,
            topics: topics.into_values().collect(),
            forgotten_topics_data: forgotten.into_values().collect(),
            rack_id: self.cfg.client_rack.clone(),
            ..Default::default()
        };
        // Fetch v13+ names topics only by id.
        (req, if all_ids { 18 } else { 12 })
    }
}
