//! The accumulator's unit tests: memory, readiness and draining.

use super::filling::MIN_BLOCK;
use super::*;
use kafka_proto::record::BatchMeta;

/// How many blocks wait for reuse.
fn recycled(acc: &Accumulator) -> usize {
    acc.pool.spare.iter().map(Vec::len).sum()
}

/// [`Accumulator::ready`]'s partitions, with those `blocked` says left out.
fn ready_tps(
    acc: &Accumulator,
    now: Instant,
    blocked: impl Fn(&(Topic, i32)) -> bool,
) -> (Vec<(Topic, i32)>, Option<Instant>) {
    let (ready, next) = acc.ready(now, false, |b| (!blocked(&b.tp)).then_some(()));
    (ready.into_iter().map(|(tp, ())| tp).collect(), next)
}

/// [`Accumulator::ready_scan`]'s partitions, with those `blocked` says left out.
fn scanned_tps(
    acc: &Accumulator,
    now: Instant,
    blocked: impl Fn(&(Topic, i32)) -> bool,
) -> (Vec<(Topic, i32)>, Option<Instant>) {
    let (ready, next) = acc.ready_scan(now, false, |b| (!blocked(&b.tp)).then_some(()));
    (ready.into_iter().map(|(tp, ())| tp).collect(), next)
}

/// Appends `r` to partition 0 at time zero, due in a second, the whole record or nothing.
fn append_at_zero(acc: &mut Accumulator, r: &ProducerRecord, token: u64) {
    let deadline = Instant::from_millis(1000);
    acc.append(
        0,
        r,
        RecordToken(token),
        Instant::ZERO,
        deadline,
        Block::Whole,
    )
    .unwrap();
}

fn drained(acc: &mut Accumulator, tp: &TopicPartition) -> Batch {
    acc.drain(std::slice::from_ref(tp), usize::MAX)
        .pop()
        .expect("a batch")
}

#[test]
fn completed_blocks_are_recycled_by_size() {
    let mut acc = Accumulator::new(1024, 1024, Duration::ZERO, Compression::None, 1 << 20);
    let tp = ("t".to_string(), 0);
    let small = ProducerRecord::new("t", vec![1u8; 10], 1);
    append_at_zero(&mut acc, &small, 0);
    let mut b = drained(&mut acc, &tp);
    let ptr = b.seal(&BatchMeta::default()).as_ptr();
    acc.recycle(b);
    assert_eq!(recycled(&acc), 1);
    append_at_zero(&mut acc, &small, 1);
    assert_eq!(recycled(&acc), 0, "taken for the new batch");
    let mut b = drained(&mut acc, &tp);
    assert_eq!(
        b.seal(&BatchMeta::default()).as_ptr(),
        ptr,
        "the same allocation, reused"
    );
    acc.recycle(b);

    // A record larger than batch.size gets an exact-size block; the small spare does not fit
    // it, and stays. The large block is let go when its batch completes (blocks past
    // batch.size are not kept: no usual batch asks for one).
    let big = ProducerRecord::new("t", vec![1u8; 4000], 1);
    append_at_zero(&mut acc, &big, 2);
    assert_eq!(
        recycled(&acc),
        1,
        "the recycled block did not fit, so it stays free"
    );
    let mut b = drained(&mut acc, &tp);
    assert!(b.reserved > 1024);
    b.seal(&BatchMeta::default());
    acc.recycle(b);
    assert_eq!(recycled(&acc), 1, "only the batch.size block is kept");
}

/// Blocks smaller than batch.size are kept by size class, and a batch takes one of its own
/// class, never one more than twice what it asks for.
#[test]
fn small_blocks_are_recycled_by_size() {
    let mut acc = Accumulator::new(8192, 8192, Duration::ZERO, Compression::None, 1 << 20);
    let tp = ("t".to_string(), 0);
    // A 3 KB record opens a block of about 3 KB; a 10-byte one a 1 KB block.
    let mid = ProducerRecord::new("t", vec![1u8; 3000], 1);
    let small = ProducerRecord::new("t", vec![1u8; 10], 1);
    append_at_zero(&mut acc, &mid, 0);
    let mut b = drained(&mut acc, &tp);
    let mid_ptr = b.seal(&BatchMeta::default()).as_ptr();
    acc.recycle(b);
    append_at_zero(&mut acc, &small, 1);
    let mut b = drained(&mut acc, &tp);
    assert_ne!(
        b.seal(&BatchMeta::default()).as_ptr(),
        mid_ptr,
        "a 3 KB block is not spent on a 1 KB batch"
    );
    acc.recycle(b);
    assert_eq!(recycled(&acc), 2);
    append_at_zero(&mut acc, &mid, 2);
    let mut b = drained(&mut acc, &tp);
    assert_eq!(b.seal(&BatchMeta::default()).as_ptr(), mid_ptr, "reused");
    acc.recycle(b);
}

/// A block some adapter still holds (a request being written) is not kept: reusing it would
/// overwrite bytes on their way to the broker.
#[test]
fn a_block_still_shared_is_not_recycled() {
    let mut acc = Accumulator::new(1024, 1024, Duration::ZERO, Compression::None, 1 << 20);
    let tp = ("t".to_string(), 0);
    let r = ProducerRecord::new("t", vec![1u8; 10], 1);
    append_at_zero(&mut acc, &r, 0);
    let mut b = drained(&mut acc, &tp);
    let held = b.seal(&BatchMeta::default());
    acc.recycle(b);
    assert_eq!(recycled(&acc), 0);
    drop(held);
}

/// Spare blocks are part of buffer.memory, as in Java's buffer pool: batches plus spare
/// blocks never hold more than the pool, and a reservation lets spares go to fit (before,
/// a pool's worth of spares could sit beside a pool's worth of batches).
#[test]
fn spare_blocks_count_within_buffer_memory() {
    let block = 1024;
    let mut acc = Accumulator::new(block, block, Duration::ZERO, Compression::None, 4 * block);
    let held = |acc: &Accumulator| acc.pool.used + acc.pool.spare_bytes;
    let deadline = Instant::from_millis(1000);
    let small = ProducerRecord::new("t", vec![1u8; 10], 1);
    // Four partitions' batches fill the pool; completed, their blocks are all kept.
    for p in 0..4 {
        acc.append(
            p,
            &small,
            RecordToken(p as u64),
            Instant::ZERO,
            deadline,
            Block::Whole,
        )
        .unwrap();
    }
    assert_eq!(acc.pool.used, 4 * block);
    for p in 0..4 {
        let mut b = drained(&mut acc, &("t".to_string(), p));
        b.seal(&BatchMeta::default());
        acc.pool.release(b.reserved);
        acc.recycle(b);
        assert!(held(&acc) <= 4 * block);
    }
    assert_eq!(recycled(&acc), 4);
    // A record needing three blocks' room gets it: three spares go.
    let big = ProducerRecord::new("t", vec![1u8; 3 * block - 200], 1);
    acc.append(
        0,
        &big,
        RecordToken(9),
        Instant::ZERO,
        deadline,
        Block::Whole,
    )
    .unwrap();
    assert!(held(&acc) <= 4 * block, "{} > {}", held(&acc), 4 * block);
    assert_eq!(recycled(&acc), 1);
    // The last spare is reused for the next batch.size batch, within the pool.
    acc.append(
        1,
        &small,
        RecordToken(10),
        Instant::ZERO,
        deadline,
        Block::Whole,
    )
    .unwrap();
    assert_eq!(recycled(&acc), 0);
    assert!(held(&acc) <= 4 * block);
}

/// Without idempotence, a retried batch went back behind any younger batch already
/// waiting for its retry, and expiry looks only at queue fronts: the older batch outlived
/// its `delivery.timeout.ms` until the younger one's passed (found by reading the code; it
/// takes a younger batch's request to fail before an older batch's retry does).
#[test]
fn a_retried_batch_goes_back_in_deadline_order_so_fronts_expire_first() {
    let mut acc = Accumulator::new(1024, 1024, Duration::ZERO, Compression::None, 1 << 20);
    let tp = ("t".to_string(), 0);
    let r = ProducerRecord::new("t", vec![1u8; 10], 1);
    let (older, younger) = (Instant::from_millis(2000), Instant::from_millis(2060));
    acc.append(tp.1, &r, RecordToken(0), Instant::ZERO, older, Block::Whole)
        .unwrap();
    let mut first = drained(&mut acc, &tp);
    first.seal(&BatchMeta::default());
    let at = Instant::from_millis(60);
    acc.append(tp.1, &r, RecordToken(1), at, younger, Block::Whole)
        .unwrap();
    let mut second = drained(&mut acc, &tp);
    second.seal(&BatchMeta::default());
    // The younger batch's request failed first; then the older one's retry did.
    acc.reenqueue(second);
    acc.reenqueue(first);
    let expired = acc.expire(older);
    assert_eq!(
        expired.iter().map(|b| b.deadline).collect::<Vec<_>>(),
        [older],
        "the older batch expires at its own deadline"
    );
    assert_eq!(acc.next_deadline(), Some(younger));
}

fn fill(acc: &mut Accumulator, partition: i32, records: u64, first_token: u64) -> u64 {
    let r = ProducerRecord::new("t", vec![7u8; 100], 1);
    let deadline = Instant::from_millis(1000);
    for i in 0..records {
        let token = RecordToken(first_token + i);
        if acc
            .append(partition, &r, token, Instant::ZERO, deadline, Block::Whole)
            .is_err()
        {
            return i;
        }
    }
    records
}

/// Out of the box (16 KB batches, as Java), a partition whose full batch waits to be sent
/// made 16 KB requests however much was queued: 0.57M records/s through `kafka-cli perf
/// produce` on one partition, against 1.56M with batch.size=1000000. A waiting full batch
/// now grows, a block at a time, to 1 MB; it is ready from the moment it is full.
#[test]
fn a_full_batch_grows_while_it_waits_up_to_the_cap() {
    let mut acc = Accumulator::new(
        16384,
        1 << 20,
        Duration::from_secs(1),
        Compression::None,
        32 << 20,
    );
    // 20,000 records of about 110 B: 2.2 MB, all on partition 0, none drained. The first
    // batch fills to batch.size (the sender could have taken it); those behind it grow.
    assert_eq!(fill(&mut acc, 0, 20_000, 0), 20_000);
    let q = acc.queues.get("t", 0).unwrap();
    let sizes: Vec<usize> = q.iter().map(|b| b.reserved).collect();
    assert_eq!(&sizes[..3], [16384, 1 << 20, 1 << 20], "{sizes:?}");
    assert!(q
        .iter()
        .all(|b| b.size() <= b.reserved && b.size() <= 1 << 20));
    assert!(
        q.iter().all(|b| b.full),
        "each is ready (filled batch.size)"
    );
    assert_eq!(
        acc.pool.used,
        sizes.iter().sum::<usize>(),
        "growth is accounted"
    );
    let (ready, _) = ready_tps(&acc, Instant::ZERO, |_| false);
    assert_eq!(ready, [(Topic::from("t"), 0)], "ready before linger.ms");
    // A first batch the sender found waiting (its connection at its in-flight limit) grows
    // too; drained, it is sealed and takes no more records: the next opens at 16 KB.
    let tp = ("t".to_string(), 0);
    let mut acc = Accumulator::new(16384, 1 << 20, Duration::ZERO, Compression::None, 32 << 20);
    assert_eq!(fill(&mut acc, 0, 1, 0), 1);
    acc.waiting(std::slice::from_ref(&tp));
    assert_eq!(fill(&mut acc, 0, 199, 1), 199);
    assert_eq!(acc.queue_len("t", 0), 1);
    let mut first = drained(&mut acc, &tp);
    first.seal(&BatchMeta::default());
    assert_eq!(first.reserved, 32768, "grew once, while it waited");
    assert_eq!(fill(&mut acc, 0, 1, 200), 1);
    let second = drained(&mut acc, &tp);
    assert_eq!(
        (second.reserved, second.records.len()),
        (16384, 1),
        "a new 16 KB batch"
    );
}

/// A topic whose broker refused a grown batch as too large (its `max.message.bytes` is
/// below 1 MB) grows its batches to half the refused size from then on, instead of having
/// every grown batch refused and split.
#[test]
fn growth_stops_below_a_size_the_broker_refused() {
    let mut acc = Accumulator::new(
        16384,
        1 << 20,
        Duration::from_secs(1),
        Compression::None,
        32 << 20,
    );
    acc.cap_growth("t", 256 << 10);
    assert_eq!(fill(&mut acc, 0, 20_000, 0), 20_000);
    let q = acc.queues.get("t", 0).unwrap();
    let largest = q.iter().map(|b| b.reserved).max().unwrap();
    assert_eq!(largest, 128 << 10, "half the refused 256 KB");
    // Another topic still grows to 1 MB, and a cap never goes below batch.size.
    acc.cap_growth("u", 1000);
    assert_eq!(acc.grow_caps["u"], 16384);
}

/// 16 KB blocks exist so that many partitions fit in `buffer.memory`: with growth, 1,000
/// partitions in 32 MB still take a block each, and when the pool is full appends are
/// refused (the send waits) rather than the pool overrun.
#[test]
fn many_partitions_stay_within_buffer_memory() {
    let total = 32 << 20;
    let mut acc = Accumulator::new(
        16384,
        1 << 20,
        Duration::from_secs(1),
        Compression::None,
        total,
    );
    let mut token = 0;
    // Round after round over 1,000 partitions, as a sticky partitioner switching every
    // batch would: every partition's batch fills and grows until memory runs short.
    let mut refused = false;
    for _round in 0..40 {
        for p in 0..1000 {
            let n = fill(&mut acc, p, 160, token);
            token += n;
            refused |= n < 160;
            assert!(acc.pool.used <= total, "{} > {total}", acc.pool.used);
        }
    }
    assert!(refused, "the pool filled and appends were refused");
    // Every partition got memory, and the pool accounts for every batch's blocks.
    for p in 0..1000 {
        assert!(acc.queue_len("t", p) >= 1, "partition {p} has a batch");
    }
    let reserved: usize = acc
        .queues
        .iter()
        .flat_map(|(_, _, q)| q.iter())
        .map(|b| b.reserved)
        .sum();
    assert_eq!(reserved, acc.pool.used);
    assert!(
        acc.queues
            .iter()
            .flat_map(|(_, _, q)| q.iter())
            .all(|b| b.reserved % 16384 == 0 && b.reserved - b.size() < 16384),
        "growth comes in whole blocks, and wastes less than one"
    );
}

/// The index agrees with a visit of every queue, whatever happens to the queues: what is
/// ready and when the next becomes ready are the same, and the next deadline it gives is
/// never later than the earliest queued batch's (a late one would miss an expiry).
#[test]
fn the_index_of_first_batches_agrees_with_visiting_every_queue() {
    for seed in 0..40 {
        let mut rng = crate::rng::Rng::new(seed);
        let linger = Duration::from_millis(5);
        let mut acc = Accumulator::new(400, 1200, linger, Compression::None, 64 << 10);
        let mut now = Instant::ZERO;
        let mut token = 0;
        let mut out: Vec<Batch> = Vec::new();
        for step in 0..400 {
            now += Duration::from_micros(rng.below(3000));
            let partition = rng.below(12) as i32;
            match rng.below(10) {
                0..=4 => {
                    let r = ProducerRecord::new(
                        ["a", "b", "c"][rng.below(3) as usize],
                        vec![1u8; rng.below(300) as usize],
                        1,
                    );
                    let r = ProducerRecord {
                        partition: Some(partition),
                        ..r
                    };
                    let deadline = now + Duration::from_millis(20 + rng.below(40));
                    token += 1;
                    let _ = acc.append(
                        partition,
                        &r,
                        RecordToken(token),
                        now,
                        deadline,
                        Block::Whole,
                    );
                }
                5 | 6 => {
                    acc.promote(now);
                    let (ready, _) = ready_tps(&acc, now, |_| false);
                    let taken = acc.drain(&ready, 1 + rng.below(2000) as usize);
                    out.extend(taken);
                }
                7 if !out.is_empty() => {
                    let mut b = out.swap_remove(rng.below(out.len() as u64) as usize);
                    b.attempts += 1;
                    b.retry_at = Some(now + Duration::from_millis(rng.below(10)));
                    acc.reenqueue(b);
                }
                8 => out.extend(acc.expire(now)),
                // Topics no longer wanted go (their queue ids are given again).
                9 if rng.below(4) == 0 => {
                    let keep = ["a", "b", "c"][rng.below(3) as usize];
                    acc.forget_idle_topics(|t| t == keep);
                }
                _ => {
                    let tp = (["a", "b"][rng.below(2) as usize].to_owned(), partition);
                    acc.waiting(&[tp]);
                }
            }
            if rng.below(2) == 0 {
                acc.promote(now);
            }
            let blocked = |tp: &(Topic, i32)| tp.1 % 5 == 0;
            let (ready, next) = ready_tps(&acc, now, blocked);
            let (ready_all, next_all) = scanned_tps(&acc, now, blocked);
            assert_eq!(ready, ready_all, "seed {seed} step {step}: ready");
            assert_eq!(next, next_all, "seed {seed} step {step}: next ready");
            let linger_next = scanned_tps(&acc, now, |_| false).1;
            assert_eq!(
                acc.next_ready(now, false),
                linger_next,
                "seed {seed} step {step}"
            );
            let earliest = acc
                .queues
                .iter()
                .filter_map(|(_, _, q)| q.front())
                .map(|b| b.deadline)
                .min();
            assert_eq!(acc.next_deadline().is_some(), earliest.is_some());
            assert!(
                acc.next_deadline() <= earliest,
                "seed {seed} step {step}: a late deadline"
            );
            // The deadlines' front is the earliest indexed key, never a stale one, they are
            // sorted, and stale entries never outnumber live ones by more than the slack.
            let keyed = (acc.queues.iter())
                .filter_map(|(_, _, q)| q.keys.map(|k| k.1))
                .min();
            assert_eq!(acc.next_deadline(), keyed, "seed {seed} step {step}");
            let live = acc.queues.nonempty;
            assert!(
                acc.fronts.due.len() <= 2 * live + super::DUE_SLACK,
                "seed {seed} step {step}: {} entries for {live} queues",
                acc.fronts.due.len()
            );
            // Each live queue has exactly one current entry.
            let current = (acc.fronts.due.iter())
                .filter(|e| acc.queues.is_current(e.1, e.2))
                .count();
            let due = &acc.fronts.due;
            assert!(due.iter().zip(due.iter().skip(1)).all(|(a, b)| a.0 <= b.0));
            assert_eq!(current, live, "seed {seed} step {step}");
            // Likewise the ready times: sorted, one current entry per live queue (among them
            // or among those due), and stale ones bounded.
            let f = &acc.fronts;
            assert!(f
                .ready
                .iter()
                .zip(f.ready.iter().skip(1))
                .all(|(a, b)| a.0 <= b.0));
            let current = (f.ready.iter().map(|e| (e.1, e.2)))
                .chain(f.ready_now.iter().copied())
                .filter(|(id, gen)| acc.queues.is_ready_current(*id, *gen))
                .count();
            assert_eq!(current, live, "seed {seed} step {step}: ready entries");
            assert!(f.ready.len() + f.ready_now.len() <= 2 * live + super::READY_SLACK + 1);
            // Emptied queues stay, each indexed exactly while it holds a batch, and the
            // counts agree.
            for parts in &acc.queues.topics {
                let held = parts.partitions.iter().filter(|q| !q.is_empty()).count();
                assert_eq!(parts.nonempty, held, "seed {seed} step {step}");
            }
            assert!(acc
                .queues
                .iter()
                .all(|(_, _, q)| q.keys.is_some() != q.is_empty()));
            let held = acc.queues.iter().filter(|(_, _, q)| !q.is_empty()).count();
            assert_eq!(acc.queues.nonempty, held, "seed {seed} step {step}");
            assert_eq!(acc.is_empty(), held == 0);
            // Each queue's id names it: its place gives back its topic and partition.
            for (t, p, q) in acc.queues.iter() {
                let (t2, p2, q2) = acc.queues.by_id(q.id);
                assert_eq!((t, p, q.id), (t2, p2, q2.id), "seed {seed} step {step}");
            }
            // Forgotten queues' ids are given again, not leaked.
            let (queues, places) = (acc.queues.iter().count(), acc.queues.places.len());
            assert_eq!(
                queues,
                places - acc.queues.free.len(),
                "seed {seed} step {step}"
            );
        }
    }
}

/// Emptied queues stay (no remaking per batch), until the topic is no longer wanted; a topic
/// with a batch queued keeps its queues whatever the producer says.
#[test]
fn idle_topics_queues_go_when_no_longer_wanted() {
    let mut acc = Accumulator::new(1024, 1024, Duration::ZERO, Compression::None, 1 << 20);
    let deadline = Instant::from_millis(1000);
    for (topic, token) in [("idle", 0), ("busy", 1)] {
        let r = ProducerRecord::new(topic, vec![1u8; 10], 1);
        let fit = Block::Whole;
        acc.append(0, &r, RecordToken(token), Instant::ZERO, deadline, fit)
            .unwrap();
    }
    drained(&mut acc, &("idle".to_string(), 0));
    assert!(
        acc.queues.index.contains_key("idle"),
        "an emptied queue stays"
    );
    assert!(!acc.is_empty());
    acc.forget_idle_topics(|_| false);
    assert!(!acc.queues.index.contains_key("idle"));
    assert_eq!(
        acc.queue_len("busy", 0),
        1,
        "a queued batch is never dropped"
    );
    drained(&mut acc, &("busy".to_string(), 0));
    assert!(acc.is_empty());
    acc.forget_idle_topics(|t| t == "busy");
    assert!(acc.queues.index.contains_key("busy"), "still wanted");
    acc.forget_idle_topics(|_| false);
    assert!(acc.queues.topics.is_empty() && acc.queues.index.is_empty());
}

/// The topic last appended to is remembered with its place; forgetting topics moves places,
/// so a record after that must still land in its own topic's queue.
#[test]
fn appends_find_their_topic_after_others_were_forgotten() {
    let mut acc = Accumulator::new(1024, 1024, Duration::ZERO, Compression::None, 1 << 20);
    let deadline = Instant::from_millis(1000);
    let (a, b) = (Topic::from("a"), Topic::from("b"));
    let append = |acc: &mut Accumulator, topic: &Topic, partition, token| {
        let r = ProducerRecord::new(topic.clone(), vec![1u8; 10], 1);
        acc.append(
            partition,
            &r,
            RecordToken(token),
            Instant::ZERO,
            deadline,
            Block::Whole,
        )
        .unwrap();
    };
    append(&mut acc, &a, 2, 0);
    append(&mut acc, &b, 1, 1);
    drained(&mut acc, &("a".to_string(), 2));
    // "a" goes; "b", remembered at place 1, moves to place 0.
    acc.forget_idle_topics(|t| t == "b");
    append(&mut acc, &b, 1, 2);
    append(&mut acc, &a, 0, 3);
    assert_eq!(acc.queue_len("b", 1), 1, "both of b's records in one batch");
    assert_eq!(acc.queue_len("a", 0), 1);
    let order: Vec<(&str, i32)> = acc.partitions().collect();
    assert_eq!(order, [("a", 0), ("b", 1)], "in (topic, partition) order");
    assert_eq!(
        acc.queues.get("b", 1).unwrap()[0].records.len(),
        2,
        "the record after the forgetting joined b's batch"
    );
}

/// Keyed over many partitions a batch holds a few records: it reserves a small block that
/// doubles as records come, up to `batch.size`, rather than a whole `batch.size` block each
/// (which had let 1,000 partitions' nearly empty batches starve `buffer.memory`).
#[test]
fn a_new_batch_reserves_a_small_block_that_doubles_up_to_batch_size() {
    let (block, pool) = (16384, 128 << 10);
    let mut acc = Accumulator::new(block, 1 << 20, Duration::ZERO, Compression::None, pool);
    let deadline = Instant::from_millis(1000);
    let record = ProducerRecord::new("t", vec![1u8; 100], 1);
    // Forty one-record batches fit in what less than three batch.size blocks would take.
    for p in 0..40 {
        let a = acc.append(
            p,
            &record,
            RecordToken(p as u64),
            Instant::ZERO,
            deadline,
            Block::Whole,
        );
        assert!(a.is_ok(), "partition {p}: {a:?}");
    }
    assert_eq!(acc.pool.used, 40 * MIN_BLOCK);
    // Partition 0's batch doubles as it fills, and is full only at batch.size.
    let mut sizes = vec![];
    let mut token = 40;
    loop {
        let a = acc
            .append(
                0,
                &record,
                RecordToken(token),
                Instant::ZERO,
                deadline,
                Block::Whole,
            )
            .unwrap();
        token += 1;
        let q = acc.queues.get_mut("t", 0).unwrap();
        let first = q.front().unwrap();
        if sizes.last() != Some(&first.reserved) {
            sizes.push(first.reserved);
        }
        if a.filled {
            assert!(first.full && first.size() <= block, "{}", first.size());
            break;
        }
        assert!(!first.full, "full at {} of {block}", first.reserved);
    }
    assert_eq!(sizes, [1024, 2048, 4096, 8192, 16384]);
    // The record that did not fit opened the next batch, as large as the one before it.
    assert_eq!(acc.pool.used, 39 * MIN_BLOCK + 2 * block);
    let q = acc.queues.get_mut("t", 0).unwrap();
    assert_eq!(q.back().unwrap().reserved, block);
    let full = drained(&mut acc, &("t".to_string(), 0));
    acc.pool.release(full.reserved);
    acc.append(
        1,
        &record,
        RecordToken(token),
        Instant::ZERO,
        deadline,
        Block::Whole,
    )
    .unwrap();
    let q = acc.queues.get_mut("t", 1).unwrap();
    assert_eq!(
        (q.len(), q[0].records.len(), q[0].reserved),
        (1, 2, MIN_BLOCK),
        "partition 1's batch took the record"
    );
}

/// A batch waiting to be sent takes records for a twentieth of its delivery timeout, not
/// only 100 ms: when the broker is the bottleneck (keyed over 10,000 partitions of one node),
/// batches wait seconds for their turn, and a batch closed after 100 ms held 1.5 records
/// where it could hold 6 (see `open_span`). Past the span it closes, so that its first record
/// waits at most that past its own deadline.
#[test]
fn a_waiting_batch_takes_records_for_a_twentieth_of_the_delivery_timeout() {
    let mut acc = Accumulator::new(16384, 16384, Duration::ZERO, Compression::None, 1 << 20);
    let tp = ("t".to_string(), 0);
    let r = ProducerRecord::new("t", vec![1u8; 100], 0);
    // Whether appending record `n` at `at`, due `timeout` later, opened a new batch.
    let append = |acc: &mut Accumulator, n: u64, at: Instant, timeout: Duration| {
        acc.append(tp.1, &r, RecordToken(n), at, at + timeout, Block::Whole)
            .unwrap()
            .new_batch
    };
    let timeout = Duration::from_secs(120);
    assert!(append(&mut acc, 0, Instant::ZERO, timeout));
    assert!(
        !append(&mut acc, 1, Instant::from_millis(5_000), timeout),
        "5 s: still open"
    );
    assert!(
        !append(&mut acc, 2, Instant::from_millis(6_000), timeout),
        "6 s: the span's end"
    );
    assert!(
        append(&mut acc, 3, Instant::from_millis(6_001), timeout),
        "past 6 s: a new batch"
    );
    let first = drained(&mut acc, &tp);
    assert_eq!(first.records.len(), 3);
    assert_eq!(first.deadline, Instant::from_millis(6_000) + timeout);

    // A short timeout still gives 100 ms.
    let mut acc = Accumulator::new(16384, 16384, Duration::ZERO, Compression::None, 1 << 20);
    let short = Duration::from_millis(1_500);
    assert!(append(&mut acc, 0, Instant::ZERO, short));
    assert!(!append(&mut acc, 1, Instant::from_millis(100), short));
    assert!(append(&mut acc, 2, Instant::from_millis(101), short));
}
