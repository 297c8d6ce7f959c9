//! KIP-227 fetch sessions, one per broker connection: the first Fetch is full and opens a
//! session; later ones name only the partitions whose fetch state changed and those to
//! forget, so a consumer of many quiet partitions sends and receives little. Any doubt (an
//! error, a lost answer) makes the next Fetch full again, as in Java.

use std::collections::BTreeMap;

use crate::topic::TopicPartition;

/// FETCH_SESSION_ID_NOT_FOUND: the broker forgot the session (evicted or restarted).
const SESSION_NOT_FOUND: i16 = 70;

/// What a fetch asks of one partition: (fetch offset, current leader epoch).
pub(super) type FetchState = (i64, i32);

/// The session fields of one Fetch.
#[derive(Debug)]
pub(super) struct Prepared {
    pub session_id: i32,
    pub epoch: i32,
    /// The partitions to name (all of them, in a full fetch).
    pub send: Vec<TopicPartition>,
    /// The partitions the broker's session should drop.
    pub forget: Vec<TopicPartition>,
    /// Partitions left out of the request are still fetched, and absent from the response
    /// when there is nothing new.
    pub incremental: bool,
}

/// The client side of one broker's fetch session.
#[derive(Debug, Default)]
pub(super) struct FetchSession {
    /// The session id (0: none).
    id: i32,
    /// The epoch of the next request: 0 asks for a full fetch (closing session `id`, if any).
    epoch: i32,
    /// What the broker's session holds.
    parts: BTreeMap<TopicPartition, FetchState>,
    /// What it will hold once the request in flight is answered.
    pending: BTreeMap<TopicPartition, FetchState>,
}

impl FetchSession {
    /// The session fields for fetching `want`. Without broker support (Fetch before v7) every
    /// fetch is full and sessionless.
    pub(super) fn prepare(
        &mut self,
        want: &BTreeMap<TopicPartition, FetchState>,
        supported: bool,
    ) -> Prepared {
        let all = || want.keys().cloned().collect::<Vec<_>>();
        if !supported {
            *self = FetchSession::default();
            return Prepared {
                session_id: 0,
                epoch: -1,
                send: all(),
                forget: Vec::new(),
                incremental: false,
            };
        }
        self.pending = want.clone();
        if self.id == 0 || self.epoch == 0 {
            return Prepared {
                session_id: self.id,
                epoch: 0,
                send: all(),
                forget: Vec::new(),
                incremental: false,
            };
        }
        let send = want
            .iter()
            .filter(|(tp, state)| self.parts.get(*tp) != Some(state))
            .map(|(tp, _)| tp.clone())
            .collect();
        let forget = self
            .parts
            .keys()
            .filter(|tp| !want.contains_key(*tp))
            .cloned()
            .collect();
        Prepared {
            session_id: self.id,
            epoch: self.epoch,
            send,
            forget,
            incremental: true,
        }
    }

    /// The broker answered the fetch: `error_code` is the response's top-level error,
    /// `session_id` the session it names.
    pub(super) fn answered(&mut self, error_code: i16, session_id: i32) {
        let pending = std::mem::take(&mut self.pending);
        match error_code {
            0 if self.epoch == 0 => {
                // A full fetch: a session was opened, or the broker declined to keep one.
                self.id = session_id;
                self.epoch = if session_id == 0 { 0 } else { 1 };
                self.parts = if session_id == 0 {
                    BTreeMap::new()
                } else {
                    pending
                };
            }
            0 => {
                self.epoch = if self.epoch == i32::MAX {
                    1
                } else {
                    self.epoch + 1
                };
                self.parts = pending;
            }
            SESSION_NOT_FOUND => *self = FetchSession::default(),
            // INVALID_FETCH_SESSION_EPOCH and the rest: close this session, start a new one.
            _ => self.reset(),
        }
    }

    /// The fetch got no answer: whether the broker applied it is unknown, so start over.
    pub(super) fn reset(&mut self) {
        self.epoch = 0;
        self.parts.clear();
        self.pending.clear();
    }
}
