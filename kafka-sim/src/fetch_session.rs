//! KIP-227 fetch sessions, broker side: a full fetch with epoch 0 opens a session; incremental
//! fetches then name only the partitions whose fetch state changed (and those to forget), and
//! the response holds only the partitions with something new.

use std::collections::BTreeMap;

use kafka_proto::messages::fetch_request::FetchRequest;
use uuid::Uuid;

/// FETCH_SESSION_ID_NOT_FOUND.
const SESSION_NOT_FOUND: i16 = 70;
/// INVALID_FETCH_SESSION_EPOCH.
const INVALID_EPOCH: i16 = 71;

/// One partition to read for a fetch.
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    /// The topic's name ("" if its id is unknown).
    pub name: String,
    /// The topic id the client used (nil before Fetch v13).
    pub topic_id: Uuid,
    pub partition: i32,
    pub offset: i64,
    pub max_bytes: i32,
}

/// What a fetch reads and how it answers.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The session id to answer with (0: none).
    pub session_id: i32,
    /// Answer only the partitions with news (see [`Sessions::news`]).
    pub incremental: bool,
    pub wanted: Vec<Wanted>,
}

#[derive(Debug, Default)]
struct Session {
    /// The epoch the next incremental request must carry.
    next_epoch: i32,
    /// (name, partition) -> the fetch state, and the high watermark last answered.
    parts: BTreeMap<(String, i32), (Wanted, i64)>,
}

/// Every fetch session of a broker.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    next_id: i32,
    sessions: BTreeMap<i32, Session>,
    /// Sessions opened, and incremental fetches answered: for tests.
    pub(crate) opened: usize,
    pub(crate) incremental: usize,
}

impl Sessions {
    /// Reads the session fields of `req`; `name` resolves a topic (by id from v13, else by
    /// name). An error is a whole-response error code.
    pub(crate) fn plan(
        &mut self,
        req: &FetchRequest,
        name: impl Fn(Uuid, &str) -> String,
    ) -> Result<Plan, i16> {
        let listed: Vec<Wanted> = req
            .topics
            .iter()
            .flat_map(|t| {
                let n = name(t.topic_id, &t.topic);
                t.partitions.iter().map(move |p| Wanted {
                    name: n.clone(),
                    topic_id: t.topic_id,
                    partition: p.partition,
                    offset: p.fetch_offset,
                    max_bytes: p.partition_max_bytes,
                })
            })
            .collect();
        let (id, epoch) = (req.session_id, req.session_epoch);
        if epoch == -1 || epoch == 0 {
            // A full fetch: closes the session named, if any; epoch 0 opens a new one.
            self.sessions.remove(&id);
            if epoch == -1 {
                return Ok(Plan {
                    session_id: 0,
                    incremental: false,
                    wanted: listed,
                });
            }
            self.next_id = self.next_id.wrapping_add(1).max(1);
            let session = Session {
                next_epoch: 1,
                parts: listed
                    .iter()
                    .map(|w| ((w.name.clone(), w.partition), (w.clone(), -1)))
                    .collect(),
            };
            self.sessions.insert(self.next_id, session);
            self.opened += 1;
            return Ok(Plan {
                session_id: self.next_id,
                incremental: false,
                wanted: listed,
            });
        }
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(SESSION_NOT_FOUND);
        };
        if epoch != session.next_epoch {
            return Err(INVALID_EPOCH);
        }
        session.next_epoch = if epoch == i32::MAX { 1 } else { epoch + 1 };
        for w in listed {
            let hw = session
                .parts
                .get(&(w.name.clone(), w.partition))
                .map_or(-1, |p| p.1);
            session.parts.insert((w.name.clone(), w.partition), (w, hw));
        }
        for t in &req.forgotten_topics_data {
            let n = name(t.topic_id, &t.topic);
            for p in &t.partitions {
                session.parts.remove(&(n.clone(), *p));
            }
        }
        self.incremental += 1;
        Ok(Plan {
            session_id: id,
            incremental: true,
            wanted: session.parts.values().map(|p| p.0.clone()).collect(),
        })
    }

    /// Forgets every session, as a restarted broker (or cache eviction) does.
    pub(crate) fn evict_all(&mut self) {
        self.sessions.clear();
    }

    /// Whether an incremental response includes a partition: it has records or an error, or
    /// its high watermark moved since the session last answered it.
    pub(crate) fn news(
        &mut self,
        session_id: i32,
        w: &Wanted,
        has_records: bool,
        error: bool,
        hw: i64,
    ) -> bool {
        let Some(s) = self.sessions.get_mut(&session_id) else {
            return true;
        };
        let Some(cached) = s.parts.get_mut(&(w.name.clone(), w.partition)) else {
            return true;
        };
        let moved = cached.1 != hw;
        cached.1 = hw;
        has_records || error || moved
    }
}
