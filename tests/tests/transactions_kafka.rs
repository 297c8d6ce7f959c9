//! Transactions against Apache Kafka (one node, `scripts/kafka`): a consume-transform-produce
//! pipeline writes each input record to its output exactly once as read_committed sees it,
//! with its input offsets committed in the same transactions; aborted records stay invisible to
//! read_committed readers and visible to read_uncommitted ones; a newer producer with the same
//! `transactional.id` fences the older; a transaction left open past its timeout is aborted by
//! the coordinator.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use kafka_tokio::{Consumer, ErrorCode, Producer, Record, StartFrom, TransactionError, TxnOffset};
use tests::kafka::Cluster;
use tests::tokio_block_on as block_on;

fn cluster() -> &'static Cluster {
    static C: OnceLock<Cluster> = OnceLock::new();
    // The coordinator looks for timed-out transactions every second (10 by default), so that
    // the timeout test takes seconds.
    C.get_or_init(|| {
        Cluster::start_with(
            1,
            "PLAINTEXT",
            &["transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"],
        )
    })
}

async fn within<F: std::future::Future>(secs: u64, what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {secs} s"))
}

fn transactional(id: &str, extra: &[(&str, &str)]) -> Producer {
    transactional_on(cluster(), id, extra)
}

fn transactional_on(c: &Cluster, id: &str, extra: &[(&str, &str)]) -> Producer {
    let mut map = vec![
        ("bootstrap.servers", c.bootstrap.as_str()),
        ("transactional.id", id),
    ];
    map.extend_from_slice(extra);
    Producer::from_map(map).expect("config")
}

/// Every value in `topic`'s partitions up to their end, as a reader with `isolation` sees it.
async fn read_all(topic: &str, partitions: i32, isolation: &str) -> Vec<String> {
    read_all_on(cluster(), topic, partitions, isolation).await
}

/// Everything `topic` holds as an `isolation` reader sees it. A read_committed reader's end is
/// the last stable offset, which lags the log end while a transaction's markers are on their
/// way: Kafka answers EndTxn (transaction version 1) once the commit is decided and writes the
/// markers after, so a reader started at once may stop short of the transaction just committed
/// (a fresh-clone run read 2,500 of the pipeline's 3,000 outputs, one transaction short). It
/// reads again until its end is the log end, for up to 30 s.
async fn read_all_on(on: &Cluster, topic: &str, partitions: i32, isolation: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (values, ends) = read_to_end(on, topic, partitions, isolation).await;
        if isolation != "read_committed" || std::time::Instant::now() > deadline {
            return values;
        }
        let (_, log_ends) = read_to_end(on, topic, partitions, "read_uncommitted").await;
        if ends == log_ends {
            return values;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What a reader from the start sees up to its end, and that end per partition.
async fn read_to_end(
    on: &Cluster,
    topic: &str,
    partitions: i32,
    isolation: &str,
) -> (Vec<String>, BTreeMap<i32, i64>) {
    let mut c = Consumer::from_map([
        ("bootstrap.servers", on.bootstrap.as_str()),
        ("isolation.level", isolation),
    ])
    .expect("config");
    c.assign((0..partitions).map(|p| (topic, p)), StartFrom::Earliest)
        .expect("assign");
    let mut ends = BTreeMap::new();
    let mut values = Vec::new();
    while ends.len() < partitions as usize {
        match within(60, "reading to the end", c.next_event()).await {
            Ok(kafka_tokio::ConsumerEvent::Record(r)) => {
                values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap())
            }
            Ok(kafka_tokio::ConsumerEvent::EndOfPartition {
                partition, offset, ..
            }) => {
                ends.insert(partition, offset);
            }
            Ok(_) => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    (values, ends)
}

#[test]
fn aborted_records_are_invisible_to_read_committed_readers() {
    block_on(async {
        let c = cluster();
        c.create_topic("tx-visibility", 2, 1, &[]);
        let p = transactional("visibility", &[]);
        within(60, "init", p.init_transactions()).await.unwrap();
        for (batch, commit) in [("a", true), ("b", false), ("c", true)] {
            p.begin_transaction().unwrap();
            let mut deliveries = Vec::new();
            for i in 0..100 {
                let r = Record::new("tx-visibility", format!("{batch}{i}"));
                deliveries.push(p.send(r).await.unwrap());
            }
            if commit {
                within(60, "commit", p.commit_transaction()).await.unwrap();
            } else {
                // Written first, then aborted: the records are in the log, with an abort
                // marker after them.
                p.flush().await;
                within(60, "abort", p.abort_transaction()).await.unwrap();
            }
            for d in deliveries {
                assert!(d.await.is_ok(), "every record of {batch} was written");
            }
        }
        let committed = read_all("tx-visibility", 2, "read_committed").await;
        assert_eq!(committed.len(), 200, "a and c only");
        assert!(committed.iter().all(|v| !v.starts_with('b')));
        let uncommitted = read_all("tx-visibility", 2, "read_uncommitted").await;
        assert_eq!(
            uncommitted.len(),
            300,
            "read_uncommitted sees the aborted records too"
        );
        p.close(Duration::from_secs(10)).await;
    });
}

#[test]
fn an_abort_fails_the_records_not_yet_sent() {
    block_on(async {
        cluster().create_topic("tx-unsent", 1, 1, &[]);
        let p = transactional("unsent", &[("linger.ms", "60000")]);
        within(60, "init", p.init_transactions()).await.unwrap();
        p.begin_transaction().unwrap();
        let d = p.send(Record::new("tx-unsent", "lingering")).await.unwrap();
        within(60, "abort", p.abort_transaction()).await.unwrap();
        let failed = d.await.expect_err("aborted before it was sent");
        assert_eq!(failed.error, kafka_tokio::DeliveryError::TransactionAborted);
        assert_eq!(failed.certainty, kafka_tokio::Certainty::NotSent);
        assert!(read_all("tx-unsent", 1, "read_uncommitted")
            .await
            .is_empty());
    });
}

#[test]
fn a_newer_producer_with_the_same_id_fences_the_zombie() {
    block_on(async {
        cluster().create_topic("tx-zombie", 1, 1, &[]);
        let zombie = transactional("zombie", &[]);
        within(60, "init", zombie.init_transactions())
            .await
            .unwrap();
        zombie.begin_transaction().unwrap();
        zombie
            .send(Record::new("tx-zombie", "from the zombie"))
            .await
            .unwrap();
        zombie.flush().await;
        let successor = transactional("zombie", &[]);
        within(60, "init", successor.init_transactions())
            .await
            .unwrap();
        let e = within(60, "the zombie's commit", zombie.commit_transaction())
            .await
            .expect_err("the zombie is fenced");
        assert!(
            matches!(
                e,
                TransactionError::Fatal(
                    ErrorCode::ProducerFenced | ErrorCode::InvalidProducerEpoch
                )
            ),
            "{e:?}"
        );
        assert!(matches!(
            zombie.begin_transaction(),
            Err(TransactionError::Fatal(_))
        ));
        successor.begin_transaction().unwrap();
        successor
            .send(Record::new("tx-zombie", "from the successor"))
            .await
            .unwrap();
        within(60, "commit", successor.commit_transaction())
            .await
            .unwrap();
        assert_eq!(
            read_all("tx-zombie", 1, "read_committed").await,
            ["from the successor"]
        );
    });
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_by_the_coordinator() {
    block_on(async {
        cluster().create_topic("tx-timeout", 1, 1, &[]);
        let p = transactional("timeout", &[("transaction.timeout.ms", "2000")]);
        within(60, "init", p.init_transactions()).await.unwrap();
        p.begin_transaction().unwrap();
        p.send(Record::new("tx-timeout", "too late")).await.unwrap();
        p.flush().await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let e = within(60, "the late commit", p.commit_transaction())
            .await
            .expect_err("the coordinator aborted the transaction");
        assert!(
            matches!(
                e,
                TransactionError::Fatal(_) | TransactionError::Abortable { .. }
            ),
            "{e:?}"
        );
        assert!(read_all("tx-timeout", 1, "read_committed").await.is_empty());
    });
}

/// Input records, each read by a group member and written to the output in a transaction that
/// also commits the member's input offsets: every input appears in the output exactly once,
/// and the group's committed offsets are the input's ends. Apache Kafka 4 finalizes
/// `transaction.version` 2 on a new cluster (KIP-890 part 2): the producer speaks it.
#[test]
fn a_consume_transform_produce_pipeline_writes_each_input_exactly_once() {
    pipeline(cluster(), "pipe", 2);
}

/// The same pipeline on a cluster formatted with `transaction.version=1`: the producer speaks
/// version 1 (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4).
#[test]
fn the_pipeline_on_a_cluster_of_transaction_version_1() {
    let c = Cluster::start_with_features(1, &["transaction.version=1"], &[]);
    pipeline(&c, "pipe-tv1", 1);
}

fn pipeline(c: &Cluster, name: &str, version: u8) {
    const N: usize = 3000;
    let (input_topic, output_topic) = (format!("{name}-in"), format!("{name}-out"));
    block_on(async {
        c.create_topic(&input_topic, 3, 1, &[]);
        c.create_topic(&output_topic, 3, 1, &[]);
        let input = Producer::from_map([("bootstrap.servers", c.bootstrap.as_str())]).unwrap();
        for i in 0..N {
            // Spread over every partition, so that each has offsets to commit.
            let r = Record::new(input_topic.clone(), format!("{i}")).partition(i as i32 % 3);
            input.send(r).await.unwrap();
        }
        input.flush().await;
        let mut consumer = Consumer::from_map([
            ("bootstrap.servers", c.bootstrap.as_str()),
            ("group.id", name),
            ("enable.auto.commit", "false"),
            ("isolation.level", "read_committed"),
            ("auto.offset.reset", "earliest"),
        ])
        .unwrap();
        consumer.subscribe([input_topic.as_str()]).unwrap();
        let producer = transactional_on(c, name, &[]);
        within(60, "init", producer.init_transactions())
            .await
            .unwrap();
        assert_eq!(producer.transaction_version(), Some(version));
        let mut done = 0;
        let mut transactions = 0;
        while done < N {
            let batch = within(60, "input", consumer.recv_batch()).await.unwrap();
            let group = consumer.group_metadata().await.expect("a group member");
            producer.begin_transaction().unwrap();
            let mut offsets: BTreeMap<(String, i32), TxnOffset> = BTreeMap::new();
            for r in &batch {
                let value = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
                producer
                    .send(Record::new(output_topic.clone(), format!("out-{value}")))
                    .await
                    .unwrap();
                offsets.insert((r.topic.to_string(), r.partition), r.next_offset());
            }
            within(
                60,
                "offsets",
                producer.send_offsets_to_transaction(offsets, group),
            )
            .await
            .unwrap();
            within(60, "commit", producer.commit_transaction())
                .await
                .unwrap();
            done += batch.len();
            transactions += 1;
        }
        assert_eq!(done, N);
        let out = read_all_on(c, &output_topic, 3, "read_committed").await;
        assert_eq!(
            out.len(),
            N,
            "each input once, in {transactions} transactions"
        );
        let unique: BTreeSet<&String> = out.iter().collect();
        assert_eq!(unique.len(), N, "no duplicates");
        let mut committed = 0;
        for p in 0..3 {
            committed += consumer
                .committed(&input_topic, p)
                .await
                .unwrap()
                .expect("committed in the transactions");
        }
        assert_eq!(
            committed, N as i64,
            "the input offsets committed with the output"
        );
        consumer.close(Duration::from_secs(10)).await;
    });
}
