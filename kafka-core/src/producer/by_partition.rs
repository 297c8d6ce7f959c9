//! [`ByPartition`]: per-partition state found with one topic lookup and an index, instead of
//! a search of a `(topic, partition)` tree that compares topic names at every level.

use std::collections::BTreeMap;

use super::accumulator::TopicPartition;
use crate::topic::{Topic, TopicKey};

/// A map from (topic, partition) to `V`, iterated in (topic, partition) order as a
/// `BTreeMap<TopicPartition, V>` would be. Each topic's partitions sit in a vector indexed by
/// partition number: a producer writing to 10,000 partitions of one topic finds a partition's
/// entry with one name compare, where the tree compared names about 14 times a lookup, several
/// lookups a batch. Partition numbers come from metadata (`0..count`), so the vectors are as
/// long as the topic is wide; a negative number, which no batch carries, still works.
#[derive(Debug)]
pub(crate) struct ByPartition<V> {
    /// Only topics with entries: one left empty is removed. Keyed by the shared name, so
    /// that a lookup by a `Topic` sharing the key's allocation compares no names.
    topics: BTreeMap<Topic, Slots<V>>,
}

#[derive(Debug)]
struct Slots<V> {
    /// Partitions `0..` by number.
    by_index: Vec<Option<V>>,
    /// Negative partition numbers (never seen in practice; kept so that nothing is lost).
    negative: BTreeMap<i32, V>,
    /// How many entries are present.
    len: usize,
}

impl<V> Default for ByPartition<V> {
    fn default() -> Self {
        ByPartition {
            topics: BTreeMap::new(),
        }
    }
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Slots {
            by_index: Vec::new(),
            negative: BTreeMap::new(),
            len: 0,
        }
    }
}

impl<V> Slots<V> {
    fn get(&self, partition: i32) -> Option<&V> {
        match usize::try_from(partition) {
            Ok(i) => self.by_index.get(i)?.as_ref(),
            Err(_) => self.negative.get(&partition),
        }
    }

    fn get_mut(&mut self, partition: i32) -> Option<&mut V> {
        match usize::try_from(partition) {
            Ok(i) => self.by_index.get_mut(i)?.as_mut(),
            Err(_) => self.negative.get_mut(&partition),
        }
    }

    /// The entry, made with `make` if absent.
    fn or_insert_with(&mut self, partition: i32, make: impl FnOnce() -> V) -> &mut V {
        match usize::try_from(partition) {
            Ok(i) => {
                if i >= self.by_index.len() {
                    self.by_index.resize_with(i + 1, || None);
                }
                let slot = &mut self.by_index[i];
                if slot.is_none() {
                    self.len += 1;
                }
                slot.get_or_insert_with(make)
            }
            Err(_) => {
                if !self.negative.contains_key(&partition) {
                    self.len += 1;
                }
                self.negative.entry(partition).or_insert_with(make)
            }
        }
    }

    fn remove(&mut self, partition: i32) -> Option<V> {
        let out = match usize::try_from(partition) {
            Ok(i) => self.by_index.get_mut(i)?.take(),
            Err(_) => self.negative.remove(&partition),
        };
        if out.is_some() {
            self.len -= 1;
        }
        out
    }

    fn iter(&self) -> impl Iterator<Item = (i32, &V)> + '_ {
        let negative = self.negative.iter().map(|(p, v)| (*p, v));
        let by_index = self
            .by_index
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i as i32, v.as_ref()?)));
        negative.chain(by_index)
    }
}

impl<V> ByPartition<V> {
    pub fn get<T: TopicKey>(&self, tp: &(T, i32)) -> Option<&V> {
        self.get_in(&tp.0, tp.1)
    }

    pub fn get_mut<T: TopicKey>(&mut self, tp: &(T, i32)) -> Option<&mut V> {
        tp.0.find_mut(&mut self.topics)?.get_mut(tp.1)
    }

    /// [`ByPartition::get`] without a `TopicPartition`.
    pub fn get_in<T: TopicKey + ?Sized>(&self, topic: &T, partition: i32) -> Option<&V> {
        topic.find(&self.topics)?.get(partition)
    }

    /// The entry for `tp`, made with `make` if absent.
    pub fn or_insert_with<T: TopicKey>(
        &mut self,
        tp: &(T, i32),
        make: impl FnOnce() -> V,
    ) -> &mut V {
        if tp.0.find(&self.topics).is_none() {
            self.topics.insert(tp.0.to_topic(), Slots::default());
        }
        let slots = tp.0.find_mut(&mut self.topics).expect("inserted above");
        slots.or_insert_with(tp.1, make)
    }

    pub fn insert<T: TopicKey>(&mut self, tp: &(T, i32), v: V) -> Option<V> {
        let old = self.remove(tp);
        self.or_insert_with(tp, || v);
        old
    }

    /// Removes `tp`'s entry. A topic left without entries is forgotten, so that the map's
    /// size follows what is in it.
    pub fn remove<T: TopicKey>(&mut self, tp: &(T, i32)) -> Option<V> {
        let slots = tp.0.find_mut(&mut self.topics)?;
        let out = slots.remove(tp.1)?;
        if slots.len == 0 {
            let topic = tp.0.to_topic();
            self.topics.remove(&topic);
        }
        Some(out)
    }

    pub fn clear(&mut self) {
        self.topics.clear();
    }

    /// The entries in (topic, partition) order.
    pub fn iter(&self) -> impl Iterator<Item = ((&str, i32), &V)> + '_ {
        self.topics
            .iter()
            .flat_map(|(t, slots)| slots.iter().map(move |(p, v)| ((t.as_str(), p), v)))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The keys, owned, in (topic, partition) order.
    pub fn keys(&self) -> impl Iterator<Item = TopicPartition> + '_ {
        self.iter().map(|((t, p), _)| (t.to_owned(), p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Random inserts, updates and removals agree with a `BTreeMap` keyed by both, in what
    /// each holds and in iteration order.
    #[test]
    fn agrees_with_a_tree_keyed_by_topic_and_partition() {
        let mut rng = Rng::new(7);
        let mut ours: ByPartition<u32> = ByPartition::default();
        let mut tree: BTreeMap<TopicPartition, u32> = BTreeMap::new();
        for step in 0..20_000u32 {
            let topic = ["a", "b", "orders"][rng.below(3) as usize].to_string();
            let partition = rng.below(40) as i32 - 2;
            let tp = (topic, partition);
            match rng.below(4) {
                0 => assert_eq!(ours.insert(&tp, step), tree.insert(tp.clone(), step)),
                1 => assert_eq!(ours.remove(&tp), tree.remove(&tp)),
                2 => {
                    *ours.or_insert_with(&tp, || 0) += 1;
                    *tree.entry(tp.clone()).or_insert(0) += 1;
                }
                _ => {
                    if let Some(v) = ours.get_mut(&tp) {
                        *v += 2;
                    }
                    if let Some(v) = tree.get_mut(&tp) {
                        *v += 2;
                    }
                }
            }
            assert_eq!(ours.get(&tp), tree.get(&tp));
            assert_eq!(ours.get_in(&tp.0, tp.1).is_some(), tree.contains_key(&tp));
            assert_eq!(ours.iter().next().is_none(), tree.is_empty());
        }
        let a: Vec<(TopicPartition, u32)> = ours.keys().zip(ours.values().copied()).collect();
        let b: Vec<(TopicPartition, u32)> = tree.into_iter().collect();
        assert_eq!(a, b);
        ours.clear();
        assert!(ours.iter().next().is_none());
    }
}
