//! The assign-mode fetcher in virtual time: records produced by the real producer into a
//! SingleBroker are read back, and hand-built fetch responses exercise truncated, compressed
//! and control batches.

use kafka_core::net::Machine as _;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_core::config::{ConsumerConfig, HostPort};
use kafka_core::fetcher::{Consumer, FetchError, FetchEvent, Output, StartFrom};
use kafka_core::net::{ConnId, Transmit};
use kafka_core::producer::{self, Producer, ProducerEvent, ProducerRecord};
use kafka_core::{Instant, ProducerConfig};
use kafka_sim::proto::api::{RequestBody, ResponseBody};
use kafka_sim::proto::compression::Compression;
use kafka_sim::proto::messages::fetch_response::{
    FetchResponse, FetchableTopicResponse, PartitionData,
};
use kafka_sim::proto::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_sim::proto::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_sim::proto::record::{BatchBuilder, BatchMeta};
use kafka_sim::{Reply, ScriptedBroker, SimTime, SingleBroker};

fn sim(t: Instant) -> SimTime {
    Duration::from_nanos(t.as_nanos())
}

/// Makes the broker a connection to an address reaches.
type ConnectTo = Box<dyn FnMut(&HostPort) -> ScriptedBroker>;

/// Drives a fetcher against brokers made by `connect`, moving virtual time.
struct Harness {
    f: Consumer,
    now: Instant,
    connect: Box<dyn FnMut() -> ScriptedBroker>,
    /// When set, the broker a connection reaches depends on its address (several nodes).
    connect_to: Option<ConnectTo>,
    brokers: BTreeMap<ConnId, ScriptedBroker>,
    events: Vec<FetchEvent>,
}

impl Harness {
    fn new(settings: &[(&str, &str)], connect: Box<dyn FnMut() -> ScriptedBroker>) -> Self {
        let mut map = vec![("bootstrap.servers", "broker:9092")];
        map.extend_from_slice(settings);
        Harness {
            f: Consumer::new(ConsumerConfig::from_map(map).unwrap()),
            now: Instant::ZERO,
            connect,
            connect_to: None,
            brokers: BTreeMap::new(),
            events: Vec::new(),
        }
    }

    /// A harness whose connections reach the broker `connect_to` makes for their address.
    fn with_nodes(settings: &[(&str, &str)], connect_to: ConnectTo) -> Self {
        let mut h = Harness::new(settings, Box::new(|| unreachable!("connect_to is set")));
        h.connect_to = Some(connect_to);
        h
    }

    /// Brings every broker's clock to now, so that a request sent outside `advance_to` is
    /// answered in the present.
    fn sync_brokers(&mut self) {
        let conns: Vec<ConnId> = self.brokers.keys().copied().collect();
        for c in conns {
            let out = self.brokers.get_mut(&c).unwrap().advance(sim(self.now));
            self.deliver(c, out);
        }
    }

    fn deliver(&mut self, conn: ConnId, out: kafka_sim::Output) {
        if !out.bytes.is_empty() {
            self.f.handle_received(conn, &out.bytes, self.now);
        }
        if out.closed {
            self.brokers.remove(&conn);
            self.f.handle_closed(conn, self.now);
        }
    }

    fn pump(&mut self) {
        while let Some(o) = self.f.poll_output() {
            match o {
                Output::Event(e) => self.events.push(e),
                Output::Transmit(Transmit::Connect { conn, addr }) => {
                    let b = match &mut self.connect_to {
                        Some(to) => to(&addr),
                        None => (self.connect)(),
                    };
                    self.brokers.insert(conn, b);
                    self.f.handle_connected(conn, self.now);
                }
                Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let Some(b) = self.brokers.get_mut(&conn) else {
                        continue;
                    };
                    let out = b.receive(&bytes).unwrap();
                    self.deliver(conn, out);
                }
                Output::Transmit(Transmit::Close { conn }) => {
                    self.brokers.remove(&conn);
                }
                _ => unreachable!("a variant this test does not know"),
            }
        }
    }

    fn advance_to(&mut self, t: Instant) {
        self.pump();
        loop {
            let broker_due = self.brokers.values().filter_map(|b| b.next_due()).min();
            let next = [
                self.f.poll_timeout(),
                broker_due.map(|d| Instant::from_nanos(d.as_nanos() as u64)),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|n| *n <= t) else {
                break;
            };
            assert!(next >= self.now, "time never goes back");
            let before = (self.now, self.events.len());
            self.now = next;
            let conns: Vec<ConnId> = self.brokers.keys().copied().collect();
            for c in conns {
                let out = self.brokers.get_mut(&c).unwrap().advance(sim(self.now));
                self.deliver(c, out);
            }
            self.f.handle_timeout(self.now);
            self.pump();
            let again = self.f.poll_timeout();
            assert!(
                !(again == Some(next) && before.0 == next && self.events.len() == before.1),
                "live-lock at {next:?}"
            );
        }
        self.now = self.now.max(t);
        self.f.handle_timeout(self.now);
        self.pump();
    }

    fn values(&self) -> Vec<(i64, String)> {
        self.events
            .iter()
            .flat_map(|e| match e {
                FetchEvent::Records { records, .. } => records
                    .clone()
                    .map(Result::unwrap)
                    .map(|r| {
                        (
                            r.offset,
                            String::from_utf8(r.value.as_ref().unwrap().to_vec()).unwrap(),
                        )
                    })
                    .collect(),
                _ => vec![],
            })
            .collect()
    }
}

/// ListOffsets' answer for t-0: `offset`.
fn offsets_of_t0(offset: i64) -> ResponseBody {
    ResponseBody::ListOffsets(ListOffsetsResponse {
        topics: vec![ListOffsetsTopicResponse {
            name: "t".into(),
            partitions: vec![ListOffsetsPartitionResponse {
                partition_index: 0,
                offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// A Fetch answer holding t-0's `data`.
fn fetch_of_t0(data: PartitionData) -> ResponseBody {
    ResponseBody::Fetch(FetchResponse {
        responses: vec![FetchableTopicResponse {
            topic: "t".into(),
            partitions: vec![data],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// Produces `n` records to partition 0 of "t" with the real producer.
fn produce(cluster: &SingleBroker, n: usize, compression: &str, start: usize) {
    produce_to(cluster, n, compression, start, 1);
}

/// Produces `n` records spread over `partitions` partitions of "t".
fn produce_to(cluster: &SingleBroker, n: usize, compression: &str, start: usize, partitions: i32) {
    let records = (start..start + n).map(|i| (i as i32 % partitions, format!("v{i}")));
    produce_records(cluster, compression, records.collect());
}

/// Produces these (partition, value) records to "t", in order.
fn produce_records(cluster: &SingleBroker, compression: &str, records: Vec<(i32, String)>) {
    let n = records.len();
    let cfg = ProducerConfig::from_map([
        ("bootstrap.servers", "broker:9092"),
        ("compression.type", compression),
        ("batch.size", "2000"),
    ])
    .unwrap();
    let mut p = Producer::new(cfg);
    let mut now = Instant::ZERO;
    let mut conns = BTreeMap::new();
    for (partition, value) in records {
        p.send(
            ProducerRecord::new("t", value, 1).with_partition(partition),
            now,
        )
        .unwrap();
    }
    p.flush(now);
    let mut delivered = 0;
    for _ in 0..1000 {
        while let Some(o) = p.poll_output() {
            match o {
                producer::Output::Transmit(Transmit::Connect { conn, .. }) => {
                    conns.insert(conn, cluster.connection());
                    p.handle_connected(conn, now);
                }
                producer::Output::Transmit(Transmit::Send { conn, bytes }) => {
                    let out = conns.get_mut(&conn).unwrap().receive(&bytes).unwrap();
                    p.handle_received(conn, &out.bytes, now);
                }
                producer::Output::Event(ProducerEvent::Delivered(batch)) => {
                    delivered += batch.len()
                }
                producer::Output::Event(ProducerEvent::Outcome(_, o)) => panic!("{o:?}"),
                _ => {}
            }
        }
        if delivered == n {
            return;
        }
        now += Duration::from_millis(1);
        p.handle_timeout(now);
    }
    panic!("only {delivered} of {n} delivered");
}

fn single(cluster: &SingleBroker) -> Box<dyn FnMut() -> ScriptedBroker> {
    let c = cluster.clone();
    Box::new(move || c.connection())
}

#[test]
fn reads_everything_from_earliest_in_order_then_reports_the_end() {
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let cluster = SingleBroker::new("broker", 9092, 1);
        produce(&cluster, 300, codec, 0);
        // A small per-partition limit forces many fetches, each starting inside a batch.
        let mut h = Harness::new(&[("max.partition.fetch.bytes", "700")], single(&cluster));
        h.f.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
            .unwrap();
        h.advance_to(Instant::from_millis(2000));
        let got = h.values();
        let want: Vec<(i64, String)> = (0..300).map(|i| (i, format!("v{i}"))).collect();
        assert_eq!(got, want, "{codec}: every record exactly once, in order");
        assert_eq!(h.f.high_watermark("t", 0), 300);
        assert_eq!(h.f.position("t", 0), Some(300));
        let ends: Vec<_> = h
            .events
            .iter()
            .filter(|e| matches!(e, FetchEvent::EndOfPartition { .. }))
            .collect();
        assert_eq!(ends.len(), 1, "{codec}: the end is reported once");
    }
}

#[test]
fn latest_and_explicit_offsets() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    produce(&cluster, 10, "none", 0);
    let mut h = Harness::new(&[], single(&cluster));
    h.f.assign([("t".to_string(), 0)], StartFrom::Latest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(600));
    assert!(h.values().is_empty(), "latest skips what exists");
    produce(&cluster, 5, "none", 10);
    h.advance_to(Instant::from_millis(2000));
    assert_eq!(
        h.values().iter().map(|v| v.0).collect::<Vec<_>>(),
        [10, 11, 12, 13, 14]
    );

    let mut h = Harness::new(&[], single(&cluster));
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(7), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(600));
    assert_eq!(h.values().first().map(|v| v.0), Some(7));
    assert_eq!(h.values().len(), 8);
}

#[test]
fn an_empty_fetch_long_polls_instead_of_spinning() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    produce(&cluster, 1, "none", 0);
    let mut h = Harness::new(&[("fetch.max.wait.ms", "500")], single(&cluster));
    h.f.assign([("t".to_string(), 0)], StartFrom::Latest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(10_000));
    let fetches = h
        .brokers
        .values()
        .flat_map(|b| b.requests())
        .filter(|(_, r)| matches!(r, RequestBody::Fetch(_)))
        .count();
    assert!(
        (18..=22).contains(&fetches),
        "about one fetch per 500 ms, got {fetches}"
    );
}

#[test]
fn out_of_range_applies_the_reset_policy() {
    let cluster = SingleBroker::new("broker", 9092, 1);
    produce(&cluster, 3, "none", 0);
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")], single(&cluster));
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(1000), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(1000));
    assert_eq!(
        h.values().iter().map(|v| v.0).collect::<Vec<_>>(),
        [0, 1, 2]
    );

    let mut h = Harness::new(&[("auto.offset.reset", "none")], single(&cluster));
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(1000), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(1000));
    assert!(h.events.iter().any(|e| matches!(
        e,
        FetchEvent::Error {
            error: FetchError::OffsetOutOfRange(1000),
            ..
        }
    )));
}

fn batch(base: i64, values: &[&str], codec: Compression, control: bool) -> Bytes {
    let mut b = BatchBuilder::new(codec, 256);
    for v in values {
        b.append(1, None, Some(v.as_bytes()), &[]);
    }
    b.seal(&BatchMeta {
        base_offset: base,
        control,
        transactional: control,
        ..BatchMeta::default()
    })
    .unwrap()
}

/// A scripted broker whose Fetch answers come from `answer(fetch_offset)`.
fn scripted(answer: fn(i64) -> Bytes) -> Box<dyn FnMut() -> ScriptedBroker> {
    scripted_with(
        answer,
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        0,
        Duration::ZERO,
    )
}

/// As [`scripted`], answering the first `fail_fetches` fetches NOT_LEADER_OR_FOLLOWER and
/// counting metadata requests in `metadata_requests`, answering ListOffsets with
/// `list_offset`, and taking `delay` over each Fetch with records.
fn scripted_with(
    answer: fn(i64) -> Bytes,
    fail_fetches: Arc<AtomicUsize>,
    metadata_requests: Arc<AtomicUsize>,
    list_offset: i64,
    delay: Duration,
) -> Box<dyn FnMut() -> ScriptedBroker> {
    Box::new(move || {
        let (fail_fetches, metadata_requests) = (fail_fetches.clone(), metadata_requests.clone());
        ScriptedBroker::new(move |_, body| match body {
            RequestBody::Metadata(_) => {
                metadata_requests.fetch_add(1, Ordering::SeqCst);
                Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                    brokers: vec![MetadataResponseBroker {
                        node_id: 1,
                        host: "broker".into(),
                        port: 9092,
                        ..Default::default()
                    }],
                    topics: vec![MetadataResponseTopic {
                        name: Some("t".into()),
                        partitions: vec![MetadataResponsePartition {
                            partition_index: 0,
                            leader_id: 1,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }))
            }
            RequestBody::ListOffsets(_) => Reply::Respond(offsets_of_t0(list_offset)),
            RequestBody::Fetch(_) if fail_fetches.load(Ordering::SeqCst) > 0 => {
                fail_fetches.fetch_sub(1, Ordering::SeqCst);
                Reply::Respond(fetch_of_t0(PartitionData {
                    partition_index: 0,
                    error_code: 6,
                    ..Default::default()
                }))
            }
            RequestBody::Fetch(req) => {
                let offset = req.topics[0].partitions[0].fetch_offset;
                let records = answer(offset);
                let empty = records.is_empty();
                let resp = fetch_of_t0(PartitionData {
                    partition_index: 0,
                    high_watermark: 7,
                    records: Some(records),
                    ..Default::default()
                });
                if empty {
                    Reply::After(Duration::from_millis(500), Box::new(Reply::Respond(resp)))
                } else if !delay.is_zero() {
                    Reply::After(delay, Box::new(Reply::Respond(resp)))
                } else {
                    Reply::Respond(resp)
                }
            }
            other => panic!("{other:?}"),
        })
    })
}

#[test]
fn truncated_compressed_and_control_batches() {
    // Offsets 0-2 (lz4), a commit marker at 3, 4-6 (gzip); the broker cuts the last batch
    // short when fetching from 0, as Kafka does at the byte limit.
    fn answer(offset: i64) -> Bytes {
        let first = batch(0, &["a", "b", "c"], Compression::Lz4, false);
        let marker = {
            let mut b = BatchBuilder::new(Compression::None, 64);
            b.append(1, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]), &[]);
            b.seal(&BatchMeta {
                base_offset: 3,
                control: true,
                transactional: true,
                ..BatchMeta::default()
            })
            .unwrap()
        };
        let last = batch(4, &["e", "f", "g"], Compression::Gzip, false);
        let mut out = BytesMut::new();
        match offset {
            0 => {
                out.extend_from_slice(&first);
                out.extend_from_slice(&marker);
                out.extend_from_slice(&last[..last.len() - 10]); // truncated
            }
            // Refetching from inside the first batch returns it whole again.
            1..=3 => out.extend_from_slice(&first),
            4 => out.extend_from_slice(&last),
            _ => {}
        }
        out.freeze()
    }
    let _ = batch(0, &[], Compression::None, true);
    let mut h = Harness::new(&[], scripted(answer));
    h.f.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(2000));
    let got: Vec<(i64, String)> = h.values();
    let want: Vec<(i64, String)> = [(0, "a"), (1, "b"), (2, "c"), (4, "e"), (5, "f"), (6, "g")]
        .iter()
        .map(|(o, v)| (*o, v.to_string()))
        .collect();
    assert_eq!(
        got, want,
        "control record skipped, truncated batch refetched, nothing twice"
    );
    assert_eq!(h.f.position("t", 0), Some(7));
}

#[test]
fn compressed_data_is_charged_as_fetched_and_decoded_only_as_read() {
    // 2,000 records of 1 KiB each compress to a few KiB with lz4: the prefetch budget counts
    // those fetched bytes, and nothing is decompressed until the records are read (found by
    // the benchmark: decompressing eagerly held gigabytes against a 64 MB budget).
    fn answer(offset: i64) -> Bytes {
        if offset != 0 {
            return Bytes::new();
        }
        let value = [b'x'; 1024];
        let mut b = BatchBuilder::new(Compression::Lz4, 4096);
        for _ in 0..2000 {
            b.append(1, None, Some(&value[..]), &[]);
        }
        b.seal(&BatchMeta::default()).unwrap()
    }
    let fetched = answer(0).len();
    assert!(fetched < 64 * 1024, "lz4 compresses it: {fetched} B");
    let mut h = Harness::new(&[], scripted(answer));
    h.f.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(1000));
    let (records, bytes) = h
        .events
        .iter()
        .find_map(|e| match e {
            FetchEvent::Records { records, bytes, .. } => Some((records.clone(), *bytes)),
            _ => None,
        })
        .expect("records fetched");
    assert_eq!(bytes, fetched, "charged what was fetched");
    assert_eq!(h.f.buffered(), fetched);
    assert_eq!(records.encoded_len(), fetched, "held undecoded");
    let decoded: Vec<_> = records.map(Result::unwrap).collect();
    assert_eq!(decoded.len(), 2000);
    assert_eq!(decoded[1999].offset, 1999);
    let payload: usize = decoded
        .iter()
        .map(|r| r.value.as_ref().unwrap().len())
        .sum();
    assert_eq!(payload, 2000 * 1024, "{payload} B once read");
}

#[test]
fn a_corrupt_record_is_found_where_it_is_read_and_the_partition_stops_there() {
    // A batch whose crc is right but whose last record is malformed (a producer bug, or an
    // old broker's): the records before it are read, then the error names its offset.
    fn answer(offset: i64) -> Bytes {
        if offset != 0 {
            return Bytes::new();
        }
        let good = batch(0, &["a", "b", "c"], Compression::None, false);
        let mut bad = BytesMut::from(&good[..]);
        let last = bad.len() - 1;
        bad[last] = 0x0a; // the last record's header count: 5 headers that are not there
        kafka_sim::proto::record::rewrite_producer_fields(&bad.freeze(), -1, -1, -1).unwrap()
    }
    let mut h = Harness::new(&[], scripted(answer));
    h.f.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(1000));
    let records = h
        .events
        .iter()
        .find_map(|e| match e {
            FetchEvent::Records { records, .. } => Some(records.clone()),
            _ => None,
        })
        .expect("records fetched");
    let read: Vec<_> = records.collect();
    assert_eq!(read.len(), 3, "{read:?}");
    assert_eq!(read[0].as_ref().unwrap().offset, 0);
    assert_eq!(read[1].as_ref().unwrap().offset, 1);
    assert!(
        matches!(read[2], Err(FetchError::Corrupt { offset: 2, .. })),
        "{:?}",
        read[2]
    );
    // The reader says where it stopped: the partition stays there until a seek.
    h.f.stop_corrupt("t", 0, 2);
    let before = h.events.len();
    h.advance_to(Instant::from_millis(5000));
    assert_eq!(h.f.position("t", 0), Some(2));
    assert!(
        !h.events[before..]
            .iter()
            .any(|e| matches!(e, FetchEvent::Records { .. })),
        "nothing more is read of a stopped partition"
    );
}

#[test]
fn a_seek_back_discards_the_fetch_in_flight() {
    // Offsets 0-2 and 3-5 in two batches; each Fetch with records takes 100 ms. A seek back to
    // 0 while the fetch from 3 is on its way: that answer does not reach back to 0, so it is
    // dropped and 0 is fetched again (before, records 0-2 were skipped: the answer was taken
    // as if fetched from the new position).
    fn answer(offset: i64) -> Bytes {
        match offset {
            0..=2 => batch(0, &["a", "b", "c"], Compression::None, false),
            3..=5 => batch(3, &["d", "e", "f"], Compression::None, false),
            _ => Bytes::new(),
        }
    }
    let never = || Arc::new(AtomicUsize::new(0));
    let broker = scripted_with(answer, never(), never(), 0, Duration::from_millis(100));
    let mut h = Harness::new(&[], broker);
    h.f.assign([("t".to_string(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(150));
    assert_eq!(h.f.position("t", 0), Some(3), "the first batch was read");
    let before = h.values().len();
    h.f.seek("t", 0, StartFrom::Offset(0), h.now);
    h.advance_to(Instant::from_millis(1000));
    let after: Vec<i64> = h.values()[before..].iter().map(|(o, _)| *o).collect();
    assert_eq!(after, [0, 1, 2, 3, 4, 5], "read again from the seek");
}

#[test]
fn a_leadership_error_refreshes_metadata_and_fetching_resumes() {
    fn answer(offset: i64) -> Bytes {
        if offset == 0 {
            batch(0, &["a", "b"], Compression::None, false)
        } else {
            Bytes::new()
        }
    }
    let fails = Arc::new(AtomicUsize::new(2));
    let metadata = Arc::new(AtomicUsize::new(0));
    let mut h = Harness::new(
        &[],
        scripted_with(answer, fails.clone(), metadata.clone(), 0, Duration::ZERO),
    );
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(0), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(3000));
    assert_eq!(
        fails.load(Ordering::SeqCst),
        0,
        "both failing fetches happened"
    );
    assert!(
        metadata.load(Ordering::SeqCst) >= 3,
        "each NOT_LEADER refreshed metadata"
    );
    let got: Vec<i64> = h.values().iter().map(|v| v.0).collect();
    assert_eq!(
        got,
        [0, 1],
        "then fetching resumed, nothing lost or repeated"
    );
}

/// Tansu (memory storage) answers ListOffsets "latest" with the last batch's base offset + 1.
/// The log end is always at a batch boundary, so a "latest" inside a batch means the whole batch
/// was already there: `-o end` must not print its tail.
#[test]
fn a_latest_offset_inside_a_batch_starts_after_that_batch() {
    fn answer(offset: i64) -> Bytes {
        if offset >= 4 {
            return Bytes::new();
        }
        let mut both = batch(0, &["a", "b", "c"], Compression::None, false).to_vec();
        both.extend_from_slice(&batch(3, &["new"], Compression::None, false));
        Bytes::from(both)
    }
    let metadata = Arc::new(AtomicUsize::new(0));
    let fails = Arc::new(AtomicUsize::new(0));
    let mut h = Harness::new(
        &[],
        scripted_with(answer, fails, metadata, 1, Duration::ZERO),
    );
    h.f.assign([("t".to_string(), 0)], StartFrom::Latest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(600));
    assert_eq!(h.values(), [(3, "new".to_string())]);
}

/// The prefetch budget holds across 1,000 partitions while the application takes nothing,
/// exceeded by at most one batch (the broker returns a first batch whole); released bytes let
/// fetching go on until everything arrived.
#[test]
fn the_prefetch_budget_holds_across_a_thousand_partitions() {
    // Over one connection, and split over three (each with its share of the budget).
    for conns in ["1", "3"] {
        prefetch_budget_holds(conns);
    }
}

fn prefetch_budget_holds(conns: &str) {
    const PARTS: i32 = 1000;
    let cluster = SingleBroker::new("broker", 9092, PARTS as usize);
    produce_to(&cluster, 20_000, "none", 0, PARTS);
    let mut h = Harness::new(
        &[
            ("queued.max.messages.kbytes", "64"),
            ("connections.per.broker", conns),
        ],
        single(&cluster),
    );
    h.f.assign(
        (0..PARTS).map(|p| ("t".to_string(), p)),
        StartFrom::Earliest,
        h.now,
    )
    .unwrap();
    h.advance_to(Instant::from_millis(3000));
    // Measured apart from the fetcher's own counter: the payload bytes it handed out.
    let held: usize = h
        .events
        .iter()
        .map(|e| match e {
            FetchEvent::Records { records, .. } => records
                .clone()
                .map(Result::unwrap)
                .map(|r| r.value.as_ref().map_or(0, |v| v.len()))
                .sum(),
            _ => 0,
        })
        .sum();
    let largest_batch = 2000; // batch.size
    assert!(held > 0, "something was fetched");
    assert!(
        held <= 64 * 1024 + largest_batch,
        "held {held} B with a 64 KiB budget over {conns} connections"
    );
    assert!(
        h.f.buffered() <= 64 * 1024 + largest_batch,
        "{}",
        h.f.buffered()
    );
    // Take everything handed out so far, again and again, until all 20,000 arrived.
    let mut released = 0;
    for round in 0..400 {
        let bytes: usize = h.events[released..]
            .iter()
            .map(|e| match e {
                FetchEvent::Records { bytes, .. } => *bytes,
                _ => 0,
            })
            .sum();
        released = h.events.len();
        h.sync_brokers();
        let now = h.now;
        h.f.release(bytes, now);
        h.advance_to(h.now + Duration::from_millis(50));
        if h.values().len() == 20_000 {
            assert!(round >= 3, "it took several rounds of releases: {round}");
            return;
        }
    }
    panic!(
        "only {} of 20000 records arrived over {conns} connections",
        h.values().len()
    );
}

/// A transactional batch of `values` by producer `pid`, or its commit/abort marker.
fn txn_batch(base: i64, pid: i64, values: &[&str], marker: Option<i16>) -> Vec<u8> {
    let mut b = BatchBuilder::new(Compression::None, 256);
    match marker {
        Some(kind) => {
            let key = [0, 0, 0, kind as u8];
            b.append(1, Some(&key[..]), Some(&[0, 0, 0, 0, 0, 0][..]), &[]);
        }
        None => {
            for v in values {
                b.append(1, None, Some(v.as_bytes()), &[]);
            }
        }
    }
    b.seal(&BatchMeta {
        base_offset: base,
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: pid >= 0,
        control: marker.is_some(),
        ..BatchMeta::default()
    })
    .unwrap()
    .to_vec()
}

#[test]
fn read_committed_skips_aborted_transactions_and_markers() {
    use kafka_sim::proto::messages::fetch_response::AbortedTransaction;
    // pid 7 writes a, b then aborts; c is not transactional; pid 8 writes d and commits.
    let mut log = Vec::new();
    log.extend(txn_batch(0, 7, &["a", "b"], None));
    log.extend(txn_batch(2, 7, &[], Some(0)));
    log.extend(txn_batch(3, -1, &["c"], None));
    log.extend(txn_batch(4, 8, &["d"], None));
    log.extend(txn_batch(5, 8, &[], Some(1)));
    let log = Bytes::from(log);
    for (level, want) in [
        ("read_committed", vec!["c", "d"]),
        ("read_uncommitted", vec!["a", "b", "c", "d"]),
    ] {
        let log = log.clone();
        let connect = Box::new(move || {
            let log = log.clone();
            ScriptedBroker::new(move |_, body| match body {
                RequestBody::Metadata(_) => {
                    Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                        brokers: vec![MetadataResponseBroker {
                            node_id: 1,
                            host: "broker".into(),
                            port: 9092,
                            ..Default::default()
                        }],
                        topics: vec![MetadataResponseTopic {
                            name: Some("t".into()),
                            partitions: vec![MetadataResponsePartition {
                                partition_index: 0,
                                leader_id: 1,
                                ..Default::default()
                            }],
                            ..Default::default()
                        }],
                        ..Default::default()
                    }))
                }
                RequestBody::Fetch(req) => {
                    let offset = req.topics[0].partitions[0].fetch_offset;
                    let records = if offset < 6 {
                        log.clone()
                    } else {
                        Bytes::new()
                    };
                    // To a read_committed reader: a transaction still open at offsets 6-7 (its
                    // records withheld), so the last stable offset is below the high watermark.
                    let hw = if req.isolation_level == 1 { 8 } else { 6 };
                    let resp = fetch_of_t0(PartitionData {
                        partition_index: 0,
                        high_watermark: hw,
                        last_stable_offset: 6,
                        aborted_transactions: Some(vec![AbortedTransaction {
                            producer_id: 7,
                            first_offset: 0,
                            ..Default::default()
                        }]),
                        records: Some(records),
                        ..Default::default()
                    });
                    Reply::After(
                        Duration::from_millis(if offset < 6 { 0 } else { 500 }),
                        Box::new(Reply::Respond(resp)),
                    )
                }
                other => panic!("{other:?}"),
            })
        });
        let mut h = Harness::new(&[("isolation.level", level)], connect);
        h.f.assign([("t".to_string(), 0)], StartFrom::Offset(0), h.now)
            .unwrap();
        h.advance_to(Instant::from_millis(1000));
        let got: Vec<String> = h.values().into_iter().map(|v| v.1).collect();
        assert_eq!(got, want, "{level}");
        assert_eq!(h.f.position("t", 0), Some(6), "{level}: past the markers");
        assert!(
            h.events.contains(&FetchEvent::EndOfPartition {
                topic: "t".into(),
                partition: 0,
                offset: 6
            }),
            "{level}: the end is the last stable offset: {:?}",
            h.events
        );
    }
}

/// A broker whose partition "t"-0 changes leader (epoch 1 → 2) after the first fetch, the new
/// leader's log ending epoch 1 at `epoch1_end` (KIP-320). Records the OffsetForLeaderEpoch and
/// Fetch requests it got.
fn leader_change(
    epoch1_end: i64,
    seen: Arc<std::sync::Mutex<Vec<RequestBody>>>,
) -> Box<dyn FnMut() -> ScriptedBroker> {
    use kafka_sim::proto::messages::offset_for_leader_epoch_response::{
        EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
    };
    let fetches = Arc::new(AtomicUsize::new(0));
    Box::new(move || {
        let (fetches, seen) = (fetches.clone(), seen.clone());
        ScriptedBroker::new(move |_, body| {
            let moved = fetches.load(Ordering::SeqCst) >= 1;
            let epoch = if moved { 2 } else { 1 };
            let partition = |error_code: i16, records: Option<Bytes>, hw: i64| {
                fetch_of_t0(PartitionData {
                    partition_index: 0,
                    error_code,
                    high_watermark: hw,
                    records,
                    ..Default::default()
                })
            };
            match body {
                RequestBody::Metadata(_) => {
                    Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                        brokers: vec![MetadataResponseBroker {
                            node_id: 1,
                            host: "broker".into(),
                            port: 9092,
                            ..Default::default()
                        }],
                        topics: vec![MetadataResponseTopic {
                            name: Some("t".into()),
                            partitions: vec![MetadataResponsePartition {
                                partition_index: 0,
                                leader_id: 1,
                                leader_epoch: epoch,
                                ..Default::default()
                            }],
                            ..Default::default()
                        }],
                        ..Default::default()
                    }))
                }
                RequestBody::OffsetForLeaderEpoch(req) => {
                    seen.lock()
                        .unwrap()
                        .push(RequestBody::OffsetForLeaderEpoch(req.clone()));
                    Reply::Respond(ResponseBody::OffsetForLeaderEpoch(
                        OffsetForLeaderEpochResponse {
                            topics: vec![OffsetForLeaderTopicResult {
                                topic: "t".into(),
                                partitions: vec![EpochEndOffset {
                                    partition: 0,
                                    leader_epoch: 1,
                                    end_offset: epoch1_end,
                                    ..Default::default()
                                }],
                                ..Default::default()
                            }],
                            ..Default::default()
                        },
                    ))
                }
                RequestBody::Fetch(req) => {
                    let p = &req.topics[0].partitions[0];
                    let (offset, current) = (p.fetch_offset, p.current_leader_epoch);
                    seen.lock().unwrap().push(RequestBody::Fetch(req.clone()));
                    if current < epoch {
                        // A fetch from a stale view of the leadership is fenced.
                        return Reply::Respond(partition(74, None, -1));
                    }
                    fetches.fetch_add(1, Ordering::SeqCst);
                    let hw = if moved { epoch1_end + 2 } else { 8 };
                    let records = if offset >= hw {
                        Bytes::new()
                    } else if !moved {
                        let mut b = BatchBuilder::new(Compression::None, 256);
                        for i in 0..8 {
                            b.append(1, None, Some(format!("old{i}").as_bytes()), &[]);
                        }
                        b.seal(&BatchMeta {
                            partition_leader_epoch: 1,
                            ..BatchMeta::default()
                        })
                        .unwrap()
                    } else {
                        let mut b = BatchBuilder::new(Compression::None, 256);
                        for i in offset..hw {
                            b.append(1, None, Some(format!("new{i}").as_bytes()), &[]);
                        }
                        b.seal(&BatchMeta {
                            base_offset: offset,
                            partition_leader_epoch: 2,
                            ..BatchMeta::default()
                        })
                        .unwrap()
                    };
                    let empty = records.is_empty();
                    let resp = partition(0, Some(records), hw);
                    if empty {
                        Reply::After(Duration::from_millis(500), Box::new(Reply::Respond(resp)))
                    } else {
                        Reply::Respond(resp)
                    }
                }
                RequestBody::ListOffsets(_) => Reply::Respond(offsets_of_t0(0)),
                other => panic!("{other:?}"),
            }
        })
    })
}

/// KIP-320: after a leader change, the position is checked with OffsetForLeaderEpoch. A log
/// truncated below it (an unclean election) moves the position back to where the logs diverge;
/// with `auto.offset.reset=none` the partition stops with a typed error; a clean change goes on.
#[test]
fn a_leader_change_checks_the_position_and_detects_truncation() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut h = Harness::new(
        &[("auto.offset.reset", "earliest")],
        leader_change(5, seen.clone()),
    );
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(0), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(3000));
    let values: Vec<String> = h.values().into_iter().map(|v| v.1).collect();
    let mut want: Vec<String> = (0..8).map(|i| format!("old{i}")).collect();
    want.extend(["new5".to_string(), "new6".to_string()]);
    assert_eq!(values, want, "read on from the divergence point, offset 5");
    let epochs: Vec<i32> = h
        .events
        .iter()
        .filter_map(|e| match e {
            FetchEvent::Records { leader_epoch, .. } => Some(*leader_epoch),
            _ => None,
        })
        .collect();
    assert_eq!(epochs, [1, 2], "each run of records carries its epoch");
    let seen = seen.lock().unwrap();
    let checks: Vec<(i32, i32)> = seen
        .iter()
        .filter_map(|r| match r {
            RequestBody::OffsetForLeaderEpoch(req) => {
                let p = &req.topics[0].partitions[0];
                Some((p.current_leader_epoch, p.leader_epoch))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        checks,
        [(2, 1)],
        "one check, under the new leader's epoch, for the epoch of the last record read"
    );
    assert!(
        seen.iter().any(|r| matches!(r, RequestBody::Fetch(f)
            if f.topics[0].partitions[0].current_leader_epoch == 1)),
        "fetches carry the leader epoch"
    );
    drop(seen);

    let mut h = Harness::new(
        &[("auto.offset.reset", "none")],
        leader_change(5, Arc::default()),
    );
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(0), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(3000));
    assert_eq!(h.values().len(), 8);
    assert!(
        h.events.iter().any(|e| matches!(
            e,
            FetchEvent::Error {
                error: FetchError::LogTruncation {
                    offset: 8,
                    divergent: Some(5)
                },
                ..
            }
        )),
        "{:?}",
        h.events
    );

    // A clean leader change: the new leader has everything read so far.
    let mut h = Harness::new(
        &[("auto.offset.reset", "none")],
        leader_change(8, Arc::default()),
    );
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(0), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(3000));
    let offsets: Vec<i64> = h.values().into_iter().map(|v| v.0).collect();
    assert_eq!(
        offsets,
        (0..10).collect::<Vec<_>>(),
        "nothing skipped or read twice"
    );
    assert_eq!(h.f.position("t", 0), Some(10));
}

/// KIP-227: after one full fetch opens a session, a fetch names only the partitions whose
/// position moved; a paused partition is forgotten; a broker that lost the session gets a
/// full fetch again, and nothing is lost or read twice.
#[test]
fn fetch_sessions_name_only_what_changed() {
    const PARTS: i32 = 50;
    let cluster = SingleBroker::new("broker", 9092, PARTS as usize);
    produce_to(&cluster, PARTS as usize, "none", 0, PARTS);
    let mut h = Harness::new(&[("fetch.max.wait.ms", "100")], single(&cluster));
    h.f.assign(
        (0..PARTS).map(|p| ("t".to_string(), p)),
        StartFrom::Earliest,
        h.now,
    )
    .unwrap();
    h.advance_to(Instant::from_millis(2000));
    assert_eq!(h.values().len(), PARTS as usize);
    let (opened, incremental) = cluster.fetch_sessions();
    assert_eq!(opened, 1, "one session for the one broker");
    assert!(incremental >= 10, "incremental fetches: {incremental}");

    let fetches = |h: &Harness| -> Vec<(i32, usize, Vec<i32>)> {
        h.brokers
            .values()
            .flat_map(|b| b.requests())
            .filter_map(|(_, r)| match r {
                RequestBody::Fetch(f) => Some((
                    f.session_epoch,
                    f.topics.iter().map(|t| t.partitions.len()).sum(),
                    f.forgotten_topics_data
                        .iter()
                        .flat_map(|t| t.partitions.clone())
                        .collect(),
                )),
                _ => None,
            })
            .collect()
    };
    let seen = fetches(&h).len();
    // One partition gets a record: only it is named, once its position moved.
    produce_to(&cluster, 1, "none", PARTS as usize + 7, PARTS);
    h.advance_to(Instant::from_millis(3000));
    assert_eq!(h.values().len(), PARTS as usize + 1);
    let later = &fetches(&h)[seen..];
    assert!(later.len() >= 5);
    assert!(later.iter().all(|f| f.0 > 0), "all incremental: {later:?}");
    assert_eq!(
        later.iter().map(|f| f.1).sum::<usize>(),
        1,
        "only partition 7, after its record: {later:?}"
    );

    // Pausing forgets; resuming names it again.
    h.f.pause("t", 3);
    let seen = fetches(&h).len();
    h.advance_to(Instant::from_millis(3500));
    let later = &fetches(&h)[seen..];
    assert_eq!(
        later.iter().flat_map(|f| f.2.clone()).collect::<Vec<_>>(),
        [3],
        "{later:?}"
    );
    let now = h.now;
    h.f.resume("t", 3, now);
    h.advance_to(Instant::from_millis(4000));

    // The broker loses its sessions: one full fetch, then incremental again.
    cluster.evict_fetch_sessions();
    let seen = fetches(&h).len();
    produce_to(&cluster, PARTS as usize, "none", PARTS as usize * 2, PARTS);
    h.advance_to(Instant::from_millis(6000));
    let later = &fetches(&h)[seen..];
    let full: Vec<_> = later.iter().filter(|f| f.0 == 0).collect();
    assert_eq!(full.len(), 1, "{later:?}");
    assert_eq!(
        full[0].1, PARTS as usize,
        "a full fetch names every partition"
    );
    assert_eq!(cluster.fetch_sessions().0, 2);
    let mut got: Vec<String> = h.values().into_iter().map(|v| v.1).collect();
    got.sort();
    let mut want: Vec<String> = (0..PARTS as usize)
        .chain([PARTS as usize + 7])
        .chain(PARTS as usize * 2..PARTS as usize * 3)
        .map(|i| format!("v{i}"))
        .collect();
    want.sort();
    assert_eq!(got, want, "every record once");
}

/// `connections.per.broker=3`: partition `p` is always fetched on connection `p % 3`, each
/// connection with a fetch session and a long poll of its own, and everything arrives once, in
/// order within each partition.
#[test]
fn connections_per_broker_splits_partitions_across_fetch_connections() {
    const PARTS: i32 = 6;
    let cluster = SingleBroker::new("broker", 9092, PARTS as usize);
    produce_to(&cluster, 600, "none", 0, PARTS);
    let mut h = Harness::new(
        &[
            ("fetch.max.wait.ms", "500"),
            ("max.partition.fetch.bytes", "500"),
            ("connections.per.broker", "3"),
        ],
        single(&cluster),
    );
    h.f.assign(
        (0..PARTS).map(|p| ("t".to_string(), p)),
        StartFrom::Earliest,
        h.now,
    )
    .unwrap();
    h.advance_to(Instant::from_millis(2000));
    // The partitions each connection fetched, and how many fetches it sent.
    let fetched = |h: &Harness| -> BTreeMap<ConnId, (Vec<i32>, usize)> {
        let mut out = BTreeMap::new();
        for (conn, b) in &h.brokers {
            for (_, r) in b.requests() {
                if let RequestBody::Fetch(f) = r {
                    let e: &mut (Vec<i32>, usize) = out.entry(*conn).or_default();
                    e.1 += 1;
                    for p in f.topics.iter().flat_map(|t| &t.partitions) {
                        if !e.0.contains(&p.partition) {
                            e.0.push(p.partition);
                        }
                    }
                }
            }
        }
        for (parts, _) in out.values_mut() {
            parts.sort();
        }
        out
    };
    let lanes: Vec<Vec<i32>> = fetched(&h).into_values().map(|v| v.0).collect();
    assert_eq!(
        lanes,
        [vec![0, 3], vec![1, 4], vec![2, 5]],
        "each partition on one connection, p % 3"
    );
    assert_eq!(cluster.fetch_sessions().0, 3, "a session per connection");
    // Partition i % 6 got record i: each partition's records arrive in order, once.
    let mut per_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for e in &h.events {
        if let FetchEvent::Records {
            partition, records, ..
        } = e
        {
            for r in records.clone() {
                per_partition
                    .entry(*partition)
                    .or_default()
                    .push(r.unwrap().offset);
            }
        }
    }
    for p in 0..PARTS {
        assert_eq!(
            per_partition[&p],
            (0..100).collect::<Vec<i64>>(),
            "partition {p}"
        );
    }
    // Caught up, each connection long-polls on its own: over 2 quiet seconds with
    // fetch.max.wait.ms=500, each sends about four fetches (one connection would send four in
    // all).
    let before = fetched(&h);
    h.advance_to(Instant::from_millis(4000));
    let after = fetched(&h);
    for (conn, (_, n)) in &after {
        let polls = n - before[conn].1;
        assert!((3..=5).contains(&polls), "{conn:?}: {polls} long polls");
    }
}

/// Two connections each fetch with a limit below the next batch: were both in flight, both
/// would bring a whole first batch (KIP-74) and the budget would be exceeded by two. The
/// largest batch seen so far is no bound on the next (a larger one came, in the simulation,
/// seed 112389): only a fetch whose limit holds `max.partition.fetch.bytes` goes beside
/// another.
#[test]
fn a_batch_larger_than_any_before_exceeds_the_budget_by_one_batch_at_most() {
    let cluster = SingleBroker::new("broker", 9092, 2);
    produce_records(&cluster, "none", vec![(0, "a".into()), (1, "b".into())]);
    let mut h = Harness::new(
        &[
            ("queued.max.messages.kbytes", "1"),
            ("connections.per.broker", "2"),
            ("fetch.max.wait.ms", "100"),
        ],
        single(&cluster),
    );
    h.f.assign(
        [("t".to_string(), 0), ("t".to_string(), 1)],
        StartFrom::Earliest,
        h.now,
    )
    .unwrap();
    h.advance_to(Instant::from_millis(500));
    assert_eq!(h.values().len(), 2, "the small records arrived");
    // Kept (not released): now each partition gets one large batch.
    let big = "x".repeat(1800);
    produce_records(&cluster, "none", vec![(0, big.clone()), (1, big)]);
    // The long polls the records woke are answered in the present.
    h.sync_brokers();
    h.advance_to(Instant::from_millis(2000));
    let largest = 1800 + 100; // the large batch, header included
    assert!(
        h.f.buffered() <= 1024 + largest,
        "{} B held with a 1 KiB budget: more than one batch over",
        h.f.buffered()
    );
    // Released, the rest comes.
    h.sync_brokers();
    let now = h.now;
    let held = h.f.buffered();
    h.f.release(held, now);
    h.advance_to(Instant::from_millis(4000));
    assert_eq!(h.values().len(), 4, "every record arrived");
}

/// An OFFSET_OUT_OF_RANGE answer to a fetch sent before a forward seek reset the new
/// position (with `auto.offset.reset=earliest`, to the log start: records before the seek
/// were read again). The answer says nothing of the new position (found by reading
/// response.rs: the stale-fetch check covered only seeks back).
#[test]
fn an_out_of_range_answer_from_before_a_forward_seek_is_ignored() {
    let connect: Box<dyn FnMut() -> ScriptedBroker> = Box::new(|| {
        ScriptedBroker::new(|_, body| match body {
            RequestBody::Metadata(_) => Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                brokers: vec![MetadataResponseBroker {
                    node_id: 1,
                    host: "broker".into(),
                    port: 9092,
                    ..Default::default()
                }],
                topics: vec![MetadataResponseTopic {
                    name: Some("t".into()),
                    partitions: vec![MetadataResponsePartition {
                        partition_index: 0,
                        leader_id: 1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            })),
            RequestBody::ListOffsets(_) => {
                // The log starts at 10.
                Reply::Respond(offsets_of_t0(10))
            }
            RequestBody::Fetch(req) => {
                let offset = req.topics[0].partitions[0].fetch_offset;
                let (error_code, records) = match offset {
                    // Below the log start: OFFSET_OUT_OF_RANGE.
                    0..=9 => (1, Bytes::new()),
                    10..=12 => (0, batch(10, &["j", "k", "l"], Compression::None, false)),
                    _ => (0, Bytes::new()),
                };
                let resp = Reply::Respond(fetch_of_t0(PartitionData {
                    partition_index: 0,
                    error_code,
                    high_watermark: 13,
                    records: Some(records),
                    ..Default::default()
                }));
                Reply::After(Duration::from_millis(100), Box::new(resp))
            }
            other => panic!("{other:?}"),
        })
    });
    let mut h = Harness::new(&[("auto.offset.reset", "earliest")], connect);
    // A fetch from 3 goes out (answered after 100 ms); the application seeks forward to 11.
    h.f.assign([("t".to_string(), 0)], StartFrom::Offset(3), h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(50));
    h.f.seek("t", 0, StartFrom::Offset(11), h.now);
    h.advance_to(Instant::from_millis(1000));
    let got: Vec<i64> = h.values().iter().map(|(o, _)| *o).collect();
    assert_eq!(
        got,
        [11, 12],
        "read from the seek, not reset to the log start"
    );
}

/// KIP-392: with `client.rack`, the leader (node 1) answers the first fetch with no records and
/// node 2 as the preferred read replica; every later fetch goes to node 2, naming the rack,
/// and reads the records there. An error from node 2 sends the partition back to the leader
/// (out of range there is not reset: the leader is asked), which points at node 2 again.
#[test]
fn client_rack_reads_from_the_preferred_replica_and_falls_back_to_the_leader() {
    // (node, fetch offset, rack id) of every Fetch, in order.
    let fetches: Arc<std::sync::Mutex<Vec<(i32, i64, String)>>> = Arc::default();
    let follower_errors = Arc::new(AtomicUsize::new(0));
    let (log, errors) = (fetches.clone(), follower_errors.clone());
    let node = move |addr: &HostPort| {
        let id = if addr.port == 9092 { 1 } else { 2 };
        let (log, errors) = (log.clone(), errors.clone());
        ScriptedBroker::new(move |_, body| match body {
            RequestBody::Metadata(_) => Reply::Respond(ResponseBody::Metadata(MetadataResponse {
                brokers: [(1, 9092), (2, 9093)]
                    .map(|(node_id, port)| MetadataResponseBroker {
                        node_id,
                        host: "broker".into(),
                        port,
                        ..Default::default()
                    })
                    .into(),
                topics: vec![MetadataResponseTopic {
                    name: Some("t".into()),
                    partitions: vec![MetadataResponsePartition {
                        partition_index: 0,
                        leader_id: 1,
                        replica_nodes: vec![1, 2],
                        isr_nodes: vec![1, 2],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            })),
            RequestBody::ListOffsets(_) => Reply::Respond(offsets_of_t0(0)),
            RequestBody::Fetch(req) => {
                let offset = req.topics[0].partitions[0].fetch_offset;
                log.lock().unwrap().push((id, offset, req.rack_id.clone()));
                let mut data = PartitionData {
                    partition_index: 0,
                    high_watermark: 6,
                    ..Default::default()
                };
                if id == 1 {
                    data.preferred_read_replica = 2;
                    data.records = Some(Bytes::new());
                } else if offset == 3 && errors.fetch_add(1, Ordering::SeqCst) == 0 {
                    data.error_code = 1; // OFFSET_OUT_OF_RANGE: the follower lags
                } else if offset < 6 {
                    let values = if offset == 0 {
                        ["a", "b", "c"]
                    } else {
                        ["d", "e", "f"]
                    };
                    data.records = Some(batch(offset, &values, Compression::None, false));
                } else {
                    data.records = Some(Bytes::new());
                }
                let resp = fetch_of_t0(data);
                Reply::After(Duration::from_millis(10), Box::new(Reply::Respond(resp)))
            }
            other => panic!("{other:?}"),
        })
    };
    let mut h = Harness::with_nodes(
        &[("client.rack", "rack-b"), ("fetch.max.wait.ms", "100")],
        Box::new(node),
    );
    h.f.assign([("t".to_owned(), 0)], StartFrom::Earliest, h.now)
        .unwrap();
    h.advance_to(Instant::from_millis(2_000));
    let values: Vec<String> = h.values().into_iter().map(|(_, v)| v).collect();
    assert_eq!(values, ["a", "b", "c", "d", "e", "f"]);
    let fetches = fetches.lock().unwrap().clone();
    assert!(fetches.iter().all(|f| f.2 == "rack-b"), "{fetches:?}");
    let nodes: Vec<(i32, i64)> = fetches.iter().map(|f| (f.0, f.1)).collect();
    assert_eq!(
        nodes[..5],
        [(1, 0), (2, 0), (2, 3), (1, 3), (2, 3)],
        "leader, its replica, the replica's error, back to the leader, the replica again"
    );
    assert!(nodes[5..].iter().all(|(n, _)| *n == 2), "{nodes:?}");
    assert_eq!(follower_errors.load(Ordering::SeqCst), 2);
}
