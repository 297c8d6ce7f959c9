//! The client's view of the cluster: brokers, the topics it uses, their partitions' leaders and
//! leader epochs, and when to refresh that view.
//!
//! - Only topics the client uses are requested (never "all topics").
//! - A refresh is due when metadata is first needed, when `metadata.max.age.ms` has passed, when
//!   a topic is unknown, or when a caller saw a leadership error; failed refreshes back off.
//! - Partition metadata with a leader epoch older than the one known is stale and ignored.
//! - KIP-951 leader hints from Produce and Fetch errors are applied at once.
//! - A topic whose id changes was deleted and recreated, and is reported as such.
//! - Topics unused for `metadata.max.idle.ms` are dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_proto::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_proto::messages::metadata_response::{MetadataResponse, MetadataResponseTopic};
use kafka_proto::ErrorCode;
use uuid::Uuid;

use crate::backoff::Backoff;
use crate::config::HostPort;
use crate::net::NodeId;
use crate::rng::Rng;
use crate::time::Instant;
use crate::topic::{Topic, TopicKey};

/// One partition as metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// The leader, if the partition has one.
    pub leader: Option<NodeId>,
    /// The leader epoch (-1 if the broker does not say).
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<NodeId>,
    /// In-sync replica node ids.
    pub isr: Vec<NodeId>,
    /// A partition-level error, such as LEADER_NOT_AVAILABLE.
    pub error: Option<ErrorCode>,
}

/// One topic as metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// The topic id (nil from brokers before Kafka 2.8).
    pub id: Uuid,
    /// Partitions by index.
    pub partitions: Vec<PartitionInfo>,
}

/// What changed in a metadata update, for the producer and fetcher to act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataUpdate {
    /// Topics that failed with an error that retrying will not fix (for example
    /// TOPIC_AUTHORIZATION_FAILED or INVALID_TOPIC_EXCEPTION).
    pub topic_errors: Vec<(String, ErrorCode)>,
    /// Topics whose id changed: deleted and recreated since last seen.
    pub recreated: Vec<String>,
    /// Partition metadata ignored because its leader epoch was older than the known one.
    pub stale_partitions: usize,
}

#[derive(Debug, Clone)]
struct Wanted {
    last_used: Instant,
}

/// The metadata cache and its refresh schedule.
#[derive(Debug)]
pub struct Metadata {
    brokers: BTreeMap<NodeId, HostPort>,
    /// Keyed by the `Topic` a caller marked used (see [`Metadata::use_shared_topic`]): a
    /// producer's records sharing that allocation find their topic by one pointer compare,
    /// where comparing names cost its hot path about 40 instructions a record.
    topics: BTreeMap<Topic, TopicInfo>,
    wanted: BTreeMap<Topic, Wanted>,
    cluster_id: Option<String>,
    max_age: Duration,
    max_idle: Duration,
    backoff: Backoff,
    rng: Rng,
    /// When the last successful refresh completed.
    refreshed_at: Option<Instant>,
    /// A refresh was asked for (unknown topic, leadership error).
    update_requested: bool,
    /// A topic was added: refresh at once, without the backoff.
    new_topic: bool,
    failures: u32,
    retry_at: Option<Instant>,
    in_flight: bool,
    /// Counts removals from `wanted`: a caller remembering that it marked a topic used knows
    /// the mark still stands while this is unchanged.
    removals: u64,
    /// Counts the responses applied.
    responses: u64,
    /// Topic names by id, of every topic any answer named: a KIP-848 assignment names topics
    /// by id only.
    names: BTreeMap<Uuid, String>,
    /// The next refresh lists every topic (to learn the names of ids not known yet).
    all_topics: bool,
    /// Every refresh lists every topic (a pattern subscription matches against the list).
    list_all: bool,
    /// The refresh in flight lists every topic.
    listing: bool,
    /// The names of the non-internal topics the last listing of every topic gave.
    listed: BTreeSet<String>,
}

impl Metadata {
    /// A cache refreshing at least every `max_age`, dropping topics idle for `max_idle`, and
    /// backing off failed or rapid refreshes with `backoff` (Java uses the retry backoff).
    pub fn new(max_age: Duration, max_idle: Duration, backoff: Backoff, seed: u64) -> Self {
        Metadata {
            brokers: BTreeMap::new(),
            topics: BTreeMap::new(),
            wanted: BTreeMap::new(),
            cluster_id: None,
            max_age,
            max_idle,
            backoff,
            rng: Rng::new(seed ^ 0x6d65_7461),
            refreshed_at: None,
            update_requested: false,
            new_topic: false,
            failures: 0,
            retry_at: None,
            in_flight: false,
            removals: 0,
            responses: 0,
            names: BTreeMap::new(),
            all_topics: false,
            list_all: false,
            listing: false,
            listed: BTreeSet::new(),
        }
    }

    /// Whether every refresh lists every topic (for a pattern subscription, as Java does);
    /// turning it on asks for a refresh at once.
    pub fn set_list_all(&mut self, on: bool) {
        if on && !self.list_all {
            self.new_topic = true;
            self.update_requested = true;
        }
        self.list_all = on;
    }

    /// The non-internal topics the last listing of every topic named.
    pub fn listed(&self) -> &BTreeSet<String> {
        &self.listed
    }

    /// The name of the topic with this id, if an answer named it.
    pub fn topic_name(&self, id: Uuid) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }

    /// Asks for a refresh that lists every topic (after `retry.backoff.ms` since the last
    /// one, as any requested update): a group assigned topics by id that
    /// no answer has named yet (a topic created since, or one a pattern matched).
    pub fn request_all_topics(&mut self) {
        self.all_topics = true;
        self.update_requested = true;
    }

    /// When the last successful refresh completed (`None`: never).
    pub fn refreshed_at(&self) -> Option<Instant> {
        self.refreshed_at
    }

    /// Changes whenever a topic stops being wanted (idle too long, or a fatal topic error):
    /// only then may a topic marked by [`Metadata::use_topic`] need marking again sooner than
    /// `max_idle`.
    pub fn removals(&self) -> u64 {
        self.removals
    }

    /// Changes whenever a partition may have lost its leader (a response applied, a topic
    /// dropped): a caller that remembers which partitions had none knows the list still
    /// holds, except for leaders found since (a leader hint only ever sets one).
    pub fn generation(&self) -> u64 {
        self.responses + self.removals
    }

    /// Notes that the client uses `topic` now. An unknown topic asks for a refresh.
    pub fn use_topic(&mut self, topic: &str, now: Instant) {
        match self.wanted.get_mut(topic) {
            Some(w) => w.last_used = now,
            None => self.want(Topic::from(topic), now),
        }
    }

    /// [`use_topic`](Self::use_topic) with a shared name: a new topic's metadata is kept
    /// under this allocation, so [`topic_shared`](Self::topic_shared) with its clones finds it
    /// by pointer.
    pub fn use_shared_topic(&mut self, topic: &Topic, now: Instant) {
        match self.wanted.get_mut(topic) {
            Some(w) => w.last_used = now,
            None => self.want(topic.clone(), now),
        }
    }

    fn want(&mut self, topic: Topic, now: Instant) {
        self.wanted.insert(topic, Wanted { last_used: now });
        self.update_requested = true;
        self.new_topic = true;
    }

    /// Asks for a refresh, after a leadership error for example.
    pub fn request_update(&mut self) {
        self.update_requested = true;
    }

    /// When a refresh is next due, or `None` if nothing is wanted.
    pub fn next_refresh(&self) -> Option<Instant> {
        if self.in_flight || (self.wanted.is_empty() && !self.all_topics && !self.list_all) {
            return None;
        }
        let due = match self.refreshed_at {
            None => Instant::ZERO,
            // As Java: a new topic is asked about at once; any other requested update waits
            // retry.backoff.ms after the last refresh, so that a leader not elected yet is not
            // asked about in a loop.
            Some(_) if self.new_topic => Instant::ZERO,
            Some(t) if self.update_requested => t + self.backoff.base(),
            Some(t) => t + self.max_age,
        };
        Some(self.retry_at.map_or(due, |r| r.max(due)))
    }

    /// The request to send if a refresh is due at `now` (the caller sends it and reports back
    /// with [`Metadata::handle_response`] or [`Metadata::handle_failure`]).
    pub fn poll_request(&mut self, now: Instant) -> Option<MetadataRequest> {
        self.expire(now);
        if self.next_refresh()? > now {
            return None;
        }
        self.in_flight = true;
        self.update_requested = false;
        self.new_topic = false;
        let all = std::mem::take(&mut self.all_topics) || self.list_all;
        self.listing = all;
        Some(MetadataRequest {
            topics: (!all).then(|| {
                self.wanted
                    .keys()
                    .map(|t| MetadataRequestTopic {
                        name: Some(t.to_string()),
                        ..Default::default()
                    })
                    .collect()
            }),
            allow_auto_topic_creation: true,
            ..Default::default()
        })
    }

    fn expire(&mut self, now: Instant) {
        let idle = self.max_idle;
        let topics = &mut self.topics;
        let before = self.wanted.len();
        self.wanted.retain(|t, w| {
            let keep = w.last_used + idle > now;
            if !keep {
                topics.remove(t);
            }
            keep
        });
        self.removals += (before - self.wanted.len()) as u64;
    }

    /// The refresh failed (no response); back off before the next.
    pub fn handle_failure(&mut self, now: Instant) {
        self.in_flight = false;
        self.listing = false;
        self.update_requested = true;
        self.retry_at = Some(now + self.backoff.delay(self.failures, &mut self.rng));
        self.failures = self.failures.saturating_add(1);
    }

    /// Applies a Metadata response.
    pub fn handle_response(&mut self, resp: &MetadataResponse, now: Instant) -> MetadataUpdate {
        if resp.error_code != 0 {
            // A top-level error (Metadata v13+; REBOOTSTRAP_REQUIRED, after which the
            // network has started over from bootstrap.servers): nothing in it is metadata.
            tracing::debug!(
                error = ?kafka_proto::ErrorCode::from_code(resp.error_code),
                "metadata refused"
            );
            self.handle_failure(now);
            return MetadataUpdate::default();
        }
        self.responses += 1;
        self.in_flight = false;
        self.failures = 0;
        self.retry_at = None;
        self.refreshed_at = Some(now);
        tracing::debug!(
            brokers = resp.brokers.len(),
            topics = resp.topics.len(),
            controller = resp.controller_id,
            "metadata refreshed"
        );
        let mut update = MetadataUpdate::default();
        if !resp.brokers.is_empty() {
            self.brokers = broker_addresses(resp).collect();
        }
        self.cluster_id.clone_from(&resp.cluster_id);
        if std::mem::take(&mut self.listing) {
            self.listed = resp
                .topics
                .iter()
                .filter(|t| t.error_code == 0 && !t.is_internal)
                .filter_map(|t| t.name.clone())
                .collect();
        }
        for t in &resp.topics {
            let Some(name) = t.name.clone() else { continue };
            if !t.topic_id.is_nil() && t.error_code == 0 {
                self.names.insert(t.topic_id, name.clone());
            }
            if !self.wanted.contains_key(name.as_str()) {
                continue;
            }
            match ErrorCode::from_code(t.error_code) {
                None => {}
                Some(e) if e.is_retriable() => {
                    // Not there yet (being created, leader election): try again soon.
                    self.update_requested = true;
                    continue;
                }
                Some(e) => {
                    update.topic_errors.push((name, e));
                    continue;
                }
            }
            let Some(new) = topic_info(t) else {
                // Gaps in partition numbering: incomplete metadata, ask again.
                self.update_requested = true;
                continue;
            };
            // Under the wanted entry's allocation (see `topics`).
            let key = match self.wanted.get_key_value(name.as_str()) {
                Some((k, _)) => k.clone(),
                None => Topic::from(name),
            };
            self.merge(key, new, &mut update);
        }
        // Fatal errors are reported once; those topics stop asking for refreshes.
        for (t, _) in &update.topic_errors {
            if self.wanted.remove(t.as_str()).is_some() {
                self.removals += 1;
            }
        }
        update
    }

    /// Takes a topic's new partition metadata: all of it when the topic is new or was
    /// recreated (a new id), else partition by partition, keeping what is newer than it (a
    /// lagging broker's older leader epochs; counted, and asked again).
    fn merge(&mut self, name: Topic, new: TopicInfo, update: &mut MetadataUpdate) {
        match self.topics.get_mut(&name) {
            Some(old) if !old.id.is_nil() && !new.id.is_nil() && old.id != new.id => {
                update.recreated.push(name.to_string());
                *old = new;
            }
            Some(old) => {
                for (i, p) in new.partitions.into_iter().enumerate() {
                    match old.partitions.get_mut(i) {
                        Some(o) if p.leader_epoch >= 0 && p.leader_epoch < o.leader_epoch => {
                            update.stale_partitions += 1;
                            self.update_requested = true;
                        }
                        Some(o) => *o = p,
                        None => old.partitions.push(p),
                    }
                }
                if !new.id.is_nil() {
                    old.id = new.id;
                }
            }
            None => {
                self.topics.insert(name, new);
            }
        }
    }

    /// Applies a KIP-951 leader hint from a Produce or Fetch error response, unless it is older
    /// than what is known.
    pub fn apply_leader_hint(
        &mut self,
        topic: &str,
        partition: i32,
        leader: NodeId,
        epoch: i32,
        node: Option<HostPort>,
    ) -> bool {
        if let (Some(addr), true) = (node, leader >= 0) {
            self.brokers.entry(leader).or_insert(addr);
        }
        let Some(p) = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(usize::try_from(partition).ok()?))
        else {
            return false;
        };
        if epoch < p.leader_epoch || leader < 0 {
            return false;
        }
        p.leader = Some(leader);
        p.leader_epoch = epoch;
        true
    }

    /// The known brokers.
    pub fn brokers(&self) -> &BTreeMap<NodeId, HostPort> {
        &self.brokers
    }

    /// The known brokers as (node, address) pairs, for [`crate::net::Network::update_nodes`].
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, HostPort)> + '_ {
        self.brokers.iter().map(|(n, a)| (*n, a.clone()))
    }

    /// A topic's metadata, if known.
    pub fn topic(&self, topic: &(impl TopicKey + ?Sized)) -> Option<&TopicInfo> {
        topic.find(&self.topics)
    }

    /// [`topic`](Self::topic) by a shared name: found by pointer when it shares the
    /// allocation of the `Topic` given to [`use_shared_topic`](Self::use_shared_topic).
    // Always inlined: called for every record, and whether the compiler inlined it (and the
    // tree search in it) moved with unrelated changes elsewhere, by 30 instructions a record.
    #[inline(always)]
    pub fn topic_shared(&self, topic: &Topic) -> Option<&TopicInfo> {
        self.topics.get(topic)
    }

    /// A partition's leader, if known.
    pub fn leader(&self, topic: &(impl TopicKey + ?Sized), partition: i32) -> Option<NodeId> {
        topic
            .find(&self.topics)?
            .partitions
            .get(usize::try_from(partition).ok()?)?
            .leader
    }

    /// A partition's leader epoch, if known (brokers before KIP-320 send -1).
    pub fn leader_epoch(&self, topic: &(impl TopicKey + ?Sized), partition: i32) -> Option<i32> {
        let p = topic
            .find(&self.topics)?
            .partitions
            .get(usize::try_from(partition).ok()?)?;
        (p.leader_epoch >= 0).then_some(p.leader_epoch)
    }

    /// The cluster id, if the broker sent one.
    pub fn cluster_id(&self) -> Option<&str> {
        self.cluster_id.as_deref()
    }
}

/// The brokers a Metadata response lists, with their addresses (a port outside u16 skips the
/// broker).
pub(crate) fn broker_addresses(
    resp: &MetadataResponse,
) -> impl Iterator<Item = (NodeId, HostPort)> + '_ {
    resp.brokers.iter().filter_map(|b| {
        let port = u16::try_from(b.port).ok()?;
        Some((b.node_id, HostPort::new(b.host.clone(), port)))
    })
}

/// A topic's partitions from a Metadata response, by partition number; `None` when the
/// numbering has gaps (incomplete metadata).
fn topic_info(t: &MetadataResponseTopic) -> Option<TopicInfo> {
    let mut partitions: Vec<(i32, PartitionInfo)> = (t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                PartitionInfo {
                    leader: (p.leader_id >= 0).then_some(p.leader_id),
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.clone(),
                    isr: p.isr_nodes.clone(),
                    error: ErrorCode::from_code(p.error_code),
                },
            )
        })
        .collect();
    partitions.sort_by_key(|p| p.0);
    if partitions.iter().enumerate().any(|(i, p)| p.0 != i as i32) {
        return None;
    }
    Some(TopicInfo {
        id: t.topic_id,
        partitions: partitions.into_iter().map(|p| p.1).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_proto::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };

    fn md() -> Metadata {
        Metadata::new(
            Duration::from_secs(300),
            Duration::from_secs(300),
            Backoff::new(Duration::from_millis(100), Duration::from_millis(1000)),
            1,
        )
    }

    fn resp(topic: &str, id: u128, leaders: &[(i32, i32)], error: i16) -> MetadataResponse {
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: "a".into(),
                port: 9092,
                ..Default::default()
            }],
            topics: vec![MetadataResponseTopic {
                name: Some(topic.into()),
                topic_id: Uuid::from_u128(id),
                error_code: error,
                partitions: leaders
                    .iter()
                    .enumerate()
                    .map(|(i, (leader, epoch))| MetadataResponsePartition {
                        partition_index: i as i32,
                        leader_id: *leader,
                        leader_epoch: *epoch,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn refreshes_when_first_needed_then_at_max_age() {
        let mut m = md();
        let t0 = Instant::from_millis(1000);
        assert!(
            m.poll_request(t0).is_none(),
            "nothing wanted, nothing requested"
        );
        m.use_topic("t", t0);
        let req = m.poll_request(t0).expect("first use refreshes");
        let names: Vec<_> = req
            .topics
            .unwrap()
            .into_iter()
            .map(|t| t.name.unwrap())
            .collect();
        assert_eq!(names, ["t"], "only the topics in use, never all");
        assert!(m.poll_request(t0).is_none(), "one refresh at a time");
        m.handle_response(&resp("t", 1, &[(1, 0), (1, 0)], 0), t0);
        assert_eq!(m.leader("t", 1), Some(1));
        assert_eq!(m.brokers()[&1], HostPort::new("a", 9092));
        assert_eq!(m.next_refresh(), Some(t0 + Duration::from_secs(300)));
        assert!(m.poll_request(t0 + Duration::from_secs(299)).is_none());
        m.use_topic("t", t0 + Duration::from_secs(299));
        assert!(m.poll_request(t0 + Duration::from_secs(300)).is_some());
    }

    #[test]
    fn unknown_topics_and_leadership_errors_refresh_with_backoff_on_failure() {
        let mut m = md();
        let now = Instant::from_millis(10);
        m.use_topic("t", now);
        m.poll_request(now).unwrap();
        m.handle_failure(now);
        let retry = m.next_refresh().unwrap();
        let wait = (retry - now).as_millis();
        assert!((80..=120).contains(&wait), "{wait}");
        assert!(m.poll_request(now).is_none());
        m.poll_request(retry).unwrap();
        // Being created: retriable, asks again.
        m.handle_response(&resp("t", 1, &[], 3), retry);
        let again = retry + Duration::from_millis(100);
        assert_eq!(
            m.next_refresh(),
            Some(again),
            "asks again after retry.backoff.ms"
        );
        m.poll_request(again).unwrap();
        m.handle_response(&resp("t", 1, &[(1, 5)], 0), again);
        m.request_update();
        assert!(m.poll_request(again).is_none(), "not in a loop");
        assert!(
            m.poll_request(again + Duration::from_millis(100)).is_some(),
            "a leadership error refreshes after retry.backoff.ms"
        );
        m.handle_response(
            &resp("t", 1, &[(1, 5)], 0),
            again + Duration::from_millis(100),
        );
        m.use_topic("new", again + Duration::from_millis(101));
        assert!(
            m.poll_request(again + Duration::from_millis(101)).is_some(),
            "a new topic is asked about at once"
        );
    }

    #[test]
    fn stale_epochs_are_ignored_and_hints_applied() {
        let mut m = md();
        let now = Instant::ZERO;
        m.use_topic("t", now);
        m.poll_request(now);
        m.handle_response(&resp("t", 1, &[(1, 5)], 0), now);
        m.request_update();
        let now = now + Duration::from_millis(100);
        m.poll_request(now).unwrap();
        let u = m.handle_response(&resp("t", 1, &[(2, 4)], 0), now);
        assert_eq!(u.stale_partitions, 1);
        assert_eq!(m.leader("t", 0), Some(1), "epoch 4 < 5: ignored");
        // KIP-951: a newer leader from a produce error applies at once; an older one does not.
        assert!(m.apply_leader_hint("t", 0, 3, 6, None));
        assert_eq!(m.leader("t", 0), Some(3));
        assert!(!m.apply_leader_hint("t", 0, 1, 5, None));
        assert_eq!(m.leader("t", 0), Some(3));
    }

    #[test]
    fn recreated_topics_and_fatal_errors_are_reported() {
        let mut m = md();
        let now = Instant::ZERO;
        m.use_topic("t", now);
        m.poll_request(now);
        m.handle_response(&resp("t", 1, &[(1, 5)], 0), now);
        m.request_update();
        let now = now + Duration::from_millis(100);
        m.poll_request(now).unwrap();
        let u = m.handle_response(&resp("t", 2, &[(1, 0)], 0), now);
        assert_eq!(u.recreated, ["t"]);
        assert_eq!(m.topic("t").unwrap().id, Uuid::from_u128(2));
        assert_eq!(
            m.leader("t", 0),
            Some(1),
            "a recreated topic starts its epochs over"
        );

        m.use_topic("secret", now);
        m.poll_request(now);
        let u = m.handle_response(&resp("secret", 3, &[], 29), now);
        assert_eq!(
            u.topic_errors,
            [("secret".to_string(), ErrorCode::TopicAuthorizationFailed)]
        );
    }

    #[test]
    fn idle_topics_expire() {
        let mut m = md();
        m.use_topic("t", Instant::ZERO);
        m.poll_request(Instant::ZERO);
        m.handle_response(&resp("t", 1, &[(1, 0)], 0), Instant::ZERO);
        assert!(m.poll_request(Instant::from_millis(300_000)).is_none());
        assert!(m.topic("t").is_none(), "unused for metadata.max.idle.ms");
        assert_eq!(m.next_refresh(), None);
    }
}
