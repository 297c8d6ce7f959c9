//! `partition.assignment.strategy`'s values: the assignors this client implements, by the
//! protocol names Java uses. Their algorithms live in `group::assignor`.

/// An assignor, by its protocol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Assignor {
    /// `range`: per topic, contiguous ranges of partitions.
    Range,
    /// `roundrobin`: all partitions dealt in turn.
    RoundRobin,
    /// `cooperative-sticky`: balanced, moving as little as possible, and never handing a
    /// partition over in the same rebalance that takes it away (KIP-429).
    CooperativeSticky,
}

/// How a rebalance moves partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebalanceProtocol {
    /// Everything is revoked before the group syncs.
    Eager,
    /// Only partitions that move are revoked, over two rebalances.
    Cooperative,
}

impl Assignor {
    /// The name sent in JoinGroup (`partition.assignment.strategy` uses the same names).
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// The assignor with a protocol name, if we implement it.
    pub fn from_name(name: &str) -> Option<Assignor> {
        match name {
            "range" => Some(Assignor::Range),
            "roundrobin" => Some(Assignor::RoundRobin),
            "cooperative-sticky" => Some(Assignor::CooperativeSticky),
            _ => None,
        }
    }

    /// The rebalance protocol it needs.
    pub fn protocol(self) -> RebalanceProtocol {
        match self {
            Assignor::CooperativeSticky => RebalanceProtocol::Cooperative,
            _ => RebalanceProtocol::Eager,
        }
    }
}
