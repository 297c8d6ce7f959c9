//! The simulated cluster's topic administration: CreateTopics and DeleteTopics, applied at once
//! (a real cluster's controller takes a moment; the client's retries cover that on Kafka).

use kafka_proto::api::ResponseBody;
use kafka_proto::messages::create_topics_request::CreateTopicsRequest;
use kafka_proto::messages::create_topics_response::{CreatableTopicResult, CreateTopicsResponse};
use kafka_proto::messages::delete_topics_request::DeleteTopicsRequest;
use kafka_proto::messages::delete_topics_response::{DeletableTopicResult, DeleteTopicsResponse};
use uuid::Uuid;

use super::partition::Partition;
use super::SimCluster;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const TOPIC_ALREADY_EXISTS: i16 = 36;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_REPLICATION_FACTOR: i16 = 38;

impl SimCluster {
    pub(super) fn create_topics(&mut self, req: &CreateTopicsRequest) -> ResponseBody {
        // Kafka places replicas only on brokers that are up (unfenced).
        let brokers: Vec<i32> = self.up.iter().copied().collect();
        let mut results = Vec::new();
        for t in &req.topics {
            let partitions = if t.num_partitions == -1 {
                1
            } else {
                t.num_partitions
            };
            let rf = if t.replication_factor == -1 {
                self.cfg.replication
            } else {
                i32::from(t.replication_factor)
            };
            let error = if self.topics.contains_key(&t.name) {
                TOPIC_ALREADY_EXISTS
            } else if !(1..=1000).contains(&partitions) {
                INVALID_PARTITIONS
            } else if rf < 1 || rf as usize > brokers.len() {
                INVALID_REPLICATION_FACTOR
            } else {
                0
            };
            let mut result = CreatableTopicResult {
                name: t.name.clone(),
                error_code: error,
                ..Default::default()
            };
            if error == 0 {
                self.created_topics += 1;
                let id = Uuid::from_u64_pair(self.picks | 1, 1000 + self.created_topics);
                let start = self.pick() % brokers.len();
                let parts = (0..partitions)
                    .map(|p| {
                        let replicas: Vec<i32> = (0..rf as usize)
                            .map(|r| brokers[(start + p as usize + r) % brokers.len()])
                            .collect();
                        Partition::new(&replicas)
                    })
                    .collect();
                if !req.validate_only {
                    self.topics.insert(t.name.clone(), (id, parts));
                }
                result.topic_id = id;
                result.num_partitions = partitions;
                result.replication_factor = rf as i16;
            }
            results.push(result);
        }
        ResponseBody::CreateTopics(CreateTopicsResponse {
            topics: results,
            ..Default::default()
        })
    }

    pub(super) fn delete_topics(&mut self, req: &DeleteTopicsRequest) -> ResponseBody {
        // v6+ names topics by name or id; older versions by name.
        let named: Vec<(Option<String>, Uuid)> = if req.topics.is_empty() {
            req.topic_names
                .iter()
                .map(|n| (Some(n.clone()), Uuid::nil()))
                .collect()
        } else {
            req.topics
                .iter()
                .map(|t| (t.name.clone(), t.topic_id))
                .collect()
        };
        let responses = named
            .into_iter()
            .map(|(name, id)| {
                let name = name.unwrap_or_else(|| self.topic_name(id, ""));
                match self.topics.remove(&name) {
                    Some((id, _)) => DeletableTopicResult {
                        name: Some(name),
                        topic_id: id,
                        ..Default::default()
                    },
                    None => DeletableTopicResult {
                        name: Some(name),
                        topic_id: id,
                        error_code: UNKNOWN_TOPIC_OR_PARTITION,
                        ..Default::default()
                    },
                }
            })
            .collect();
        ResponseBody::DeleteTopics(DeleteTopicsResponse {
            responses,
            ..Default::default()
        })
    }
}
