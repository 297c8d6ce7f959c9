//! The README's example runs as written, on Tansu (the quickstart's embedded broker) and on
//! Apache Kafka. The example's code lives here once, between the markers; the first test
//! checks that the README shows exactly it (with `BOOTSTRAP` for the README's address).

use std::error::Error;
use std::time::Duration;

use tests::brokers::{Kind, TestBroker};

fn dedent(block: &str) -> String {
    block
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The README's `n`th Rust block, as this file holds it between `// {name} begins` and
/// `// {name} ends`.
fn assert_readme_shows(n: usize, name: &str) {
    let readme = include_str!("../../README.md");
    let mut start = 0;
    for _ in 0..=n {
        start += readme[start..]
            .find("```rust,ignore\n")
            .expect("the README has the example")
            + 15;
    }
    let end = start + readme[start..].find("```").expect("the block ends");
    let shown = readme[start..end].replace("\"localhost:9092\"", "BOOTSTRAP");
    let me = include_str!("readme.rs");
    let open = format!("// {name} begins\n");
    let begin = me.find(&open).expect("marker") + open.len();
    let finish = begin
        + me[begin..]
            .find(&format!("    // {name} ends"))
            .expect("marker");
    assert_eq!(dedent(&me[begin..finish]).trim_end(), shown.trim_end());
}

#[test]
fn the_readme_shows_this_example() {
    assert_readme_shows(0, "README example");
}

#[test]
fn the_readme_shows_this_sending_example() {
    assert_readme_shows(1, "README sending example");
}

/// The README's bulk-sending idiom: every record delivered.
async fn sending(
    producer: &kafka_tokio::Producer,
    values: Vec<bytes::Bytes>,
) -> Result<(), Box<dyn Error>> {
    // README sending example begins
    use futures_util::StreamExt;
    use kafka_tokio::{Deliveries, Producer, Record, Topic};

    let topic = Topic::from("events"); // made once; a &str or String topic is matched to it
    let mut pending = Deliveries::new();
    for (i, value) in values.into_iter().enumerate() {
        pending.push(producer.send(Record::new(topic.clone(), value)).await?, i);
        if pending.len() >= 100_000 {
            let (i, outcome) = pending.next().await.expect("not empty");
            outcome.map_err(|failed| format!("record {i}: {failed}"))?;
        }
    }
    while let Some((i, outcome)) = pending.next().await {
        outcome.map_err(|failed| format!("record {i}: {failed}"))?;
    }
    // README sending example ends
    assert!(pending.is_empty());
    let _: Option<Producer> = None; // the README's import, used
    Ok(())
}

#[test]
fn the_readme_sending_example_runs_on_tansu() {
    let broker = TestBroker::exclusive(Kind::Tansu);
    broker.create_topic("events", 3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let producer =
            kafka_tokio::Producer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
        let values: Vec<bytes::Bytes> = (0..250_000)
            .map(|i| bytes::Bytes::from(format!("v{i}")))
            .collect();
        tokio::time::timeout(Duration::from_secs(60), sending(&producer, values))
            .await
            .expect("the example finishes")
            .expect("every record delivered");
        producer.close(Duration::from_secs(5)).await;
        // Every record is in the log, once.
        let mut consumer =
            kafka_tokio::Consumer::from_map([("bootstrap.servers", broker.addr.as_str())]).unwrap();
        consumer
            .assign(
                (0..3).map(|p| ("events", p)),
                kafka_tokio::StartFrom::Earliest,
            )
            .unwrap();
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < 250_000 {
            let batch = tokio::time::timeout(Duration::from_secs(30), consumer.recv_batch())
                .await
                .expect("records within 30 s")
                .expect("records");
            for r in batch {
                assert!(seen.insert(r.value.expect("a value")), "a duplicate");
            }
        }
    });
}

#[test]
fn the_readme_shows_this_transactional_example() {
    assert_readme_shows(2, "README transactional example");
}

#[allow(non_snake_case)]
async fn transactional(BOOTSTRAP: &'static str) -> Result<(), Box<dyn Error>> {
    // README transactional example begins
    use kafka_tokio::{Consumer, Producer, Record, StartFrom, TransactionError};

    let mut consumer = Consumer::from_map([
        ("bootstrap.servers", BOOTSTRAP),
        ("group.id", "enricher"),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
        ("auto.offset.reset", "earliest"),
    ])?;
    consumer.subscribe(["orders"])?;
    let producer = Producer::from_map([
        ("bootstrap.servers", BOOTSTRAP),
        ("transactional.id", "enricher-1"), // the same after a restart: it fences the old process
    ])?;
    producer.init_transactions().await?;
    let mut left = 100; // this example stops after 100 records
    while left > 0 {
        let batch = consumer.recv_batch().await?;
        let group = consumer.group_metadata().await.ok_or("not in the group")?;
        producer.begin_transaction()?;
        for r in &batch {
            let value = r.value.clone().unwrap_or_default();
            producer.send(Record::new("orders-enriched", value)).await?;
        }
        let offsets = batch
            .iter()
            .map(|r| ((r.topic.to_string(), r.partition), r.next_offset()));
        let committed = match producer.send_offsets_to_transaction(offsets, group).await {
            Ok(()) => producer.commit_transaction().await,
            Err(e) => Err(e),
        };
        match committed {
            Ok(()) => left -= batch.len().min(left),
            // A record or the offsets failed: abort, and read again from the committed offsets.
            Err(TransactionError::Abortable { .. }) => {
                producer.abort_transaction().await?;
                for r in &batch {
                    consumer.seek(&r.topic, r.partition, StartFrom::Committed);
                }
            }
            // Fenced (a newer producer with this transactional.id runs), or timed out: stop.
            Err(e) => return Err(e.into()),
        }
    }
    // README transactional example ends
    consumer.close(Duration::from_secs(5)).await;
    producer.close(Duration::from_secs(5)).await;
    Ok(())
}

#[test]
fn the_readme_shows_this_metrics_example() {
    assert_readme_shows(3, "README metrics example");
}

/// The README's metrics lines; returns what it read.
async fn metrics_example(
    producer: &kafka_tokio::Producer,
    consumer: &mut kafka_tokio::Consumer,
) -> (Option<f64>, Option<f64>) {
    // README metrics example begins
    let m = producer.metrics(); // a typed snapshot: Metric { group, name, tags, value, kind }
    let sent = m.get("producer-metrics", "record-send-total");
    let lag = consumer.metrics().await.find(
        "consumer-fetch-manager-metrics",
        "records-lag",
        &[("topic", "orders"), ("partition", "0")],
    );
    println!("{}", m.to_json());
    // README metrics example ends
    (sent, lag)
}

/// The README's transactional loop on Apache Kafka: 100 orders in, each once in the output as a
/// read_committed reader sees it, and the group's offsets at the input's end.
#[test]
fn the_readme_transactional_example_runs_on_kafka() {
    let broker = TestBroker::exclusive(Kind::Kafka);
    broker.create_topic("orders", 2);
    broker.create_topic("orders-enriched", 2);
    let addr: &'static str = Box::leak(broker.addr.clone().into_boxed_str());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let input = kafka_tokio::Producer::from_map([("bootstrap.servers", addr)]).unwrap();
        for i in 0..100 {
            let r = kafka_tokio::Record::new("orders", format!("order-{i}"));
            input.send(r).await.unwrap();
        }
        input.flush().await;
        tokio::time::timeout(Duration::from_secs(120), transactional(addr))
            .await
            .expect("the example finishes")
            .expect("the example succeeds");
        let mut reader = kafka_tokio::Consumer::from_map([
            ("bootstrap.servers", addr),
            ("isolation.level", "read_committed"),
        ])
        .unwrap();
        reader
            .assign(
                (0..2).map(|p| ("orders-enriched", p)),
                kafka_tokio::StartFrom::Earliest,
            )
            .unwrap();
        let mut seen = std::collections::BTreeSet::new();
        let mut ends = std::collections::BTreeSet::new();
        while ends.len() < 2 {
            match tokio::time::timeout(Duration::from_secs(30), reader.next_event())
                .await
                .expect("records within 30 s")
                .unwrap()
            {
                kafka_tokio::ConsumerEvent::Record(r) => {
                    assert!(
                        seen.insert(r.value.unwrap()),
                        "an order twice in the output"
                    )
                }
                kafka_tokio::ConsumerEvent::EndOfPartition { partition, .. } => {
                    ends.insert(partition);
                }
                _ => {}
            }
        }
        assert_eq!(seen.len(), 100, "every order once in the output");
        // The README's metrics lines, on the input's producer and a reader of partition 0
        // from 10 records before its end.
        for i in 0..20 {
            let r = kafka_tokio::Record::new("orders", format!("more-{i}")).partition(0);
            input.send(r).await.unwrap().await.unwrap();
        }
        let mut orders = kafka_tokio::Consumer::from_map([("bootstrap.servers", addr)]).unwrap();
        let tp = ("orders".to_string(), 0);
        let end = orders.end_offsets([tp.clone()]).await.unwrap()[&tp];
        orders
            .assign([("orders", 0)], kafka_tokio::StartFrom::Offset(end - 10))
            .unwrap();
        tokio::time::timeout(Duration::from_secs(30), orders.recv())
            .await
            .expect("a record within 30 s")
            .unwrap();
        let (sent, lag) = metrics_example(&input, &mut orders).await;
        assert_eq!(sent, Some(120.0), "the input producer sent 120 records");
        assert_eq!(
            lag,
            Some(0.0),
            "the reader fetched up to the end of partition 0"
        );
    });
}

#[allow(non_snake_case)]
async fn example(BOOTSTRAP: &'static str) -> Result<(), Box<dyn Error>> {
    // README example begins
    use kafka_tokio::{Admin, Consumer, NewTopic, Producer, Record, StartFrom};

    let admin = Admin::from_map([("bootstrap.servers", BOOTSTRAP)])?;
    admin.create_topic(NewTopic::new("greetings", 3)).await?;

    let producer = Producer::from_map([("bootstrap.servers", BOOTSTRAP)])?;
    let delivery = producer
        .send(Record::new("greetings", "hello").key("k"))
        .await?;
    let delivered = delivery.await?; // partition, offset, timestamp; or a typed failure
    producer.close(std::time::Duration::from_secs(5)).await;

    // Assign mode: chosen partitions from chosen positions.
    let mut consumer = Consumer::from_map([("bootstrap.servers", BOOTSTRAP)])?;
    consumer.assign([("greetings", delivered.partition)], StartFrom::Earliest)?;
    let record = consumer.recv().await?;

    // A consumer group (classic protocol): range and cooperative-sticky, automatic commits.
    let mut member = Consumer::from_map([
        ("bootstrap.servers", BOOTSTRAP),
        ("group.id", "greeters"),
        ("auto.offset.reset", "earliest"), // the default, latest, skips what was written before
    ])?;
    member.subscribe(["greetings"])?;
    let batch = member.recv_batch().await?; // up to max.poll.records
    member.commit().await?;
    member.close(std::time::Duration::from_secs(5)).await; // commits, then leaves
                                                           // README example ends
    assert_eq!(record.value.as_deref(), Some(&b"hello"[..]));
    assert_eq!(batch[0].value.as_deref(), Some(&b"hello"[..]));
    Ok(())
}

fn run(kind: Kind) {
    let broker = TestBroker::exclusive(kind);
    let addr: &'static str = Box::leak(broker.addr.clone().into_boxed_str());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            // On Tansu the first join takes about half session.timeout.ms (45 s by default).
            tokio::time::timeout(Duration::from_secs(60), example(addr))
                .await
                .expect("the example finishes")
                .expect("the example succeeds");
        });
}

#[test]
fn the_readme_example_runs_on_tansu() {
    run(Kind::Tansu);
}

#[test]
fn the_readme_example_runs_on_kafka() {
    run(Kind::Kafka);
}
