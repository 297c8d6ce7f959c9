//! Reading a Fetch response: errors per partition, batches from the position on, handed out
//! undecoded against the prefetch budget, read_committed filtering, truncated and corrupt
//! batches.

use std::collections::{BTreeSet, VecDeque};

use bytes::Bytes;
use kafka_proto::messages::fetch_response::{FetchResponse, PartitionData};
use kafka_proto::record::{ControlRecordType, RecordBatch, RecordBatches};
use kafka_proto::ErrorCode;
use uuid::Uuid;

use super::{Consumer, FetchError, FetchEvent, FetchedRecords, Part, StartFrom};
use crate::config::{IsolationLevel, OffsetReset};
use crate::net::NodeId;
use crate::time::Instant;
use crate::topic::TopicPartition;

impl Consumer {
    pub(super) fn on_fetch(
        &mut self,
        node: NodeId,
        tps: Vec<(super::Req, i64)>,
        resp: FetchResponse,
        version: i16,
        incremental: bool,
        now: Instant,
    ) {
        if resp.error_code != 0 {
            return self.on_fetch_failed(&tps, resp.error_code, now);
        }
        for ((tp, gen), fetch_offset) in tps {
            let topic_id = self.metadata.topic(&tp.0).map(|t| t.id).unwrap_or_default();
            let Some(data) = partition_data(&resp, version, topic_id, &tp) else {
                if incremental {
                    // Nothing new in this session partition.
                    self.answered(&tp, gen);
                } else {
                    self.retry_later(&tp, gen, now);
                }
                continue;
            };
            let next_gen = self.next_gen + 1;
            let Some(part) = super::answered(&mut self.parts, &tp, gen) else {
                continue;
            };
            if part.position.is_some_and(|p| p < fetch_offset) {
                // Fetched before a seek (or a stop at corrupt data) moved the position back: the
                // data does not reach back to the new position.
                continue;
            }
            // KIP-392: any error forgets the replica read from, as Java's (the next fetch goes
            // to the leader); out of range there is not reset but asked of the leader (the
            // follower may lag behind it).
            if data.error_code != 0 {
                let was = part.read_replica.take();
                let out_of_range = data.error_code == ErrorCode::OffsetOutOfRange.code();
                if out_of_range && was.is_some_and(|(n, _)| n == node) {
                    // After the retry backoff: a leader that points at the replica again at
                    // once must not make the two spin (found by the simulation, seed 104, when
                    // its leaders named replicas that lacked the offset).
                    self.retry_later(&tp, gen, now);
                    continue;
                }
            }
            match ErrorCode::from_code(data.error_code) {
                None => {}
                // The answer to a fetch from before a seek says nothing of the new position
                // (a forward seek leaves the position past the offset fetched).
                Some(ErrorCode::OffsetOutOfRange) if part.position != Some(fetch_offset) => {
                    continue
                }
                Some(ErrorCode::OffsetOutOfRange) => {
                    let reset = self.cfg.auto_offset_reset;
                    match out_of_range(part, reset, next_gen) {
                        Some(error) => self.events.push_back(FetchEvent::Error {
                            topic: tp.0.clone(),
                            partition: tp.1,
                            error,
                        }),
                        None => self.next_gen = next_gen,
                    }
                    continue;
                }
                Some(e) => {
                    if data.current_leader.leader_id >= 0 {
                        let hint = &data.current_leader;
                        self.metadata.apply_leader_hint(
                            &tp.0,
                            tp.1,
                            hint.leader_id,
                            hint.leader_epoch,
                            None,
                        );
                    }
                    self.partition_error(&tp, gen, e, now);
                    continue;
                }
            }
            if data.preferred_read_replica >= 0 {
                // The leader points at a replica in our rack (or back at itself).
                let until = now + self.cfg.metadata_max_age;
                part.read_replica = (data.preferred_read_replica != node)
                    .then_some((data.preferred_read_replica, until));
            }
            part.high_watermark = data.high_watermark;
            part.failures = 0;
            let Some(from) = part.position else {
                continue;
            };
            let raw = data.records.clone().unwrap_or_default();
            let raw_len = raw.len();
            // read_committed (KIP-98): a producer's transactional batches from the first offset
            // of an aborted transaction on are skipped, until its ABORT marker.
            let read_committed = self.cfg.isolation_level == IsolationLevel::ReadCommitted;
            let aborted = read_committed.then(|| {
                let all = data.aborted_transactions.iter().flatten();
                all.map(|a| (a.first_offset, a.producer_id)).collect()
            });
            let Walk {
                runs,
                position,
                epoch,
                corrupt,
            } = walk(part, raw, from, aborted);
            part.position = Some(position);
            part.epoch = epoch;
            self.metrics.lag(
                &tp.0,
                tp.1,
                data.high_watermark.saturating_sub(position),
                now,
            );
            if !runs.is_empty() {
                part.end_reported = false;
                let out = &mut self.events;
                self.buffered += hand_out(out, &tp, runs, raw_len, data.high_watermark);
            }
            if let Some(error) = corrupt {
                part.stopped = true;
                self.events.push_back(FetchEvent::Error {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    error: FetchError::Corrupt {
                        offset: position,
                        error,
                    },
                });
                continue;
            }
            // A read_committed reader can read no further than the last stable offset.
            let end = if read_committed && data.last_stable_offset >= 0 {
                data.last_stable_offset
            } else {
                data.high_watermark
            };
            if position >= end && !part.end_reported {
                part.end_reported = true;
                self.events.push_back(FetchEvent::EndOfPartition {
                    topic: tp.0.clone(),
                    partition: tp.1,
                    offset: position,
                });
            }
        }
    }

    /// The whole fetch failed: a fetch-session error (the next fetch is full again, at once)
    /// or a broker-wide one (retried with backoff).
    fn on_fetch_failed(&mut self, tps: &[(super::Req, i64)], error_code: i16, now: Instant) {
        let session = matches!(
            ErrorCode::from_code(error_code),
            Some(
                ErrorCode::FetchSessionIdNotFound
                    | ErrorCode::InvalidFetchSessionEpoch
                    | ErrorCode::FetchSessionTopicIdError
            )
        );
        for ((tp, gen), _) in tps {
            if session {
                self.answered(tp, *gen);
            } else {
                self.retry_later(tp, *gen, now);
            }
        }
    }
}

/// A partition's answer in a Fetch response: its topic named by id (v13+) or by name.
fn partition_data<'a>(
    resp: &'a FetchResponse,
    version: i16,
    topic_id: Uuid,
    tp: &TopicPartition,
) -> Option<&'a PartitionData> {
    resp.responses
        .iter()
        .filter(|t| {
            if version >= 13 {
                t.topic_id == topic_id
            } else {
                t.topic == tp.0
            }
        })
        .flat_map(|t| &t.partitions)
        .find(|p| p.partition_index == tp.1)
}

/// What [`walk`] found in a partition's record set.
struct Walk {
    /// Batches to hand out, in runs of one leader epoch each (a run per epoch, as commits
    /// carry it), with the position each run starts from. Their records are decoded only as
    /// the application reads them.
    runs: Vec<(i32, i64, Vec<RecordBatch>)>,
    /// The position after them.
    position: i64,
    /// The leader epoch of the record before that position.
    epoch: i32,
    /// Why the walk stopped before the end, if the data is corrupt.
    corrupt: Option<kafka_proto::DecodeError>,
}

/// Walks a partition's batches from `position` on. `aborted` (read_committed only): the
/// aborted transactions' first offsets and producer ids, whose transactional batches are
/// skipped until their ABORT markers.
fn walk(part: &mut Part, raw: Bytes, mut position: i64, aborted: Option<Vec<(i64, i64)>>) -> Walk {
    let mut runs: Vec<(i32, i64, Vec<RecordBatch>)> = Vec::new();
    let mut epoch = part.epoch;
    let mut corrupt = None;
    let read_committed = aborted.is_some();
    let mut aborted = aborted.unwrap_or_default();
    aborted.sort_unstable();
    let mut aborted = aborted.into_iter().peekable();
    let mut aborting: BTreeSet<i64> = BTreeSet::new();
    for batch in RecordBatches::new(raw) {
        let batch = match batch {
            Ok(b) => b,
            Err(error) => {
                corrupt = Some(error);
                break;
            }
        };
        if batch.next_offset() <= position {
            continue; // a fetch starts at the batch holding the position
        }
        if std::mem::take(&mut part.from_latest) && batch.base_offset < position {
            // The log end is always at a batch boundary, so a "latest" offset inside a batch
            // is wrong (Tansu's memory storage answers the last batch's base offset + 1): the
            // whole batch was there already. Start after it.
            position = batch.next_offset();
            continue;
        }
        if batch.partition_leader_epoch >= 0 {
            epoch = batch.partition_leader_epoch;
        }
        if read_committed {
            while let Some((_, pid)) = aborted.next_if(|(first, _)| *first <= batch.last_offset()) {
                aborting.insert(pid);
            }
            if batch.is_control() {
                if matches!(batch.control_type(), Ok(Some(ControlRecordType::Abort))) {
                    aborting.remove(&batch.producer_id);
                }
            } else if batch.is_transactional() && aborting.contains(&batch.producer_id) {
                position = batch.next_offset();
                continue;
            }
        }
        let next = batch.next_offset();
        // Control batches hold markers, not records; a batch compacted empty holds none.
        if !batch.is_control() && batch.record_count > 0 {
            if runs.last().is_none_or(|run| run.0 != epoch) {
                runs.push((epoch, position, Vec::new()));
            }
            runs.last_mut().expect("pushed").2.push(batch);
        }
        position = next;
    }
    Walk {
        runs,
        position,
        epoch,
        corrupt,
    }
}

/// Hands a partition's runs out as events; returns the bytes they hold. The records share
/// the response's buffers: each run is charged its batches' encoded size, and the first also
/// what the raw set holds beyond them. What a batch inflates to is not charged: only the
/// batch being read is decompressed.
fn hand_out(
    events: &mut VecDeque<FetchEvent>,
    tp: &TopicPartition,
    runs: Vec<(i32, i64, Vec<RecordBatch>)>,
    raw_len: usize,
    high_watermark: i64,
) -> usize {
    let own: usize = (runs.iter().flat_map(|run| &run.2))
        .map(RecordBatch::size)
        .sum();
    let mut extra = raw_len.saturating_sub(own);
    let mut total = 0;
    for (leader_epoch, from, batches) in runs {
        let bytes =
            batches.iter().map(RecordBatch::size).sum::<usize>() + std::mem::take(&mut extra);
        total += bytes;
        events.push_back(FetchEvent::Records {
            topic: tp.0.clone(),
            partition: tp.1,
            records: FetchedRecords::new(batches, from),
            leader_epoch,
            high_watermark,
            bytes,
        });
    }
    total
}

/// OFFSET_OUT_OF_RANGE at the position: `auto.offset.reset` starts the partition over from
/// its earliest or latest offset under generation `next_gen` (`None`), or stops it with the
/// error to report (`none`).
fn out_of_range(part: &mut Part, reset: OffsetReset, next_gen: u64) -> Option<FetchError> {
    let offset = part.position.unwrap_or(-1);
    match reset {
        OffsetReset::Earliest => *part = Consumer::part(StartFrom::Earliest, next_gen),
        OffsetReset::Latest => *part = Consumer::part(StartFrom::Latest, next_gen),
        OffsetReset::None => {
            part.stopped = true;
            return Some(FetchError::OffsetOutOfRange(offset));
        }
    }
    None
}
