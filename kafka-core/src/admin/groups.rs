//! The admin client's group and offset operations: listing the groups every broker
//! coordinates, describing groups, reading a group's committed offsets, deleting groups,
//! altering a group's offsets (the reset tools), and listing partitions' offsets by time
//! (earliest, latest, or the first at a timestamp) from their leaders, and deleting records
//! before an offset (DeleteRecords, to the leaders too).
//!
//! Group operations find the group's coordinator first (FindCoordinator) and look it up again
//! when it moves (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a broken connection); offset
//! listings learn the partitions' leaders from metadata, and ask again of a leader that moved.

mod requests;
use std::collections::{BTreeMap, BTreeSet};

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_proto::messages::delete_groups_request::DeleteGroupsRequest;
use kafka_proto::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic,
};
use kafka_proto::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_proto::messages::describe_groups_response::DescribedGroup;
use kafka_proto::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_proto::messages::list_groups_request::ListGroupsRequest;
use kafka_proto::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use kafka_proto::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_proto::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestGroup};
use kafka_proto::ErrorCode;

use super::{AdminError, AdminResult, NodeId, OffsetSpec, OpId, Tag};

pub use crate::topic::TopicPartition;

/// A group, as ListGroups names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// The group id.
    pub group_id: String,
    /// The protocol type (`consumer` for consumer groups; empty for a group that only
    /// commits offsets).
    pub protocol_type: String,
    /// Its state (`Stable`, `Empty`, ...), where the broker says (ListGroups v4+).
    pub state: Option<String>,
    /// The broker coordinating it.
    pub coordinator: NodeId,
}

/// A group member, as DescribeGroups describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// Its `group.instance.id` (static membership), if any.
    pub group_instance_id: Option<String>,
    /// Its `client.id`.
    pub client_id: String,
    /// The address it connected from.
    pub client_host: String,
    /// The partitions assigned to it (decoded from the consumer protocol's assignment;
    /// empty for other protocol types).
    pub assignment: Vec<TopicPartition>,
    /// Its member epoch, in a group of the consumer protocol (KIP-848).
    pub member_epoch: Option<i32>,
}

/// A group, as DescribeGroups describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// Its state: `Empty`, `PreparingRebalance`, `CompletingRebalance`, `Stable`, `Dead`.
    pub state: String,
    /// The protocol type (`consumer`).
    pub protocol_type: String,
    /// The chosen assignor (`range`, `cooperative-sticky`, ...).
    pub protocol: String,
    /// Its members.
    pub members: Vec<MemberDescription>,
    /// Its coordinator.
    pub coordinator: NodeId,
    /// Whether the group runs the consumer protocol of KIP-848 (ConsumerGroupDescribe
    /// described it; `protocol` is then the broker's assignor, and the states are `Empty`,
    /// `Assigning`, `Reconciling`, `Stable`).
    pub consumer_protocol: bool,
}

/// What a group operation does once it has the coordinator.
#[derive(Debug, Clone)]
pub(super) enum GroupAction {
    Describe,
    Offsets,
    Delete,
    Alter(BTreeMap<TopicPartition, i64>),
}

/// An operation on one group.
#[derive(Debug, Clone)]
pub(super) struct GroupOp {
    pub group: String,
    pub action: GroupAction,
    pub coordinator: Option<NodeId>,
    /// Describe with the classic DescribeGroups: ConsumerGroupDescribe said the group is not a
    /// consumer-protocol group, or the broker does not have it. Java tries the same way round.
    pub classic: bool,
    /// ConsumerGroupDescribe's answer for a group without members, kept while DescribeGroups is
    /// asked too: Tansu answers ConsumerGroupDescribe for classic groups, without their
    /// members, where Kafka says GROUP_ID_NOT_FOUND. Used if DescribeGroups has nothing better
    /// (an error, or `Dead`).
    pub empty_consumer: Option<GroupDescription>,
}

/// ListGroups over every broker.
#[derive(Debug, Clone, Default)]
pub(super) struct ListGroupsOp {
    /// The brokers still to answer (known once metadata named them).
    pub waiting: Option<BTreeSet<NodeId>>,
    pub groups: Vec<GroupListing>,
}

/// ListOffsets (or DeleteRecords) over the partitions' leaders.
#[derive(Debug, Clone)]
pub(super) struct ListOffsetsOp {
    pub spec: OffsetSpec,
    /// DeleteRecords instead: each partition's records before this offset go (-1: all of
    /// them, up to the high watermark); the results are the new log start offsets.
    pub delete_before: Option<BTreeMap<TopicPartition, i64>>,
    pub partitions: Vec<TopicPartition>,
    /// Each partition's leader, from metadata (`None` until it answered).
    pub leaders: Option<BTreeMap<TopicPartition, Option<NodeId>>>,
    pub results: BTreeMap<TopicPartition, Result<i64, AdminError>>,
}

pub(super) fn find_group(group: &str) -> FindCoordinatorRequest {
    crate::coordinator::find_coordinator_request(group)
}

/// The coordinator a FindCoordinator answer names (v4+ per key, older at the top level), or
/// the error.
pub(super) fn found(body: &ResponseBody) -> Result<(NodeId, String, u16), ErrorCode> {
    let ResponseBody::FindCoordinator(r) = body else {
        return Err(ErrorCode::UnknownServerError);
    };
    let (code, node, host, port) = match r.coordinators.first() {
        Some(c) => (c.error_code, c.node_id, c.host.clone(), c.port),
        None => (r.error_code, r.node_id, r.host.clone(), r.port),
    };
    if let Some(e) = ErrorCode::from_code(code) {
        return Err(e);
    }
    let port = u16::try_from(port).map_err(|_| ErrorCode::CoordinatorNotAvailable)?;
    if node < 0 {
        return Err(ErrorCode::CoordinatorNotAvailable);
    }
    Ok((node, host, port))
}

/// The request a group action sends to the coordinator.
pub(super) fn group_request(op: &GroupOp) -> GroupRequest {
    let group = op.group.clone();
    match &op.action {
        GroupAction::Describe if !op.classic => {
            GroupRequest::DescribeConsumer(ConsumerGroupDescribeRequest {
                group_ids: vec![group],
                ..Default::default()
            })
        }
        GroupAction::Describe => GroupRequest::Describe(DescribeGroupsRequest {
            groups: vec![group],
            ..Default::default()
        }),
        GroupAction::Offsets => GroupRequest::Offsets(OffsetFetchRequest {
            group_id: group.clone(),
            topics: None,
            groups: vec![OffsetFetchRequestGroup {
                group_id: group,
                topics: None,
                ..Default::default()
            }],
            require_stable: true,
            ..Default::default()
        }),
        GroupAction::Delete => GroupRequest::Delete(DeleteGroupsRequest {
            groups_names: vec![group],
            ..Default::default()
        }),
        GroupAction::Alter(offsets) => {
            let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
            for ((t, p), o) in offsets {
                topics
                    .entry(t)
                    .or_default()
                    .push(OffsetCommitRequestPartition {
                        partition_index: *p,
                        committed_offset: *o,
                        committed_metadata: Some(String::new()),
                        ..Default::default()
                    });
            }
            // No member and no generation: an admin's commit, which the coordinator takes
            // only while the group has no members (as Java's alterConsumerGroupOffsets).
            GroupRequest::Alter(OffsetCommitRequest {
                group_id: group,
                generation_id_or_member_epoch: -1,
                member_id: String::new(),
                topics: topics
                    .into_iter()
                    .map(|(name, partitions)| OffsetCommitRequestTopic {
                        name: name.to_owned(),
                        partitions,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
        }
    }
}

/// A group action's request, by kind.
pub(super) enum GroupRequest {
    DescribeConsumer(ConsumerGroupDescribeRequest),
    Describe(DescribeGroupsRequest),
    Offsets(OffsetFetchRequest),
    Delete(DeleteGroupsRequest),
    Alter(OffsetCommitRequest),
}

/// What a coordinator's answer to a group action says: the result, or an error to retry
/// after (`true`: look the coordinator up again).
pub(super) enum GroupAnswer {
    Done(AdminResult),
    Retry(String, bool),
    /// Not a consumer-protocol group (or an empty one, which may be a classic group on a
    /// broker that describes those as empty consumer groups): describe it with DescribeGroups,
    /// at once, keeping this answer for when that has nothing better.
    Classic(Option<GroupDescription>),
}

fn retry_or_fail(
    code: ErrorCode,
    message: Option<String>,
    fail: impl FnOnce(AdminError) -> AdminResult,
) -> GroupAnswer {
    match code {
        ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable => {
            GroupAnswer::Retry(code.to_string(), true)
        }
        c if c.is_retriable() || c == ErrorCode::CoordinatorLoadInProgress => {
            GroupAnswer::Retry(code.to_string(), false)
        }
        code => GroupAnswer::Done(fail(AdminError::Broker { code, message })),
    }
}

pub(super) fn group_answer(op: &GroupOp, body: ResponseBody) -> GroupAnswer {
    let coordinator = op.coordinator.unwrap_or(-1);
    match body {
        ResponseBody::ConsumerGroupDescribe(r) => {
            let Some(g) = r.groups.into_iter().find(|g| g.group_id == op.group) else {
                return GroupAnswer::Retry("the group was not described".into(), false);
            };
            match ErrorCode::from_code(g.error_code) {
                Some(ErrorCode::GroupIdNotFound) => GroupAnswer::Classic(None),
                Some(code) => retry_or_fail(code, g.error_message.clone(), |e| {
                    AdminResult::GroupDescription(Err(e))
                }),
                None => {
                    let d = describe_consumer(g, coordinator);
                    if d.members.is_empty() {
                        GroupAnswer::Classic(Some(d))
                    } else {
                        GroupAnswer::Done(AdminResult::GroupDescription(Ok(d)))
                    }
                }
            }
        }
        ResponseBody::DescribeGroups(r) => {
            let Some(g) = r.groups.into_iter().find(|g| g.group_id == op.group) else {
                return GroupAnswer::Retry("the group was not described".into(), false);
            };
            if let Some(d) = &op.empty_consumer {
                if g.error_code != 0 || g.group_state == "Dead" {
                    return GroupAnswer::Done(AdminResult::GroupDescription(Ok(d.clone())));
                }
            }
            match ErrorCode::from_code(g.error_code) {
                Some(code) => retry_or_fail(code, g.error_message.clone(), |e| {
                    AdminResult::GroupDescription(Err(e))
                }),
                None => {
                    GroupAnswer::Done(AdminResult::GroupDescription(Ok(describe(g, coordinator))))
                }
            }
        }
        ResponseBody::OffsetFetch(r) => {
            let (code, parts) = crate::group::offsets::offset_fetch_answers(&r);
            if let Some(code) = ErrorCode::from_code(code) {
                return retry_or_fail(code, None, |e| AdminResult::GroupOffsets(Err(e)));
            }
            // UNSTABLE_OFFSET_COMMIT: a transaction's offsets are pending; ask again.
            if let Some(code) = parts.iter().find_map(|p| ErrorCode::from_code(p.error)) {
                return retry_or_fail(code, None, |e| AdminResult::GroupOffsets(Err(e)));
            }
            let offsets = parts
                .into_iter()
                .filter(|p| p.offset >= 0)
                .map(|p| (p.tp, p.offset))
                .collect();
            GroupAnswer::Done(AdminResult::GroupOffsets(Ok(offsets)))
        }
        ResponseBody::DeleteGroups(r) => {
            // v3 (Kafka 4.4) says why, per group.
            let (code, message) = (r.results.into_iter())
                .find(|g| g.group_id == op.group)
                .map_or((0, None), |g| (g.error_code, g.error_message));
            match ErrorCode::from_code(code) {
                Some(code) => retry_or_fail(code, message, |e| AdminResult::Done(Err(e))),
                None => GroupAnswer::Done(AdminResult::Done(Ok(()))),
            }
        }
        ResponseBody::OffsetCommit(r) => {
            let code = r
                .topics
                .iter()
                .flat_map(|t| &t.partitions)
                .find_map(|p| ErrorCode::from_code(p.error_code));
            match code {
                // An admin's commit into a group with members.
                Some(ErrorCode::UnknownMemberId | ErrorCode::IllegalGeneration) => {
                    GroupAnswer::Done(AdminResult::Done(Err(AdminError::GroupNotEmpty {
                        group: op.group.clone(),
                    })))
                }
                Some(code) => retry_or_fail(code, None, |e| AdminResult::Done(Err(e))),
                None => GroupAnswer::Done(AdminResult::Done(Ok(()))),
            }
        }
        _ => GroupAnswer::Retry("an answer of another kind".into(), false),
    }
}

fn describe(g: DescribedGroup, coordinator: NodeId) -> GroupDescription {
    let consumer = g.protocol_type == "consumer";
    GroupDescription {
        members: g
            .members
            .into_iter()
            .map(|m| MemberDescription {
                assignment: if consumer {
                    crate::group::payload::decode_assignment(&m.member_assignment)
                        .unwrap_or_default()
                } else {
                    Vec::new()
                },
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                member_epoch: None,
            })
            .collect(),
        group_id: g.group_id,
        state: g.group_state,
        protocol_type: g.protocol_type,
        protocol: g.protocol_data,
        coordinator,
        consumer_protocol: false,
    }
}

/// A consumer-protocol group as ConsumerGroupDescribe describes it (assignments by topic name
/// and id; the name is used).
fn describe_consumer(
    g: kafka_proto::messages::consumer_group_describe_response::DescribedGroup,
    coordinator: NodeId,
) -> GroupDescription {
    GroupDescription {
        members: g
            .members
            .into_iter()
            .map(|m| MemberDescription {
                assignment: m
                    .assignment
                    .topic_partitions
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| (t.topic_name.clone(), *p)))
                    .collect(),
                member_id: m.member_id,
                group_instance_id: m.instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                member_epoch: Some(m.member_epoch),
            })
            .collect(),
        group_id: g.group_id,
        state: g.group_state,
        protocol_type: "consumer".into(),
        protocol: g.assignor_name,
        coordinator,
        consumer_protocol: true,
    }
}

pub(super) fn list_groups_request() -> ListGroupsRequest {
    ListGroupsRequest::default()
}

/// Takes one broker's ListGroups answer; `Err` to retry that broker.
pub(super) fn listed(
    op: &mut ListGroupsOp,
    node: NodeId,
    body: ResponseBody,
) -> Result<(), String> {
    let ResponseBody::ListGroups(r) = body else {
        return Err("an answer of another kind".into());
    };
    if let Some(code) = ErrorCode::from_code(r.error_code) {
        return Err(format!("broker {node}: {code}"));
    }
    op.groups.extend(r.groups.into_iter().map(|g| GroupListing {
        group_id: g.group_id,
        protocol_type: g.protocol_type,
        state: (!g.group_state.is_empty()).then_some(g.group_state),
        coordinator: node,
    }));
    if let Some(w) = &mut op.waiting {
        w.remove(&node);
    }
    Ok(())
}

/// A request to one leader: ListOffsets, or DeleteRecords.
pub(super) enum LeaderRequest {
    List(ListOffsetsRequest),
    Delete(DeleteRecordsRequest),
}

/// The request for the partitions `node` leads that have no result yet.
pub(super) fn leader_request(op: &ListOffsetsOp, node: NodeId) -> Option<LeaderRequest> {
    let Some(before) = &op.delete_before else {
        return list_offsets_request(op, node).map(LeaderRequest::List);
    };
    let leaders = op.leaders.as_ref()?;
    let mut topics: BTreeMap<&str, Vec<DeleteRecordsPartition>> = BTreeMap::new();
    for tp in &op.partitions {
        if leaders.get(tp) == Some(&Some(node)) && !op.results.contains_key(tp) {
            topics
                .entry(&tp.0)
                .or_default()
                .push(DeleteRecordsPartition {
                    partition_index: tp.1,
                    offset: before.get(tp).copied().unwrap_or(-1),
                    ..Default::default()
                });
        }
    }
    if topics.is_empty() {
        return None;
    }
    Some(LeaderRequest::Delete(DeleteRecordsRequest {
        topics: topics
            .into_iter()
            .map(|(name, partitions)| DeleteRecordsTopic {
                name: name.to_owned(),
                partitions,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 30_000,
        ..Default::default()
    }))
}

/// The ListOffsets request for the partitions `node` leads that have no result yet.
fn list_offsets_request(op: &ListOffsetsOp, node: NodeId) -> Option<ListOffsetsRequest> {
    let leaders = op.leaders.as_ref()?;
    let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
    for tp in &op.partitions {
        if leaders.get(tp) == Some(&Some(node)) && !op.results.contains_key(tp) {
            topics.entry(&tp.0).or_default().push(ListOffsetsPartition {
                partition_index: tp.1,
                timestamp: op.spec.wire(),
                ..Default::default()
            });
        }
    }
    if topics.is_empty() {
        return None;
    }
    Some(ListOffsetsRequest {
        replica_id: -1,
        topics: topics
            .into_iter()
            .map(|(name, partitions)| ListOffsetsTopic {
                name: name.to_owned(),
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

/// Takes a leader's ListOffsets answer: results for the partitions it answered, and whether
/// some must be asked again (their leader moved, or the error is retriable).
pub(super) fn offsets_listed(op: &mut ListOffsetsOp, body: ResponseBody) -> Option<String> {
    // (topic, partition, error, offset): the listed offset, or the new log start.
    let answers: Vec<(String, i32, i16, i64)> = match body {
        ResponseBody::ListOffsets(r) => r
            .topics
            .into_iter()
            .flat_map(|t| {
                let name = t.name;
                t.partitions
                    .into_iter()
                    .map(move |p| (name.clone(), p.partition_index, p.error_code, p.offset))
            })
            .collect(),
        ResponseBody::DeleteRecords(r) => r
            .topics
            .into_iter()
            .flat_map(|t| {
                let name = t.name;
                t.partitions.into_iter().map(move |p| {
                    (
                        name.clone(),
                        p.partition_index,
                        p.error_code,
                        p.low_watermark,
                    )
                })
            })
            .collect(),
        _ => return Some("an answer of another kind".into()),
    };
    let mut again = None;
    for (topic, partition, error_code, offset) in answers {
        {
            let tp = (topic, partition);
            match ErrorCode::from_code(error_code) {
                None => {
                    op.results.insert(tp, Ok(offset));
                }
                Some(code) if code.is_retriable() => {
                    // The leader moved, or is not ready: learn the leaders again.
                    op.leaders = None;
                    again = Some(format!("{}-{}: {code}", tp.0, tp.1));
                }
                Some(code) => {
                    op.results.insert(
                        tp,
                        Err(AdminError::Broker {
                            code,
                            message: None,
                        }),
                    );
                }
            }
        }
    }
    again
}

/// Tags of the requests group operations send.
pub(super) fn find_tag(op: OpId) -> Tag {
    Tag::Find(op)
}

/// The node id that stands for an operation's lookup (FindCoordinator, Metadata) among the
/// brokers it has requests at.
const LOOKUP: NodeId = -1;
