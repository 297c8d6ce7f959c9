//! KIP-320 truncation detection: after a leader change (or when reading on from a committed
//! offset with an epoch), a position is checked with OffsetForLeaderEpoch before the next
//! fetch, as the Java consumer does.

use std::collections::BTreeMap;

use kafka_proto::api::ApiKey;
use kafka_proto::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_proto::messages::offset_for_leader_epoch_response::OffsetForLeaderEpochResponse;
use kafka_proto::ErrorCode;

use super::{Consumer, FetchError, FetchEvent, StartFrom, Tag};
use crate::config::OffsetReset;
use crate::net::Purpose;
use crate::time::Instant;

/// Consumers may ask from OffsetForLeaderEpoch v3 on (v3 added `replica_id`).
const MIN_VERSION: i16 = 3;

impl Consumer {
    /// Notes leader epochs that moved on since a position was last checked: a position read in
    /// an older epoch may now be past the end of the new leader's log.
    pub(super) fn check_leader_epochs(&mut self) {
        for (tp, p) in &mut self.parts {
            if p.position.is_none() {
                continue;
            }
            let Some(epoch) = self.metadata.leader_epoch(&tp.0, tp.1) else {
                continue;
            };
            if epoch > p.leader_epoch {
                // The first epoch seen needs no check: the position was found under it.
                if p.leader_epoch >= 0 && p.epoch >= 0 {
                    p.validate = true;
                }
                p.leader_epoch = epoch;
            }
        }
    }

    /// Sends OffsetForLeaderEpoch for positions to check, to each partition's leader.
    pub(super) fn validate(&mut self, now: Instant) {
        for (node, tps) in self.by_leader(|p| p.validate && p.position.is_some()) {
            let Some(conn) = self.net.ready(node, Purpose::Data, now) else {
                continue;
            };
            if self
                .net
                .version(conn, ApiKey::OffsetForLeaderEpoch)
                .is_none_or(|v| v < MIN_VERSION)
            {
                // The broker cannot tell (as in Java, the check is skipped).
                for tp in &tps {
                    self.parts.get_mut(tp).expect("assigned").validate = false;
                }
                continue;
            }
            let mut topics: BTreeMap<String, OffsetForLeaderTopic> = BTreeMap::new();
            for tp in &tps {
                let p = &self.parts[tp];
                topics
                    .entry(tp.0.clone())
                    .or_insert_with(|| OffsetForLeaderTopic {
                        topic: tp.0.clone(),
                        ..Default::default()
                    })
                    .partitions
                    .push(OffsetForLeaderPartition {
                        partition: tp.1,
                        current_leader_epoch: p.leader_epoch,
                        leader_epoch: p.epoch,
                        ..Default::default()
                    });
            }
            let req = OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics: topics.into_values().collect(),
                ..Default::default()
            };
            if self
                .net
                .send(conn, &req, Tag::Validate(self.reqs(&tps)), now)
                .is_ok()
            {
                self.mark_busy(&tps);
            }
        }
    }

    pub(super) fn on_validate(
        &mut self,
        tps: Vec<super::Req>,
        resp: OffsetForLeaderEpochResponse,
        now: Instant,
    ) {
        for (tp, gen) in tps {
            let found = resp
                .topics
                .iter()
                .filter(|t| t.topic == tp.0)
                .flat_map(|t| &t.partitions)
                .find(|p| p.partition == tp.1)
                .map(|p| (p.error_code, p.leader_epoch, p.end_offset));
            let (end_epoch, end_offset) = match found {
                None => {
                    self.retry_later(&tp, gen, now);
                    continue;
                }
                Some((0, epoch, end)) => (epoch, end),
                Some((code, _, _)) => {
                    let e = ErrorCode::from_code(code).expect("non-zero");
                    self.partition_error(&tp, gen, e, now);
                    continue;
                }
            };
            let reset = self.cfg.auto_offset_reset;
            let next_gen = self.next_gen + 1;
            let Some(p) = super::answered(&mut self.parts, &tp, gen) else {
                continue;
            };
            p.failures = 0;
            if !p.validate {
                continue; // seeked meanwhile
            }
            p.validate = false;
            let Some(position) = p.position else { continue };
            let truncated = if end_offset < 0 || end_epoch < 0 {
                // The new leader has nothing of that epoch or before: the divergence point is
                // unknown.
                Some(None)
            } else if end_offset < position {
                Some(Some(end_offset))
            } else {
                None
            };
            match (truncated, reset) {
                (None, _) => {}
                (Some(Some(end)), OffsetReset::Earliest | OffsetReset::Latest) => {
                    // Read on from the first offset known to diverge.
                    p.position = Some(end);
                    p.epoch = end_epoch;
                    p.end_reported = false;
                }
                (Some(None), OffsetReset::Earliest) => {
                    *p = Self::part(StartFrom::Earliest, next_gen);
                    self.next_gen = next_gen;
                }
                (Some(None), OffsetReset::Latest) => {
                    *p = Self::part(StartFrom::Latest, next_gen);
                    self.next_gen = next_gen;
                }
                (Some(divergent), OffsetReset::None) => {
                    p.stopped = true;
                    self.events.push_back(FetchEvent::Error {
                        topic: tp.0.clone(),
                        partition: tp.1,
                        error: FetchError::LogTruncation {
                            offset: position,
                            divergent,
                        },
                    });
                }
            }
        }
    }
}
