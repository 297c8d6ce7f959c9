//! Offset lookups the application asks of its consumer, as Java's `beginningOffsets`,
//! `endOffsets` and `offsetsForTimes`: ListOffsets to each partition's leader, over the
//! consumer's own connections (no admin client, no extra connection), at the consumer's
//! `isolation.level` (a read_committed end is the last stable offset), within
//! `default.api.timeout.ms`. A leader that moved, or a partition not known yet, is asked again
//! after metadata is refreshed.

use std::collections::{BTreeMap, BTreeSet};

use kafka_proto::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use kafka_proto::messages::list_offsets_response::ListOffsetsResponse;
use kafka_proto::ErrorCode;

use super::{Consumer, FetchEvent, Tag};
use crate::lookup::{AdminError, OffsetSpec};
use crate::net::NodeId;
use crate::time::Instant;
use crate::topic::TopicPartition;

/// A lookup started with [`Consumer::lookup_offsets`], named again in its
/// [`FetchEvent::Offsets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OffsetsId(pub u64);

/// What a lookup found per partition: the offset and its record's timestamp (-1 for the log
/// start and end), or `None` where no record is at or after the time asked.
pub type FoundOffsets = BTreeMap<TopicPartition, Option<(i64, i64)>>;

#[derive(Debug)]
pub(super) struct Lookup {
    asked: BTreeMap<TopicPartition, i64>,
    found: FoundOffsets,
    in_flight: BTreeSet<TopicPartition>,
    deadline: Instant,
    retry_at: Option<Instant>,
    last_problem: Option<String>,
}

/// The lookups under way.
#[derive(Debug, Default)]
pub(super) struct Lookups {
    next: u64,
    open: BTreeMap<OffsetsId, Lookup>,
}

impl Lookups {
    /// The earliest retry or deadline ahead.
    pub(super) fn timeout(&self, now: Instant) -> Option<Instant> {
        self.open
            .values()
            .flat_map(|l| [Some(l.deadline), l.retry_at])
            .flatten()
            .filter(|t| *t > now)
            .min()
    }
}

impl Consumer {
    /// Looks up partitions' offsets (the log start, the end, or the first offset at or after
    /// a timestamp, each partition its own) with ListOffsets from their leaders; whether the
    /// consumer reads them or not. [`FetchEvent::Offsets`] reports them, within
    /// `default.api.timeout.ms`.
    pub fn lookup_offsets(
        &mut self,
        query: Vec<(TopicPartition, OffsetSpec)>,
        now: Instant,
    ) -> OffsetsId {
        let id = OffsetsId(self.lookups.next);
        self.lookups.next += 1;
        let asked: BTreeMap<TopicPartition, i64> = query
            .into_iter()
            .map(|(tp, spec)| {
                let wire = match spec {
                    OffsetSpec::Earliest => -2,
                    OffsetSpec::Latest => -1,
                    OffsetSpec::Timestamp(t) => t.max(0),
                };
                (tp, wire)
            })
            .collect();
        for tp in asked.keys() {
            self.metadata.use_topic(&tp.0, now);
        }
        self.lookups.open.insert(
            id,
            Lookup {
                asked,
                found: BTreeMap::new(),
                in_flight: BTreeSet::new(),
                deadline: now + self.cfg.default_api_timeout,
                retry_at: None,
                last_problem: None,
            },
        );
        self.drive(now);
        id
    }

    /// Sends what the lookups need, ends those complete or past their deadline.
    pub(super) fn drive_lookups(&mut self, now: Instant) {
        let ids: Vec<OffsetsId> = self.lookups.open.keys().copied().collect();
        for id in ids {
            let l = &self.lookups.open[&id];
            if l.found.len() == l.asked.len() {
                let l = self.lookups.open.remove(&id).expect("listed");
                self.events.push_back(FetchEvent::Offsets(id, Ok(l.found)));
                continue;
            }
            if l.deadline <= now {
                let l = self.lookups.open.remove(&id).expect("listed");
                let last = l
                    .last_problem
                    .or_else(|| self.net.last_problem().map(str::to_owned));
                self.events
                    .push_back(FetchEvent::Offsets(id, Err(AdminError::Timeout { last })));
                continue;
            }
            if l.retry_at.is_some_and(|t| t > now) {
                continue;
            }
            let mut by_leader: BTreeMap<NodeId, Vec<(TopicPartition, i64)>> = BTreeMap::new();
            let mut unknown = false;
            for (tp, ts) in &l.asked {
                if l.found.contains_key(tp) || l.in_flight.contains(tp) {
                    continue;
                }
                self.metadata.use_topic(&tp.0, now);
                match self.metadata.leader(&tp.0, tp.1) {
                    Some(node) => by_leader.entry(node).or_default().push((tp.clone(), *ts)),
                    None => unknown = true,
                }
            }
            if unknown {
                self.metadata.request_update();
            }
            for (node, tps) in by_leader {
                let Some(conn) = self.net.ready(node, crate::net::Purpose::Data, now) else {
                    continue;
                };
                let req = self.list_offsets_request(&tps);
                let names: Vec<TopicPartition> = tps.into_iter().map(|(tp, _)| tp).collect();
                let tag = Tag::Lookup(id, names.clone());
                if self.net.send(conn, &req, tag, now).is_ok() {
                    let l = self.lookups.open.get_mut(&id).expect("listed");
                    l.in_flight.extend(names);
                }
            }
        }
    }

    /// ListOffsets for these partitions, each at its timestamp (-2 earliest, -1 latest), at
    /// the consumer's isolation level: for positions to start from, and for lookups.
    pub(super) fn list_offsets_request(&self, tps: &[(TopicPartition, i64)]) -> ListOffsetsRequest {
        let mut topics: BTreeMap<&str, ListOffsetsTopic> = BTreeMap::new();
        for (tp, ts) in tps {
            topics
                .entry(&tp.0)
                .or_insert_with(|| ListOffsetsTopic {
                    name: tp.0.clone(),
                    ..Default::default()
                })
                .partitions
                .push(ListOffsetsPartition {
                    partition_index: tp.1,
                    current_leader_epoch: -1,
                    timestamp: *ts,
                    ..Default::default()
                });
        }
        ListOffsetsRequest {
            replica_id: -1,
            isolation_level: self.cfg.isolation_level.wire_value(),
            topics: topics.into_values().collect(),
            timeout_ms: self.cfg.request_timeout.as_millis().min(i32::MAX as u128) as i32,
            ..Default::default()
        }
    }

    /// A leader's answer (`None`: the request failed).
    pub(super) fn on_lookup(
        &mut self,
        id: OffsetsId,
        tps: Vec<TopicPartition>,
        resp: Option<ListOffsetsResponse>,
        now: Instant,
    ) {
        let backoff = self.cfg.retry_backoff;
        let Some(l) = self.lookups.open.get_mut(&id) else {
            return;
        };
        for tp in &tps {
            l.in_flight.remove(tp);
        }
        let Some(resp) = resp else {
            l.last_problem = Some("a leader's connection failed".into());
            l.retry_at = Some(now + backoff);
            self.metadata.request_update();
            return;
        };
        let mut fatal = None;
        for tp in tps {
            let answer = resp
                .topics
                .iter()
                .filter(|t| t.name == tp.0)
                .flat_map(|t| &t.partitions)
                .find(|p| p.partition_index == tp.1);
            match answer.map(|p| (ErrorCode::from_code(p.error_code), p.offset, p.timestamp)) {
                Some((None, offset, timestamp)) => {
                    l.found
                        .insert(tp, (offset >= 0).then_some((offset, timestamp)));
                }
                Some((Some(code), ..)) if code.is_retriable() => {
                    // The leader moved, or is not ready: learn the leaders again.
                    l.last_problem = Some(format!("{}-{}: {code}", tp.0, tp.1));
                    l.retry_at = Some(now + backoff);
                    self.metadata.request_update();
                }
                Some((Some(code), ..)) => fatal = Some(code),
                None => l.retry_at = Some(now + backoff),
            }
        }
        if let Some(code) = fatal {
            self.lookups.open.remove(&id);
            self.events.push_back(FetchEvent::Offsets(
                id,
                Err(AdminError::Broker {
                    code,
                    message: None,
                }),
            ));
        }
    }
}
