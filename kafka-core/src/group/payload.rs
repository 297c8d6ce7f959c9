//! Between the ConsumerProtocol payloads carried in JoinGroup/SyncGroup and the assignors'
//! types: what a member says it subscribes to and owns, and what the leader assigns it.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_proto::consumer_protocol::{
    ConsumerPayload, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
};
use kafka_proto::messages::{
    consumer_protocol_assignment as pa, consumer_protocol_subscription as ps,
};
use kafka_proto::{DecodeError, EncodeError};

use super::assignor::{MemberSubscription, TopicPartition};

/// The Subscription version we write: v3 (owned partitions, generation, rack), which Java 3.x
/// and librdkafka read; older readers ignore the fields they do not know.
pub const SUBSCRIPTION_VERSION: i16 = 3;
/// The Assignment version we write.
pub const ASSIGNMENT_VERSION: i16 = 3;

fn group(tps: &[TopicPartition]) -> BTreeMap<&str, Vec<i32>> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in tps {
        by_topic.entry(t.as_str()).or_default().push(*p);
    }
    by_topic
}

/// A member's JoinGroup metadata.
pub fn encode_subscription(
    topics: &[String],
    owned: &[TopicPartition],
    generation: i32,
    rack: Option<&str>,
) -> Result<Bytes, EncodeError> {
    let sub = ConsumerProtocolSubscription {
        topics: topics.to_vec(),
        owned_partitions: group(owned)
            .into_iter()
            .map(|(topic, partitions)| ps::TopicPartition {
                topic: topic.to_owned(),
                partitions,
                ..Default::default()
            })
            .collect(),
        generation_id: generation,
        rack_id: rack.map(str::to_owned),
        ..Default::default()
    };
    sub.encode_payload(SUBSCRIPTION_VERSION)
}

/// The leader's view of a member from its JoinGroup metadata.
pub fn decode_member(
    id: &str,
    instance_id: Option<&str>,
    metadata: &Bytes,
) -> Result<MemberSubscription, DecodeError> {
    let (_, sub) = ConsumerProtocolSubscription::decode_payload(metadata)?;
    Ok(MemberSubscription {
        id: id.to_owned(),
        instance_id: instance_id.map(str::to_owned),
        topics: sub.topics,
        owned: sub
            .owned_partitions
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic;
                t.partitions.into_iter().map(move |p| (topic.clone(), p))
            })
            .collect(),
        generation: sub.generation_id,
    })
}

/// What the leader sends a member in SyncGroup.
pub fn encode_assignment(partitions: &[TopicPartition]) -> Result<Bytes, EncodeError> {
    let a = ConsumerProtocolAssignment {
        assigned_partitions: group(partitions)
            .into_iter()
            .map(|(topic, partitions)| pa::TopicPartition {
                topic: topic.to_owned(),
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    a.encode_payload(ASSIGNMENT_VERSION)
}

/// A member's partitions from its SyncGroup answer (empty bytes: nothing assigned).
pub fn decode_assignment(bytes: &Bytes) -> Result<Vec<TopicPartition>, DecodeError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let (_, a) = ConsumerProtocolAssignment::decode_payload(bytes)?;
    let mut out: Vec<TopicPartition> = a
        .assigned_partitions
        .into_iter()
        .flat_map(|t| {
            let topic = t.topic;
            t.partitions.into_iter().map(move |p| (topic.clone(), p))
        })
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let owned = vec![
            ("a".to_owned(), 2),
            ("a".to_owned(), 0),
            ("b".to_owned(), 1),
        ];
        let bytes =
            encode_subscription(&["a".into(), "b".into()], &owned, 7, Some("rack-1")).unwrap();
        let m = decode_member("m-1", Some("i-1"), &bytes).unwrap();
        assert_eq!(m.topics, ["a", "b"]);
        assert_eq!(m.generation, 7);
        assert_eq!(m.instance_id.as_deref(), Some("i-1"));
        let mut got = m.owned.clone();
        got.sort();
        let mut want = owned;
        want.sort();
        assert_eq!(got, want);
        let assigned = vec![("b".to_owned(), 3), ("a".to_owned(), 1)];
        let back = decode_assignment(&encode_assignment(&assigned).unwrap()).unwrap();
        assert_eq!(back, [("a".to_owned(), 1), ("b".to_owned(), 3)]);
        assert!(decode_assignment(&Bytes::new()).unwrap().is_empty());
    }
}
