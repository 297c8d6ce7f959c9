//! The consumer's group membership under either protocol (`group.protocol`): the classic
//! one ([`Membership`]) or KIP-848's ([`ConsumerMembership`]), behind one face for the
//! fetcher, which drives both the same way.

use std::collections::{BTreeMap, BTreeSet};

use kafka_proto::api::ResponseBody;

use super::consumer_member::{ConsumerMembership, Subscription};
use super::membership::{GroupEvent, GroupRequest, Membership, Target};
use super::TopicPartition;
use crate::config::{ConsumerConfig, GroupProtocol, HostPort};
use crate::metadata::Metadata;
use crate::net::NodeId;
use crate::time::Instant;

/// A member of a consumer group, under the protocol its config chose.
#[derive(Debug)]
#[non_exhaustive]
pub enum Member {
    /// JoinGroup and SyncGroup; a member assigns.
    Classic(Membership),
    /// ConsumerGroupHeartbeat (KIP-848); the broker assigns.
    Consumer(ConsumerMembership),
}

/// Forwards a call to whichever protocol's membership this is.
macro_rules! each {
    ($self:expr, $m:ident => $e:expr) => {
        match $self {
            Member::Classic($m) => $e,
            Member::Consumer($m) => $e,
        }
    };
}

impl Member {
    /// A membership for `cfg.group_id` (which must be set), under `cfg.group_protocol`.
    pub fn new(cfg: &ConsumerConfig) -> Option<Member> {
        Some(match cfg.group_protocol {
            GroupProtocol::Consumer => Member::Consumer(ConsumerMembership::new(cfg)?),
            _ => Member::Classic(Membership::new(cfg)?),
        })
    }

    /// Subscribes to topics by name.
    pub fn subscribe(&mut self, topics: Vec<String>, now: Instant) {
        match self {
            Member::Classic(m) => m.subscribe(topics, now),
            Member::Consumer(m) => m.subscribe(Subscription::Topics(topics), now),
        }
    }

    /// Under the consumer protocol, subscribes to the topics matching `pattern`, evaluated by
    /// the broker. The classic protocol matches patterns against metadata itself, and
    /// subscribes by name ([`Member::subscribe`]): this returns false there.
    pub fn subscribe_pattern(&mut self, pattern: &str, now: Instant) -> bool {
        match self {
            Member::Classic(_) => false,
            Member::Consumer(m) => {
                m.subscribe(Subscription::Pattern(pattern.to_owned()), now);
                true
            }
        }
    }

    /// Whether the member has a subscription.
    pub fn is_subscribed(&self) -> bool {
        each!(self, m => m.is_subscribed())
    }

    /// The application polled; true if that rejoined the group.
    pub fn polled(&mut self, now: Instant) -> bool {
        each!(self, m => m.polled(now))
    }

    /// The application finished a revocation.
    pub fn revoked(&mut self, now: Instant) {
        each!(self, m => m.revoked(now))
    }

    /// Leaves the group.
    pub fn leave(&mut self, now: Instant) {
        each!(self, m => m.leave(now))
    }

    /// Whether the member is in the group or on its way in.
    pub fn is_active(&self) -> bool {
        each!(self, m => m.is_active())
    }

    /// Whether the consumer never subscribed.
    pub fn is_idle(&self) -> bool {
        each!(self, m => m.is_idle())
    }

    /// Whether commits or offset lookups need the coordinator.
    pub fn want_coordinator(&mut self, want: bool) {
        each!(self, m => m.want_coordinator(want))
    }

    /// Whether [`Member::poll_request`] may have something to send.
    pub fn needs_requests(&self) -> bool {
        each!(self, m => m.needs_requests())
    }

    /// A subscribed topic's partitions changed: a classic stable member rejoins (the
    /// consumer protocol's coordinator notices by itself). Returns whether it did.
    pub fn rejoin_needed(&mut self) -> bool {
        match self {
            Member::Classic(m) => m.rejoin_needed(),
            Member::Consumer(_) => false,
        }
    }

    /// The coordinator moved: it is found again.
    pub fn forget_coordinator(&mut self) {
        each!(self, m => m.forget_coordinator())
    }

    /// The partitions owned now.
    pub fn owned(&self) -> Vec<TopicPartition> {
        match self {
            Member::Classic(m) => m.owned().to_vec(),
            Member::Consumer(m) => m.owned(),
        }
    }

    /// The generation (classic) or member epoch (consumer protocol), and the member id.
    pub fn generation(&self) -> (i32, &str) {
        each!(self, m => m.generation())
    }

    /// The group metadata a transaction's offsets carry.
    pub fn group_metadata(&self) -> super::GroupMetadata {
        each!(self, m => m.group_metadata())
    }

    /// The coordinator, once found.
    pub fn coordinator(&self) -> Option<&(NodeId, HostPort)> {
        each!(self, m => m.coordinator())
    }

    /// Whether a revocation awaits [`Member::revoked`].
    pub fn is_revoking(&self) -> bool {
        each!(self, m => m.is_revoking())
    }

    /// Whether the member may commit (a live generation or epoch).
    pub fn is_stable(&self) -> bool {
        each!(self, m => m.is_stable())
    }

    /// As a classic leader: the topics the assignment needs partition counts of.
    pub fn topics_to_assign(&self) -> Option<BTreeSet<String>> {
        match self {
            Member::Classic(m) => m.topics_to_assign(),
            Member::Consumer(_) => None,
        }
    }

    /// As a classic leader: assigns from partition counts.
    pub fn assign(&mut self, counts: &BTreeMap<String, i32>, now: Instant) {
        if let Member::Classic(m) = self {
            m.assign(counts, now);
        }
    }

    /// Under the consumer protocol: moves towards the broker's assignment, naming its
    /// topics from `metadata`.
    pub fn reconcile(&mut self, metadata: &mut Metadata, now: Instant) {
        if let Member::Consumer(m) = self {
            m.reconcile(metadata, now);
        }
    }

    /// The next request, and where.
    pub fn poll_request(&mut self, now: Instant) -> Option<(Target, GroupRequest)> {
        each!(self, m => m.poll_request(now))
    }

    /// The request in flight failed.
    pub fn handle_failure(&mut self, now: Instant) {
        each!(self, m => m.handle_failure(now))
    }

    /// The request could not be sent: no version both sides speak. Fatal under the consumer
    /// protocol (the broker predates KIP-848); otherwise as a failure.
    pub fn handle_unsupported(&mut self, now: Instant) {
        match self {
            Member::Classic(m) => m.handle_failure(now),
            Member::Consumer(m) => m.unsupported(),
        }
    }

    /// The response to the request in flight.
    pub fn handle_response(&mut self, body: ResponseBody, now: Instant) {
        each!(self, m => m.handle_response(body, now))
    }

    /// Time passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        each!(self, m => m.handle_timeout(now))
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<GroupEvent> {
        each!(self, m => m.poll_event())
    }

    /// Every time the membership wants to be woken at.
    pub fn deadlines(&self) -> impl Iterator<Item = Instant> + '_ {
        let (classic, consumer) = match self {
            Member::Classic(m) => (Some(m.deadlines()), None),
            Member::Consumer(m) => (None, Some(m.deadlines())),
        };
        let classic = classic.into_iter().flatten();
        classic.chain(consumer.into_iter().flatten())
    }
}
