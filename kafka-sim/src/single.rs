//! A one-node cluster with an in-memory log: enough to produce to in examples, doctests and
//! users' own simulations. Topics are created on first use; idempotent producers are
//! deduplicated by sequence, as a real broker does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_proto::api::{RequestBody, ResponseBody};
use kafka_proto::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_proto::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_proto::messages::produce_request::ProduceRequest;
use kafka_proto::messages::produce_response::{
    PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_proto::record::RecordBatches;
use uuid::Uuid;

use crate::scripted::{Reply, ScriptedBroker};

/// A stored record: key and value.
pub type StoredRecord = (Option<Bytes>, Option<Bytes>);

#[derive(Debug, Default)]
struct State {
    host: String,
    port: i32,
    partitions: usize,
    topics: BTreeMap<String, (Uuid, Vec<Vec<StoredRecord>>)>,
    next_seq: BTreeMap<(i64, Uuid, i32), i32>,
    next_producer_id: i64,
}

/// One broker (node 1) with an in-memory log. Clone it freely: clones share the log.
#[derive(Debug, Clone)]
pub struct SingleBroker {
    state: Arc<Mutex<State>>,
}

impl SingleBroker {
    /// A broker advertising `host:port`, creating topics with `partitions` partitions.
    pub fn new(host: &str, port: u16, partitions: usize) -> Self {
        let state = State {
            host: host.to_owned(),
            port: i32::from(port),
            partitions: partitions.max(1),
            next_producer_id: 1000,
            ..Default::default()
        };
        SingleBroker {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The broker side of one new connection.
    pub fn connection(&self) -> ScriptedBroker {
        let state = self.state.clone();
        ScriptedBroker::new(move |_, body| {
            let mut s = state.lock().expect("not poisoned");
            match body {
                RequestBody::Metadata(req) => {
                    Reply::Respond(ResponseBody::Metadata(s.metadata(req)))
                }
                RequestBody::InitProducerId(_) => {
                    s.next_producer_id += 1;
                    Reply::Respond(ResponseBody::InitProducerId(InitProducerIdResponse {
                        producer_id: s.next_producer_id,
                        producer_epoch: 0,
                        ..Default::default()
                    }))
                }
                RequestBody::Produce(req) => match s.produce(req) {
                    Some(resp) => Reply::Respond(ResponseBody::Produce(resp)),
                    None => Reply::Ignore, // acks=0: no response
                },
                // Anything else is beyond this small broker: close, as a broker does on a
                // request it cannot handle.
                _ => Reply::Close,
            }
        })
    }

    /// The records of one partition, in offset order.
    pub fn records(&self, topic: &str, partition: usize) -> Vec<StoredRecord> {
        let s = self.state.lock().expect("not poisoned");
        s.topics
            .get(topic)
            .and_then(|t| t.1.get(partition))
            .cloned()
            .unwrap_or_default()
    }
}

impl State {
    fn topic(&mut self, name: &str) -> &mut (Uuid, Vec<Vec<StoredRecord>>) {
        let n = self.topics.len() as u128;
        let partitions = self.partitions;
        self.topics.entry(name.to_owned()).or_insert_with(|| {
            (
                Uuid::from_u128(0x5157_0000 + n + 1),
                vec![Vec::new(); partitions],
            )
        })
    }

    fn metadata(
        &mut self,
        req: &kafka_proto::messages::metadata_request::MetadataRequest,
    ) -> MetadataResponse {
        let names: Vec<String> = req
            .topics
            .iter()
            .flatten()
            .filter_map(|t| t.name.clone())
            .collect();
        let topics = names
            .into_iter()
            .map(|name| {
                let (id, parts) = self.topic(&name).clone();
                MetadataResponseTopic {
                    name: Some(name),
                    topic_id: id,
                    partitions: (0..parts.len() as i32)
                        .map(|p| MetadataResponsePartition {
                            partition_index: p,
                            leader_id: 1,
                            replica_nodes: vec![1],
                            isr_nodes: vec![1],
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: self.host.clone(),
                port: self.port,
                ..Default::default()
            }],
            controller_id: 1,
            topics,
            ..Default::default()
        }
    }

    fn produce(&mut self, req: &ProduceRequest) -> Option<ProduceResponse> {
        let mut responses = Vec::new();
        for t in &req.topic_data {
            let name = if t.topic_id.is_nil() {
                t.name.clone()
            } else {
                let found = self.topics.iter().find(|(_, v)| v.0 == t.topic_id);
                found.map(|(k, _)| k.clone()).unwrap_or_default()
            };
            let mut parts = Vec::new();
            for p in &t.partition_data {
                parts.push(self.append(&name, p.index, p.records.clone().unwrap_or_default()));
            }
            responses.push(TopicProduceResponse {
                name: t.name.clone(),
                topic_id: t.topic_id,
                partition_responses: parts,
                ..Default::default()
            });
        }
        (req.acks != 0).then(|| ProduceResponse {
            responses,
            ..Default::default()
        })
    }

    fn append(&mut self, topic: &str, partition: i32, data: Bytes) -> PartitionProduceResponse {
        let mut resp = PartitionProduceResponse {
            index: partition,
            base_offset: -1,
            ..Default::default()
        };
        let (id, parts) = self.topic(topic).clone();
        if partition < 0 || partition as usize >= parts.len() {
            resp.error_code = 3; // UNKNOWN_TOPIC_OR_PARTITION
            return resp;
        }
        let mut base = None;
        for batch in RecordBatches::new(data) {
            let Ok(batch) = batch else {
                resp.error_code = 2; // CORRUPT_MESSAGE
                return resp;
            };
            if batch.producer_id >= 0 {
                let key = (batch.producer_id, id, partition);
                let expected = *self.next_seq.get(&key).unwrap_or(&0);
                if batch.base_sequence < expected {
                    resp.error_code = 46; // DUPLICATE_SEQUENCE_NUMBER
                    return resp;
                }
                if batch.base_sequence > expected {
                    resp.error_code = 45; // OUT_OF_ORDER_SEQUENCE_NUMBER
                    return resp;
                }
                self.next_seq.insert(key, expected + batch.record_count);
            }
            let Ok(records) = batch.records() else {
                resp.error_code = 2;
                return resp;
            };
            let log = &mut self.topic(topic).1[partition as usize];
            base.get_or_insert(log.len() as i64);
            for r in records.flatten() {
                log.push((r.key, r.value));
            }
        }
        resp.base_offset = base.unwrap_or(-1);
        resp
    }
}
