//! The accumulator's partition queues: found by topic and partition on the record path, by
//! queue id from the index of first batches, and iterated in (topic, partition) order.

use std::collections::{BTreeMap, VecDeque};

use super::Batch;
use crate::time::Instant;
use crate::topic::{Topic, TopicKey};

/// One partition's queued batches, and the keys its first batch is indexed under in
/// [`Fronts`] (`None`: not indexed).
#[derive(Debug)]
pub(super) struct Queue {
    pub(super) batches: VecDeque<Batch>,
    pub(super) keys: Option<(Instant, Instant)>,
    /// Its name in [`Fronts`] (see [`Queues::places`]).
    pub(super) id: u32,
    /// Bumped whenever its deadline entry in [`Fronts`]' heap goes stale (see there).
    pub(super) generation: u32,
    /// Bumped whenever its entry among [`Fronts`]' ready times goes stale (see there).
    pub(super) ready_generation: u32,
    /// How many records the last batch that left it held: a new batch's record list starts
    /// that large, rather than growing (and copying) by doubling on the record path. Per
    /// queue, as partitions differ: a dense topic's full batches would oversize the lists of a
    /// keyed topic's thousands of one-record batches.
    pub(super) hint: u32,
}

impl std::ops::Deref for Queue {
    type Target = VecDeque<Batch>;
    fn deref(&self) -> &VecDeque<Batch> {
        &self.batches
    }
}

impl std::ops::DerefMut for Queue {
    fn deref_mut(&mut self) -> &mut VecDeque<Batch> {
        &mut self.batches
    }
}

/// Queued batches by topic, then partition: found from a record's `&str` topic, so appending
/// needs no owned name, and iterated in (topic, partition) order as a map keyed by both would
/// be. A partition's queue stays once emptied: at many partitions nearly every batch opens a
/// queue, and making and dropping one per batch (its tree entry and its buffer) cost a tenth
/// of a batch's instructions, and dropping a topic's queues whenever a send emptied them all
/// cost as much again (10,000 entries remade). A topic's queues go when none holds a batch and
/// the producer no longer wants the topic ([`Accumulator::forget_idle_topics`]).
///
/// The record path finds its queue without a tree search: a topic's queues are a vector
/// indexed by partition number (partitions are numbered 0..count), and the topic last appended
/// to is remembered with its place, found again by a pointer compare of its shared name.
#[derive(Debug, Default)]
pub(super) struct Queues {
    /// Where each topic's queues are in `topics`.
    pub(super) index: BTreeMap<Topic, usize>,
    pub(super) topics: Vec<TopicQueues>,
    /// The topic last appended to, and its place in `topics`.
    pub(super) last: Option<(Topic, usize)>,
    /// How many queues hold a batch (are indexed in [`Fronts`]).
    pub(super) nonempty: usize,
    /// Each queue's topic and partition, and its topic's place in `topics`, by queue id.
    pub(super) places: Vec<Place>,
    /// Ids of forgotten queues, to give again.
    pub(super) free: Vec<u32>,
}

/// Where a queue is (see [`Queues::places`]).
#[derive(Debug)]
pub(super) struct Place {
    pub(super) topic: Topic,
    /// The topic's place in [`Queues::topics`].
    pub(super) at: usize,
    pub(super) partition: i32,
}

/// One topic's partition queues, by partition number.
#[derive(Debug, Default)]
pub(super) struct TopicQueues {
    pub(super) partitions: Vec<Queue>,
    /// How many of them hold a batch.
    pub(super) nonempty: usize,
}

impl Queues {
    fn topic(&self, topic: &(impl TopicKey + ?Sized)) -> Option<&TopicQueues> {
        self.topics.get(*topic.find(&self.index)?)
    }

    pub(super) fn get(&self, topic: &(impl TopicKey + ?Sized), partition: i32) -> Option<&Queue> {
        self.topic(topic)?
            .partitions
            .get(usize::try_from(partition).ok()?)
    }

    pub(super) fn get_mut(
        &mut self,
        topic: &(impl TopicKey + ?Sized),
        partition: i32,
    ) -> Option<&mut Queue> {
        let at = *topic.find(&self.index)?;
        self.topics[at]
            .partitions
            .get_mut(usize::try_from(partition).ok()?)
    }

    pub(super) fn or_default(&mut self, topic: &Topic, partition: i32) -> &mut Queue {
        let at = match &self.last {
            Some((t, at)) if Topic::ptr_eq(t, topic) => *at,
            _ => {
                let at = match self.index.get(topic) {
                    Some(at) => *at,
                    None => {
                        self.topics.push(TopicQueues::default());
                        self.index.insert(topic.clone(), self.topics.len() - 1);
                        self.topics.len() - 1
                    }
                };
                self.last = Some((topic.clone(), at));
                at
            }
        };
        // Partitions are numbered from 0 and checked against the topic's count before a
        // record is appended (a negative one is refused at `send`).
        let p = usize::try_from(partition).expect("a partition number is not negative");
        if p >= self.topics[at].partitions.len() {
            self.open(topic, at, p);
        }
        &mut self.topics[at].partitions[p]
    }

    /// Makes the queues of the topic at `at` up to partition `p`, each with its id.
    #[cold]
    fn open(&mut self, topic: &Topic, at: usize, p: usize) {
        while self.topics[at].partitions.len() <= p {
            let place = Place {
                topic: topic.clone(),
                at,
                partition: self.topics[at].partitions.len() as i32,
            };
            let id = match self.free.pop() {
                Some(id) => {
                    self.places[id as usize] = place;
                    id
                }
                None => {
                    self.places.push(place);
                    u32::try_from(self.places.len() - 1).expect("fewer than 2^32 queues")
                }
            };
            self.topics[at].partitions.push(Queue {
                batches: VecDeque::new(),
                keys: None,
                id,
                generation: 0,
                ready_generation: 0,
                hint: 0,
            });
        }
    }

    pub(super) fn by_id_mut(&mut self, id: u32) -> &mut Queue {
        let place = &self.places[id as usize];
        &mut self.topics[place.at].partitions[place.partition as usize]
    }

    /// Whether a deadline entry pushed for queue `id` at `generation` is live: the queue holds
    /// batches and has not been reindexed since. `id` names a queue (the heap is remade when
    /// ids are freed).
    pub(super) fn is_current(&self, id: u32, generation: u32) -> bool {
        let (_, _, q) = self.by_id(id);
        q.keys.is_some() && q.generation == generation
    }

    /// Whether a ready entry pushed for queue `id` at `generation` is live (see
    /// [`Queues::is_current`]).
    pub(super) fn is_ready_current(&self, id: u32, generation: u32) -> bool {
        let (_, _, q) = self.by_id(id);
        q.keys.is_some() && q.ready_generation == generation
    }

    /// The queue named `id`, with its topic and partition.
    pub(super) fn by_id(&self, id: u32) -> (&Topic, i32, &Queue) {
        let place = &self.places[id as usize];
        let q = &self.topics[place.at].partitions[place.partition as usize];
        (&place.topic, place.partition, q)
    }

    /// Every queue, empty ones too, in (topic, partition) order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Topic, i32, &Queue)> + '_ {
        self.index.iter().flat_map(|(t, at)| {
            (self.topics[*at].partitions.iter())
                .enumerate()
                .map(move |(p, q)| (t, p as i32, q))
        })
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut Queue> + '_ {
        self.topics.iter_mut().flat_map(|t| t.partitions.iter_mut())
    }

    pub(super) fn take_all(&mut self) -> Vec<Batch> {
        self.nonempty = 0;
        self.index.clear();
        self.last = None;
        self.places.clear();
        self.free.clear();
        std::mem::take(&mut self.topics)
            .into_iter()
            .flat_map(|t| t.partitions)
            .flat_map(|q| q.batches)
            .collect()
    }

    /// Keeps the topics that hold a batch or that `wanted` names.
    pub(super) fn retain(&mut self, wanted: impl Fn(&str) -> bool) {
        let old = std::mem::take(&mut self.topics);
        let mut old: Vec<Option<TopicQueues>> = old.into_iter().map(Some).collect();
        self.last = None;
        let index = std::mem::take(&mut self.index);
        for (t, at) in index {
            let queues = old[at].take().expect("each topic has one place");
            if queues.nonempty > 0 || wanted(&t) {
                let at = self.topics.len();
                for q in &queues.partitions {
                    self.places[q.id as usize].at = at;
                }
                self.topics.push(queues);
                self.index.insert(t, at);
            } else {
                // No batch queued: no key in `Fronts` names these ids.
                self.free.extend(queues.partitions.iter().map(|q| q.id));
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.nonempty == 0
    }
}
