//! Consumer groups (classic protocol), as sans-IO sub-machines that a consumer drives: the
//! assignors and the ConsumerProtocol payloads they read and write, the membership (join, sync,
//! heartbeat, leave), and committed offsets (fetch and commit). Wiring them into a consumer
//! with the fetcher comes next.

pub mod assignor;
pub mod membership;
pub mod offsets;
pub mod payload;

pub use assignor::{Assignment, Assignor, Member, RebalanceProtocol, TopicPartition};
