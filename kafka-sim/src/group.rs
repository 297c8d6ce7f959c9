//! A small classic-protocol group coordinator for [`crate::SingleBroker`]: FindCoordinator,
//! JoinGroup (with KIP-394's member id), SyncGroup, Heartbeat, LeaveGroup, and an offsets
//! store (OffsetCommit, OffsetFetch).
//!
//! A join completes at once with the members known so far, the first one leading; members
//! that joined earlier learn of the new generation from their heartbeats
//! (REBALANCE_IN_PROGRESS), as they would from a real coordinator. It does not wait out
//! rebalance timeouts; a seeded multi-broker coordinator comes with the simulated cluster.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_proto::api::ResponseBody;
use kafka_proto::messages::find_coordinator_response::{Coordinator, FindCoordinatorResponse};
use kafka_proto::messages::heartbeat_request::HeartbeatRequest;
use kafka_proto::messages::heartbeat_response::HeartbeatResponse;
use kafka_proto::messages::join_group_request::JoinGroupRequest;
use kafka_proto::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_proto::messages::leave_group_request::LeaveGroupRequest;
use kafka_proto::messages::leave_group_response::LeaveGroupResponse;
use kafka_proto::messages::offset_commit_request::OffsetCommitRequest;
use kafka_proto::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_proto::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_proto::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_proto::messages::sync_group_request::SyncGroupRequest;
use kafka_proto::messages::sync_group_response::SyncGroupResponse;

const MEMBER_ID_REQUIRED: i16 = 79;
const UNKNOWN_MEMBER_ID: i16 = 25;
const ILLEGAL_GENERATION: i16 = 22;
const REBALANCE_IN_PROGRESS: i16 = 27;

#[derive(Debug, Default)]
struct Group {
    generation: i32,
    protocol: Option<String>,
    /// Member id -> (its protocols' metadata, the generation it joined).
    members: BTreeMap<String, (Vec<(String, Bytes)>, i32)>,
    assignments: BTreeMap<String, Bytes>,
    offsets: BTreeMap<(String, i32), (i64, i32)>,
}

/// Every group of one broker.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: BTreeMap<String, Group>,
    next_member: u64,
    /// Requests seen per API, for tests: (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
    pub(crate) counts: BTreeMap<&'static str, usize>,
}

impl Groups {
    /// A group's committed offset and leader epoch for a partition.
    pub(crate) fn committed(&self, group: &str, topic: &str, partition: i32) -> Option<(i64, i32)> {
        let g = self.groups.get(group)?;
        g.offsets.get(&(topic.to_owned(), partition)).copied()
    }

    fn count(&mut self, api: &'static str) {
        *self.counts.entry(api).or_default() += 1;
    }

    pub(crate) fn find_coordinator(&mut self, host: &str, port: i32) -> ResponseBody {
        ResponseBody::FindCoordinator(FindCoordinatorResponse {
            node_id: 1,
            host: host.to_owned(),
            port,
            coordinators: vec![Coordinator {
                node_id: 1,
                host: host.to_owned(),
                port,
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    pub(crate) fn join(&mut self, req: &JoinGroupRequest, version: i16) -> ResponseBody {
        self.count("JoinGroup");
        if req.member_id.is_empty() && version >= 4 {
            self.next_member += 1;
            return ResponseBody::JoinGroup(JoinGroupResponse {
                error_code: MEMBER_ID_REQUIRED,
                member_id: format!("member-{}", self.next_member),
                ..Default::default()
            });
        }
        let member_id = if req.member_id.is_empty() {
            self.next_member += 1;
            format!("member-{}", self.next_member)
        } else {
            req.member_id.clone()
        };
        let g = self.groups.entry(req.group_id.clone()).or_default();
        g.generation += 1;
        let protocols: Vec<(String, Bytes)> = req
            .protocols
            .iter()
            .map(|p| (p.name.clone(), p.metadata.clone()))
            .collect();
        g.members
            .insert(member_id.clone(), (protocols, g.generation));
        g.assignments.clear();
        // The first protocol of this member that every member supports.
        let chosen = g.members[&member_id]
            .0
            .iter()
            .map(|p| p.0.clone())
            .find(|name| {
                g.members
                    .values()
                    .all(|(ps, _)| ps.iter().any(|p| &p.0 == name))
            });
        g.protocol.clone_from(&chosen);
        let leader = g.members.keys().next().cloned().unwrap_or_default();
        let members = if leader == member_id {
            g.members
                .iter()
                .map(|(id, (ps, _))| JoinGroupResponseMember {
                    member_id: id.clone(),
                    metadata: ps
                        .iter()
                        .find(|p| Some(&p.0) == chosen.as_ref())
                        .map(|p| p.1.clone())
                        .unwrap_or_default(),
                    ..Default::default()
                })
                .collect()
        } else {
            Vec::new()
        };
        // Every member is now of this generation (the others rejoin after their heartbeat).
        for m in g.members.values_mut() {
            if m.1 < g.generation {
                m.1 = -1;
            }
        }
        g.members.get_mut(&member_id).expect("inserted").1 = g.generation;
        ResponseBody::JoinGroup(JoinGroupResponse {
            generation_id: g.generation,
            protocol_type: Some("consumer".into()),
            protocol_name: chosen,
            leader,
            member_id,
            members,
            ..Default::default()
        })
    }

    pub(crate) fn sync(&mut self, req: &SyncGroupRequest) -> ResponseBody {
        self.count("SyncGroup");
        let g = self.groups.entry(req.group_id.clone()).or_default();
        let error = match g.members.get(&req.member_id) {
            None => UNKNOWN_MEMBER_ID,
            Some(m) if m.1 != req.generation_id || g.generation != req.generation_id => {
                ILLEGAL_GENERATION
            }
            Some(_) => 0,
        };
        if error == 0 {
            for a in &req.assignments {
                g.assignments
                    .insert(a.member_id.clone(), a.assignment.clone());
            }
        }
        ResponseBody::SyncGroup(SyncGroupResponse {
            error_code: error,
            protocol_type: Some("consumer".into()),
            protocol_name: g.protocol.clone(),
            assignment: g
                .assignments
                .get(&req.member_id)
                .cloned()
                .unwrap_or_default(),
            ..Default::default()
        })
    }

    pub(crate) fn heartbeat(&mut self, req: &HeartbeatRequest) -> ResponseBody {
        self.count("Heartbeat");
        let g = self.groups.entry(req.group_id.clone()).or_default();
        let error = match g.members.get(&req.member_id) {
            None => UNKNOWN_MEMBER_ID,
            Some(m) if m.1 != g.generation => REBALANCE_IN_PROGRESS,
            Some(_) if req.generation_id != g.generation => ILLEGAL_GENERATION,
            Some(_) => 0,
        };
        ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: error,
            ..Default::default()
        })
    }

    pub(crate) fn leave(&mut self, req: &LeaveGroupRequest) -> ResponseBody {
        self.count("LeaveGroup");
        let g = self.groups.entry(req.group_id.clone()).or_default();
        let ids: Vec<String> = if req.members.is_empty() {
            vec![req.member_id.clone()]
        } else {
            req.members.iter().map(|m| m.member_id.clone()).collect()
        };
        for id in ids {
            if g.members.remove(&id).is_some() {
                g.generation += 1;
                for m in g.members.values_mut() {
                    m.1 = -1; // the rest must rejoin
                }
            }
        }
        ResponseBody::LeaveGroup(LeaveGroupResponse::default())
    }

    pub(crate) fn commit(&mut self, req: &OffsetCommitRequest) -> ResponseBody {
        self.count("OffsetCommit");
        let g = self.groups.entry(req.group_id.clone()).or_default();
        let outside = req.generation_id_or_member_epoch < 0 && req.member_id.is_empty();
        let error = match g.members.get(&req.member_id) {
            // Outside group management: Kafka takes it only while the group has no members.
            None if outside && !g.members.is_empty() => UNKNOWN_MEMBER_ID,
            None if req.generation_id_or_member_epoch >= 0 => UNKNOWN_MEMBER_ID,
            Some(_) if req.generation_id_or_member_epoch != g.generation => ILLEGAL_GENERATION,
            _ => 0,
        };
        offset_commit(req, error, |t, p, offset, epoch| {
            g.offsets.insert((t.to_owned(), p), (offset, epoch));
        })
    }

    pub(crate) fn fetch_offsets(&mut self, req: &OffsetFetchRequest) -> ResponseBody {
        self.count("OffsetFetch");
        let groups = &self.groups;
        offset_fetch(req, |group, t, p| {
            Ok(groups
                .get(group)
                .and_then(|g| g.offsets.get(&(t.to_owned(), p)).copied()))
        })
    }
}

/// An OffsetCommit answer: `error` for every partition, or each offset handed to `store`
/// (topic, partition, offset, leader epoch).
pub(crate) fn offset_commit(
    req: &OffsetCommitRequest,
    error: i16,
    mut store: impl FnMut(&str, i32, i64, i32),
) -> ResponseBody {
    let topics = req
        .topics
        .iter()
        .map(|t| OffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    if error == 0 {
                        store(
                            &t.name,
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                        );
                    }
                    OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: error,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ResponseBody::OffsetCommit(OffsetCommitResponse {
        topics,
        ..Default::default()
    })
}

/// An OffsetFetch answer from `lookup` (group, topic, partition -> offset, leader epoch, or a
/// partition's error), in
/// the request's shape: per group from v8, flat before.
pub(crate) fn offset_fetch(
    req: &OffsetFetchRequest,
    lookup: impl Fn(&str, &str, i32) -> Result<Option<(i64, i32)>, i16>,
) -> ResponseBody {
    // v8+ asks per group; older versions at the top level.
    let (group_id, asked): (String, Vec<(String, Vec<i32>)>) = match req.groups.first() {
        Some(g) => (
            g.group_id.clone(),
            g.topics
                .iter()
                .flatten()
                .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                .collect(),
        ),
        None => (
            req.group_id.clone(),
            req.topics
                .iter()
                .flatten()
                .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                .collect(),
        ),
    };
    let group = group_id.clone();
    let lookup = |t: &str, p: i32| lookup(&group, t, p);
    // The flat (v1-7) and per-group (v8+) shapes have the same fields under different
    // types.
    macro_rules! answer {
        ($topic:ident, $partition:ident) => {
            asked
                .iter()
                .map(|(t, ps)| $topic {
                    name: t.clone(),
                    partitions: ps
                        .iter()
                        .map(|p| {
                            let found = lookup(t, *p);
                            let (offset, epoch) = found.clone().ok().flatten().unwrap_or((-1, -1));
                            $partition {
                                partition_index: *p,
                                committed_offset: offset,
                                committed_leader_epoch: epoch,
                                error_code: found.err().unwrap_or(0),
                                ..Default::default()
                            }
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect()
        };
    }
    let resp = if req.groups.is_empty() {
        OffsetFetchResponse {
            topics: answer!(OffsetFetchResponseTopic, OffsetFetchResponsePartition),
            ..Default::default()
        }
    } else {
        OffsetFetchResponse {
            groups: vec![OffsetFetchResponseGroup {
                group_id,
                topics: answer!(OffsetFetchResponseTopics, OffsetFetchResponsePartitions),
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    ResponseBody::OffsetFetch(resp)
}
