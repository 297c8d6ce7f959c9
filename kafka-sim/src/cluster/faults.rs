//! The faults a test or a seeded schedule injects into the cluster: broker crashes, kills,
//! fencing and restarts, leader and coordinator moves.

use super::*;

impl SimCluster {
    /// A broker crashes: its connections break, its partitions elect new leaders among the
    /// in-sync replicas left, and the coordinator moves if it was there. Its log survives.
    pub fn crash(&mut self, node: i32) {
        if self.stop(node) {
            self.fail_over(node);
        }
    }

    /// A broker's process dies (a kill -9) and the controller has not noticed yet: its
    /// connections break and connects to it are refused, while metadata still names it leader
    /// and group and transaction coordinator until [`SimCluster::fence`] (Kafka fences it when
    /// its session expires, `broker.session.timeout.ms`) or until it is back. With `listed`,
    /// metadata still lists it among the brokers, as Kafka does until then; without, it names
    /// leaders it does not list, as librdkafka's mock cluster does for a broker set down.
    pub fn kill(&mut self, node: i32, listed: bool) {
        if self.stop(node) {
            if listed {
                self.listed_down.insert(node);
            }
            if self.coordinator_node == Some(node) {
                // The process held the groups' joins and syncs in memory.
                self.coordinator.failover();
            }
        }
    }

    /// The controller fences a broker: its leaderships and coordinators move to brokers that
    /// are up. A broker still up (cut off from the clients only) goes down with it.
    pub fn fence(&mut self, node: i32) {
        self.listed_down.remove(&node);
        self.stop(node);
        self.fail_over(node);
    }

    /// Takes a broker down: its connections break and what it held in memory is gone. False
    /// if it was down already.
    fn stop(&mut self, node: i32) -> bool {
        if !self.up.remove(&node) {
            return false;
        }
        self.stats.crashes += 1;
        let dead: Vec<ConnKey> = self
            .conns
            .iter()
            .filter(|(_, c)| c.node == node)
            .map(|(k, _)| *k)
            .collect();
        for c in dead {
            self.close(c);
        }
        self.pending.retain(|p| p.node != node);
        self.parked.retain(|p| p.3 != node);
        true
    }

    /// What the controller does for a broker that is gone: new leaders for its partitions,
    /// and its coordinators elsewhere.
    fn fail_over(&mut self, node: i32) {
        self.reelect(|p| p.leader == Some(node), None);
        if self.coordinator_node == Some(node) {
            self.move_coordinator();
        }
        if self.txn_node == Some(node) {
            self.move_txn_coordinator();
        }
    }

    /// A crashed broker comes back, as a follower that catches up (truncating what diverged);
    /// with [`ClusterConfig::forget_producers`], the idempotent producer ids issued so far are
    /// unknown from now on.
    pub fn restart(&mut self, node: i32) {
        if node < 1 || node > self.cfg.brokers || !self.up.insert(node) {
            return;
        }
        self.listed_down.remove(&node);
        if self.cfg.forget_producers {
            self.forgotten_producers = self.next_producer_id;
        }
        let up = self.up.clone();
        for (_, parts) in self.topics.values_mut() {
            for p in parts.iter_mut() {
                let had = p.leader.is_some();
                p.revive(&|n| up.contains(&n));
                if !had && p.leader.is_some() {
                    self.stats.elections += 1;
                }
            }
        }
        if self.coordinator_node.is_none() {
            self.coordinator_node = Some(node);
            self.stats.coordinator_moves += 1;
        }
        if self.txn_node.is_none() {
            self.txn_node = Some(node);
            self.stats.txn_coordinator_moves += 1;
        }
    }

    /// Moves a partition's leadership to another in-sync replica (a preferred-leader election).
    pub fn move_leader(&mut self, topic: &str, partition: i32) {
        let old = self.leader(topic, partition);
        self.reelect(
            |p| p.leader.is_some() && p.leader == old,
            Some((topic.to_owned(), partition)),
        );
    }

    fn reelect(&mut self, which: impl Fn(&Partition) -> bool, only: Option<(String, i32)>) {
        let up = self.up.clone();
        let mut picks = Vec::new();
        for _ in 0..64 {
            picks.push(self.pick());
        }
        let mut i = 0;
        for (name, (_, parts)) in self.topics.iter_mut() {
            for (n, p) in parts.iter_mut().enumerate() {
                if only
                    .as_ref()
                    .is_some_and(|(t, q)| t != name || *q != n as i32)
                    || !which(p)
                {
                    continue;
                }
                let epoch = p.epoch;
                p.elect(&|x| up.contains(&x), None, picks[i % picks.len()]);
                i += 1;
                if p.epoch != epoch {
                    self.stats.elections += 1;
                }
            }
        }
    }

    /// Moves the group coordinator to another broker that is up: waiting joins and syncs are
    /// dropped with the old one's connections, and members find the new one.
    pub fn move_coordinator(&mut self) {
        let old = self.coordinator_node;
        let new = self.another_broker(old);
        if new != old {
            self.coordinator_node = new;
            self.stats.coordinator_moves += 1;
            self.coordinator.failover();
            if let Some(o) = old {
                // The old coordinator's pending answers are gone: so are its connections.
                let dead: Vec<ConnKey> = self
                    .conns
                    .iter()
                    .filter(|(_, c)| c.node == o)
                    .map(|(k, _)| *k)
                    .collect();
                for c in dead {
                    self.close(c);
                }
            }
        }
    }

    /// A broker that is up other than `old`, picked by the seed (`old` itself if it is the
    /// only one up; none if no broker is): where a coordinator moves.
    pub(crate) fn another_broker(&mut self, old: Option<i32>) -> Option<i32> {
        let others: Vec<i32> = self
            .up
            .iter()
            .copied()
            .filter(|n| Some(*n) != old)
            .collect();
        if others.is_empty() {
            old.filter(|o| self.up.contains(o))
        } else {
            Some(others[self.pick() % others.len()])
        }
    }
}
