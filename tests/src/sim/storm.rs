//! Reconnect storms: a client opening more connections within a second than its brokers,
//! lanes and backed-off reconnects account for. Both simulations (the core's and the user
//! API's) count every connect through [`ConnectRate`].

use std::collections::{BTreeMap, VecDeque};

use kafka_sim::SimTime;

/// The most connections a client may open within a second: three brokers, two lanes and a
/// coordinator each, the bootstrap list, and their reconnects, which back off from
/// `reconnect.backoff.ms` (50 ms) doubling.
pub const CONNECTS_PER_SECOND: usize = 40;

/// Each client's connects in the last second, by the key that names the client.
#[derive(Debug)]
pub struct ConnectRate<K> {
    recent: BTreeMap<K, VecDeque<SimTime>>,
}

impl<K> Default for ConnectRate<K> {
    fn default() -> Self {
        ConnectRate {
            recent: BTreeMap::new(),
        }
    }
}

impl<K: Ord> ConnectRate<K> {
    /// `client` opened a connection at `now`: `Some(n)`, the connections it opened within
    /// the last second, when that is more than [`CONNECTS_PER_SECOND`] (a storm).
    pub fn connect(&mut self, client: K, now: SimTime) -> Option<usize> {
        let recent = self.recent.entry(client).or_default();
        recent.push_back(now);
        while recent
            .front()
            .is_some_and(|t| *t + SimTime::from_secs(1) <= now)
        {
            recent.pop_front();
        }
        (recent.len() > CONNECTS_PER_SECOND).then_some(recent.len())
    }
}
