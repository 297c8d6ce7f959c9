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

#[test]
fn the_readme_shows_this_example() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("```rust,ignore\n")
        .expect("the README has the example")
        + 15;
    let end = start + readme[start..].find("```").expect("the block ends");
    let shown = readme[start..end].replace("\"localhost:9092\"", "BOOTSTRAP");
    let me = include_str!("readme.rs");
    let begin = me.find("// README example begins\n").expect("marker") + 25;
    let finish = begin
        + me[begin..]
            .find("    // README example ends")
            .expect("marker");
    assert_eq!(dedent(&me[begin..finish]).trim_end(), shown.trim_end());
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
