//! Exactly-once through kill -9 on a real 3-node Apache Kafka cluster: the consume-transform-
//! produce pipeline of `tests::pipeline` (two members of one group, each with its own
//! `transactional.id`, one transaction per batch with the batch's input offsets) runs while its
//! seeder keeps writing the input; the transaction coordinator's node is killed (kill -9) and
//! restarted, then the group coordinator's. At the end every input record is in the output
//! exactly once as a read_committed reader sees it, and the group's committed input offsets are
//! the input's ends.

use std::time::{Duration, Instant};

use tests::kafka::{peer, Cluster};
use tests::pipeline::{Names, Pipeline};

const INPUT: &str = "eos-in";
const OUTPUT: &str = "eos-out";
const GROUP: &str = "eos-pipe";

fn ask_peer(args: &[&str]) -> usize {
    for _ in 0..100 {
        let (ok, out, _) = peer(args, None);
        if let Some(id) = ok.then(|| out.trim().parse().ok()).flatten() {
            return id;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("the Java admin could not answer {args:?}");
}

#[test]
fn exactly_once_through_kill_9_of_the_transaction_and_group_coordinators() {
    let began = Instant::now();
    let cluster = Cluster::start_with(
        3,
        "PLAINTEXT",
        &["transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"],
    );
    for t in [INPUT, OUTPUT] {
        cluster.create_topic(t, 3, 3, &["min.insync.replicas=2"]);
    }
    let bootstrap = cluster.bootstrap.clone();
    let names = Names {
        input: INPUT.into(),
        output: OUTPUT.into(),
        group: GROUP.into(),
        txn_prefix: "eos".into(),
        partitions: 3,
    };
    let pipe = Pipeline::start(&bootstrap, names, 2);
    let minute2 = Duration::from_secs(120);
    pipe.progress("start", 300, minute2);
    let txn_node = ask_peer(&["txn-coordinator", &bootstrap, "eos-0"]);
    cluster.kill(txn_node);
    pipe.progress(
        &format!("kill -9 of node {txn_node} (eos-0's transaction coordinator)"),
        300,
        minute2,
    );
    cluster.restart(txn_node);
    pipe.progress(&format!("restart of node {txn_node}"), 200, minute2);
    let group_node = ask_peer(&["coordinator", &bootstrap, GROUP]);
    cluster.kill(group_node);
    pipe.progress(
        &format!("kill -9 of node {group_node} (the group coordinator)"),
        300,
        minute2,
    );
    cluster.restart(group_node);
    pipe.progress(&format!("restart of node {group_node}"), 200, minute2);
    let s = pipe.finish(minute2);
    eprintln!(
        "exactly once through kill -9 of nodes {txn_node} and {group_node}: {} inputs, {} outputs read_committed, \
         {} transactions committed, {} failed and aborted ({} member restarts), in {:.0} s",
        s.seeded,
        s.outputs,
        s.txns,
        s.aborts,
        s.restarts,
        began.elapsed().as_secs_f64()
    );
}
