//! Driving the real producer and consumer in your own simulation, with faults.
//!
//! A three-broker [`SimCluster`] behind a [`SimNet`], one virtual clock, one seed. The producer
//! (idempotent, acks=all) writes 2,000 records while the leader of partition 0 crashes and a
//! connection is reset mid-stream; a consumer group member then reads everything back. The loop
//! is the whole contract: find the earliest deadline, move the clock there, deliver, drain.
//!
//! Run it with `cargo run -p tests --example simulate [SEED]`.

use std::collections::BTreeSet;
use std::time::Duration;

use kafka_core::fetcher::FetchEvent;
use kafka_core::net::{ConnId, ConnectError, Machine, Output, Transmit};
use kafka_core::producer::{Outcome, ProducerEvent, ProducerRecord};
use kafka_core::{Consumer, ConsumerConfig, Instant, Producer, ProducerConfig};
use kafka_sim::{BrokerWrite, ClusterConfig, Delivery, NetConfig, SimCluster, SimNet};

const BOOTSTRAP: &str = "broker-1:9092,broker-2:9092,broker-3:9092";

/// Client 0 is the producer, client 1 the consumer; a connection's key is `client << 32 | id`.
fn key(client: u64, conn: ConnId) -> u64 {
    (client << 32) | conn.0
}

/// Hands one client's outputs to the network; returns its events.
fn drain<M: Machine>(
    m: &mut M,
    client: u64,
    cluster: &SimCluster,
    net: &mut SimNet,
    now: Duration,
) -> Vec<M::Event> {
    let mut events = Vec::new();
    while let Some(out) = m.poll_output() {
        match out {
            Output::Transmit(Transmit::Connect { conn, addr }) => {
                match cluster.node_at(&addr.host, addr.port) {
                    Some(node) => net.connect(key(client, conn), node, now),
                    None => net.refuse(key(client, conn), now),
                }
            }
            Output::Transmit(Transmit::Send { conn, bytes }) => {
                net.client_send(key(client, conn), bytes, now)
            }
            Output::Transmit(Transmit::Close { conn }) => net.client_close(key(client, conn), now),
            Output::Event(e) => events.push(e),
            _ => unreachable!("a variant this test does not know"),
        }
    }
    events
}

/// Delivers one network event to the cluster or to a client.
fn deliver<M: Machine>(
    m: &mut M,
    d: Delivery,
    cluster: &mut SimCluster,
    net: &mut SimNet,
    now: Instant,
) {
    let t = Duration::from_nanos(now.as_nanos());
    match d {
        Delivery::Connected(k, node) => {
            if cluster.accept(k, node) {
                m.handle_connected(ConnId(k & 0xffff_ffff), now);
            } else {
                net.broker_close(k, t);
                m.handle_connect_failed(ConnId(k & 0xffff_ffff), ConnectError::Refused, now);
            }
        }
        Delivery::Refused(k) => {
            m.handle_connect_failed(ConnId(k & 0xffff_ffff), ConnectError::Refused, now)
        }
        Delivery::ToBroker(k, bytes) => cluster.receive(k, &bytes, t),
        Delivery::ToClient(k, bytes) => m.handle_received(ConnId(k & 0xffff_ffff), &bytes, now),
        Delivery::BrokerSideClosed(k) => cluster.closed(k),
        Delivery::ClientSideClosed(k) => m.handle_closed(ConnId(k & 0xffff_ffff), now),
    }
}

fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .map_or(1, |s| s.parse().expect("a number"));
    let mut cluster = SimCluster::new(ClusterConfig::default(), seed);
    let mut net = SimNet::new(NetConfig::default(), seed);
    let mut producer = Producer::new(
        ProducerConfig::from_map([
            ("bootstrap.servers", BOOTSTRAP),
            ("linger.ms", "5"),
            ("random.seed", &seed.to_string()),
        ])
        .unwrap(),
    );
    let mut consumer = Consumer::new(
        ConsumerConfig::from_map([
            ("bootstrap.servers", BOOTSTRAP),
            ("group.id", "example"),
            ("session.timeout.ms", "2000"),
            ("heartbeat.interval.ms", "300"),
            ("auto.offset.reset", "earliest"),
            ("fetch.max.wait.ms", "100"),
            ("random.seed", &seed.to_string()),
        ])
        .unwrap(),
    );

    let mut now = Instant::ZERO;
    for i in 0..2000 {
        producer
            .send(ProducerRecord::new("t", format!("record-{i}"), 0), now)
            .unwrap();
    }
    producer.flush(now);
    let (mut delivered, mut read) = (BTreeSet::new(), BTreeSet::new());
    let (mut crashed, mut subscribed) = (false, false);
    let crash_at = Instant::from_millis(20);
    let restart_at = Instant::from_millis(1500);

    while now < Instant::from_millis(30_000) {
        // The earliest deadline of anyone: the clients, the cluster, the network, our faults.
        let to_instant = |d: Duration| Instant::from_nanos(d.as_nanos() as u64);
        let next = [
            producer.poll_timeout(),
            consumer.poll_timeout(),
            cluster.next_due().map(to_instant),
            net.next_due().map(to_instant),
            Some(if !crashed { crash_at } else { restart_at }).filter(|t| *t > now),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("heartbeats keep something due");
        now = now.max(next);
        let t = Duration::from_nanos(now.as_nanos());

        // Faults: the leader of partition 0 crashes, a connection resets, the broker returns.
        if !crashed && now >= crash_at {
            crashed = true;
            let leader = cluster.leader("t", 0).unwrap();
            println!("{t:?}: broker {leader} (leader of t-0) crashes");
            cluster.crash(leader);
            if let Some(&k) = net.open().first() {
                net.reset(k, t);
            }
        }
        if now >= restart_at {
            for n in 1..=3 {
                if !cluster.is_up(n) {
                    println!("{t:?}: broker {n} restarts");
                    cluster.restart(n);
                }
            }
        }

        // Deliver what the network has due, then let everyone act.
        while let Some(d) = net.poll(t) {
            if d.conn() >> 32 == 0 {
                deliver(&mut producer, d, &mut cluster, &mut net, now);
            } else {
                deliver(&mut consumer, d, &mut cluster, &mut net, now);
            }
        }
        cluster.advance(t);
        while let Some((k, w)) = cluster.poll_transmit() {
            match w {
                BrokerWrite::Bytes(b) => net.broker_send(k, b, t),
                BrokerWrite::Close => net.broker_close(k, t),
            }
        }
        producer.handle_timeout(now);
        consumer.handle_timeout(now);
        let events = drain(&mut producer, 0, &cluster, &mut net, t);
        for e in events.into_iter().flat_map(ProducerEvent::per_record) {
            match e {
                ProducerEvent::Outcome(
                    _,
                    Outcome::Delivered {
                        partition, offset, ..
                    },
                ) => {
                    delivered.insert((partition, offset.expect("acks=all has offsets")));
                }
                ProducerEvent::Outcome(token, failed) => panic!("record {token:?}: {failed:?}"),
                ProducerEvent::FlushComplete(_) if !subscribed => {
                    println!(
                        "{t:?}: all {} records delivered; the consumer joins",
                        delivered.len()
                    );
                    subscribed = true;
                    consumer
                        .subscribe(vec!["t".into()], now)
                        .expect("group.id is set");
                }
                _ => {}
            }
        }
        for e in drain(&mut consumer, 1, &cluster, &mut net, t) {
            match e {
                FetchEvent::Records {
                    partition, records, ..
                } => {
                    read.extend(
                        records.map(|r| (partition, r.expect("a well-formed record").offset)),
                    );
                    consumer.polled(now);
                }
                FetchEvent::Assigned(tps) => println!("{t:?}: assigned {tps:?}"),
                _ => {}
            }
        }
        if subscribed && !delivered.is_empty() && delivered.is_subset(&read) {
            println!(
                "{t:?}: every delivered record was read back ({} records)",
                read.len()
            );
            return;
        }
    }
    panic!(
        "only {} of {} records read back",
        read.len(),
        delivered.len()
    );
}
