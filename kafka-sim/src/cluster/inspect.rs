//! What a test may read of the cluster's state: leaders, watermarks, in-sync replicas,
//! committed records and offsets, group members and assignments, statistics.

use super::*;

impl SimCluster {
    /// A partition's leader, if it has one.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        self.partition(topic, partition)?.leader
    }

    /// A partition's high watermark (0 if unknown).
    pub fn high_watermark(&self, topic: &str, partition: i32) -> i64 {
        self.partition(topic, partition).map_or(0, |p| p.hw)
    }

    /// The group coordinator's broker.
    pub fn group_coordinator(&self) -> Option<i32> {
        self.coordinator_node
    }

    /// A partition's in-sync replicas.
    pub fn isr(&self, topic: &str, partition: i32) -> Vec<i32> {
        self.partition(topic, partition)
            .map_or(Vec::new(), |p| p.isr.iter().copied().collect())
    }

    /// The brokers that are up.
    pub fn up_brokers(&self) -> Vec<i32> {
        self.up.iter().copied().collect()
    }

    /// The committed records of a partition (the leader's log below the high watermark):
    /// (offset, value) in offset order.
    pub fn committed_records(&self, topic: &str, partition: i32) -> Vec<(i64, Option<Bytes>)> {
        let Some(p) = self.partition(topic, partition) else {
            return Vec::new();
        };
        let Some(log) = p
            .leader_log()
            .or_else(|| p.replicas.values().max_by_key(|r| r.leo()))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for b in &log.batches {
            if b.last >= p.hw {
                break;
            }
            if b.marker.is_some() {
                continue;
            }
            for batch in RecordBatches::new(b.bytes.clone()).flatten() {
                if let Ok(records) = batch.records() {
                    out.extend(records.flatten().map(|r| (r.offset, r.value)));
                }
            }
        }
        out
    }

    /// A group's committed (offset, leader epoch) for a partition.
    pub fn committed_offset(&self, group: &str, topic: &str, partition: i32) -> Option<(i64, i32)> {
        self.coordinator.committed(group, topic, partition)
    }

    /// A group's member ids, and whether the group is stable (every member synced to the
    /// current generation).
    pub fn group_members(&self, group: &str) -> (Vec<String>, bool) {
        self.coordinator.members(group)
    }

    /// Every assignment the coordinator handed out: (group, generation, member, assignment
    /// bytes in the ConsumerProtocol format); the consumer protocol's (KIP-848) follow, with
    /// the member epoch in place of the generation.
    pub fn assignments(&self) -> Vec<(String, i32, String, Bytes)> {
        let mut all = self.coordinator.handed.clone();
        all.extend(self.coordinator.consumer.handed_encoded());
        all
    }

    /// How many assignments the classic coordinator and the consumer protocol's handed out.
    pub fn assignment_counts(&self) -> (usize, usize) {
        (
            self.coordinator.handed.len(),
            self.coordinator.consumer.handed.len(),
        )
    }

    /// Topic names to (id, partition count), for the consumer protocol's coordinator.
    pub(super) fn topic_table(&self) -> consumer_group::TopicTable {
        self.topics
            .iter()
            .map(|(n, (id, parts))| (n.clone(), (*id, parts.len())))
            .collect()
    }

    /// A topic's partition count, or `None` when the topic does not exist.
    pub fn partition_count(&self, topic: &str) -> Option<usize> {
        self.topics.get(topic).map(|(_, parts)| parts.len())
    }

    /// What happened so far.
    pub fn stats(&self) -> ClusterStats {
        let mut s = self.stats.clone();
        s.txn_timeouts = self.txn.timed_out;
        s.txn_completed = self.txn.completed;
        s
    }

    /// The data records of a partition's leader log (below the high watermark), each with its
    /// transaction's fate, by the markers in the log: (offset, value, fate).
    pub fn records_with_fates(
        &self,
        topic: &str,
        partition: i32,
    ) -> Vec<(i64, Option<Bytes>, Fate)> {
        let Some(p) = self.partition(topic, partition) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (b, fate) in p.fates() {
            let Some(fate) = fate else { continue };
            if b.last >= p.hw {
                break;
            }
            for batch in RecordBatches::new(b.bytes.clone()).flatten() {
                if let Ok(records) = batch.records() {
                    out.extend(records.flatten().map(|r| (r.offset, r.value, fate)));
                }
            }
        }
        out
    }

    pub(crate) fn partition(&self, topic: &str, partition: i32) -> Option<&Partition> {
        self.topics
            .get(topic)?
            .1
            .get(usize::try_from(partition).ok()?)
    }
}
