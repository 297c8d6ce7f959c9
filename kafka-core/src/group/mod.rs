//! Consumer groups (classic protocol). So far: the assignors and the ConsumerProtocol payloads
//! they read and write; the membership state machine follows.

pub mod assignor;
pub mod membership;
pub mod payload;

pub use assignor::{Assignment, Assignor, Member, RebalanceProtocol, TopicPartition};
