//! Consumer groups, as sans-IO sub-machines that a consumer drives: the classic protocol's
//! assignors and the ConsumerProtocol payloads they read and write, the membership under
//! either protocol (classic: join, sync, heartbeat, leave; KIP-848: ConsumerGroupHeartbeat),
//! and committed offsets (fetch and commit).

pub mod assignor;
pub mod consumer_member;
pub mod member;
pub mod membership;
pub mod offsets;
pub mod payload;

pub use assignor::{Assignment, Assignor, MemberSubscription, RebalanceProtocol, TopicPartition};

/// The leader's view of a member for assignment, by its old name (beside `member::Member`,
/// the membership itself, it read as the same thing).
#[deprecated(since = "0.1.0", note = "renamed `MemberSubscription`")]
pub type Member = MemberSubscription;

pub(crate) use crate::coordinator::{find_coordinator_request, found_coordinator};

/// What a consumer's group says about the member whose progress a transaction commits
/// (KIP-447): the group coordinator refuses offsets from a member of an older generation, so a
/// zombie's transaction cannot commit its input offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The group generation the member is in, or -1 outside group management.
    pub generation_id: i32,
    /// The member id the coordinator gave, or empty.
    pub member_id: String,
    /// `group.instance.id`, for static members.
    pub group_instance_id: Option<String>,
}

impl GroupMetadata {
    /// The metadata of a group the caller is not a member of (offsets checked by group only,
    /// as before KIP-447).
    pub fn new(group_id: impl Into<String>) -> Self {
        GroupMetadata {
            group_id: group_id.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }
}
