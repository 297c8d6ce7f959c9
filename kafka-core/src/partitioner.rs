//! Partition choice: keyed records by Java-compatible murmur2, keyless records by KIP-794
//! uniform sticky partitioning, weighted toward brokers with shorter queues.

use std::collections::BTreeMap;

use crate::rng::Rng;
use crate::topic::Topic;

/// Kafka's murmur2 (`org.apache.kafka.common.utils.Utils.murmur2`), bit for bit.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in chunks.by_ref() {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of a keyed record: `toPositive(murmur2(key)) % partitions`, as in Java and in
/// librdkafka's `murmur2_random` partitioner.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    ((murmur2(key) & 0x7fff_ffff) as u32) % partitions.max(1)
}

#[derive(Debug, Clone)]
struct Sticky {
    partition: u32,
    produced: usize,
}

/// KIP-794's uniform sticky partitioner for keyless records.
///
/// It stays on one partition until about `batch.size` bytes have gone to it, then picks the
/// next one at random, each partition weighted by how much shorter its queue is than the
/// longest (adaptive partitioning), so slow brokers get less new data.
#[derive(Debug, Clone)]
pub struct StickyPartitioner {
    batch_size: usize,
    adaptive: bool,
    rng: Rng,
    /// The topic of the last keyless record and its state (`None`: pick a partition next):
    /// a run of records to one topic finds it with one pointer compare, where a map search
    /// cost the hot path about 50 instructions a record (callgrind).
    front: Option<(Topic, Option<Sticky>)>,
    /// The other topics' states, keyed by the `Topic` of the record that chose the partition:
    /// later records sharing its allocation find it by pointer.
    others: BTreeMap<Topic, Sticky>,
}

impl StickyPartitioner {
    /// A partitioner switching after `batch_size` bytes, with its own seeded randomness.
    pub fn new(batch_size: usize, adaptive: bool, seed: u64) -> Self {
        StickyPartitioner {
            batch_size: batch_size.max(1),
            adaptive,
            rng: Rng::new(seed),
            front: None,
            others: BTreeMap::new(),
        }
    }

    /// The state of `topic`, brought to the front slot (the previous front's goes back to
    /// the map).
    #[inline]
    fn state(&mut self, topic: &Topic) -> &mut Option<Sticky> {
        if !matches!(&self.front, Some((t, _)) if t == topic) {
            self.bring_forward(topic);
        }
        // Filled by now: bring_forward always leaves the front slot taken.
        &mut self.front.get_or_insert_with(|| (topic.clone(), None)).1
    }

    #[cold]
    fn bring_forward(&mut self, topic: &Topic) {
        let state = self.others.remove(topic);
        if let Some((t, Some(s))) = self.front.replace((topic.clone(), state)) {
            self.others.insert(t, s);
        }
    }

    /// The partition for the next keyless record of `topic`.
    ///
    /// `available(p)` says whether partition `p` has a leader (if none has, any may be chosen),
    /// `queue_len(p)` is how many batches wait for it. An unavailable sticky partition is
    /// replaced at once.
    // Called per record from another module: marked so that its inlining does not depend on
    // which codegen unit the module lands in (moving modules around once cost the producer's
    // hot path about 70 instructions a record, callgrind).
    #[inline]
    pub fn partition(
        &mut self,
        topic: &Topic,
        partitions: u32,
        available: impl Fn(u32) -> bool,
        queue_len: impl Fn(u32) -> usize,
    ) -> u32 {
        if let Some(s) = self.state(topic) {
            if s.partition < partitions && available(s.partition) {
                return s.partition;
            }
        }
        // Switching is rare (once per batch.size bytes): only now list the candidates.
        let available: Vec<u32> = (0..partitions).filter(|p| available(*p)).collect();
        let p = self.pick(partitions, &available, &queue_len);
        *self.state(topic) = Some(Sticky {
            partition: p,
            produced: 0,
        });
        p
    }

    /// Records that `bytes` were appended to the sticky partition. `new_batch` says the append
    /// opened a new batch, the natural moment to switch once `batch.size` is reached; past
    /// twice `batch.size` it switches regardless.
    #[inline]
    pub fn on_append(&mut self, topic: &Topic, partition: u32, bytes: usize, new_batch: bool) {
        let batch_size = self.batch_size;
        let state = self.state(topic);
        if let Some(s) = state {
            if s.partition != partition {
                return;
            }
            s.produced += bytes;
            if (s.produced >= batch_size && new_batch) || s.produced >= 2 * batch_size {
                // Forget it: the next record picks a new partition.
                *state = None;
            }
        }
    }

    fn pick(
        &mut self,
        partitions: u32,
        available: &[u32],
        queue_len: &impl Fn(u32) -> usize,
    ) -> u32 {
        let all: Vec<u32>;
        let candidates = if available.is_empty() {
            all = (0..partitions).collect();
            &all[..]
        } else {
            available
        };
        if candidates.is_empty() {
            return 0;
        }
        if self.adaptive {
            // Weight = (longest queue + 1) - own queue: an idle partition is favoured.
            let lens: Vec<usize> = candidates.iter().map(|p| queue_len(*p)).collect();
            let max = lens.iter().copied().max().unwrap_or(0);
            if lens.iter().any(|l| *l != max) {
                let weights: Vec<u64> = lens.iter().map(|l| (max + 1 - l) as u64).collect();
                let mut r = self.rng.below(weights.iter().sum());
                for (p, w) in candidates.iter().zip(weights) {
                    if r < w {
                        return *p;
                    }
                    r -= w;
                }
            }
        }
        candidates[self.rng.below(candidates.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_the_java_client() {
        // Kafka's UtilsTest.testMurmur2 vectors.
        let cases: &[(&[u8], i32)] = &[
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (key, want) in cases {
            assert_eq!(murmur2(key), *want, "{}", String::from_utf8_lossy(key));
        }
        assert_eq!(
            partition_for_key(b"21", 10),
            ((-973_932_308i32 & 0x7fff_ffff) % 10) as u32
        );
    }

    #[test]
    fn sticky_until_batch_size_then_switches() {
        let mut p = StickyPartitioner::new(100, false, 7);
        let t = Topic::from("t");
        let first = p.partition(&t, 6, |_| true, |_| 0);
        for _ in 0..9 {
            assert_eq!(p.partition(&t, 6, |_| true, |_| 0), first);
            p.on_append(&t, first, 10, false);
        }
        // 90 bytes: still sticky; 100 bytes with a new batch: switch on the next record.
        p.on_append(&t, first, 10, true);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let q = p.partition(&t, 6, |_| true, |_| 0);
            seen.insert(q);
            p.on_append(&t, q, 250, false); // > 2 x batch.size: always switches
        }
        assert_eq!(seen.len(), 6, "uniform over time: {seen:?}");
    }

    #[test]
    fn adaptive_choice_avoids_long_queues_and_unavailable_partitions() {
        let mut p = StickyPartitioner::new(1, true, 3);
        let t = Topic::from("t");
        let mut counts = [0u32; 3];
        for _ in 0..3000 {
            let q = p.partition(&t, 3, |_| true, |p| if p == 2 { 10 } else { 0 });
            counts[q as usize] += 1;
            p.on_append(&t, q, 10, true);
        }
        // Weights 11 : 11 : 1.
        assert!(counts[2] * 5 < counts[0], "{counts:?}");
        for _ in 0..50 {
            let q = p.partition(&t, 3, |p| p == 1, |_| 0);
            assert_eq!(q, 1);
            p.on_append(&t, q, 10, true);
        }
    }

    #[test]
    fn same_seed_same_choices() {
        let run = |seed| {
            let mut p = StickyPartitioner::new(1, true, seed);
            let t = Topic::from("t");
            (0..50)
                .map(|_| {
                    let q = p.partition(&t, 12, |_| true, |p| p as usize % 3);
                    p.on_append(&t, q, 5, true);
                    q
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }
}
