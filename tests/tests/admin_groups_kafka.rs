//! Group and offset administration against Apache Kafka (one node): listing and describing a
//! group with a live member, its committed offsets and lag (checked against the Java client's
//! AdminClient for the same group), offsets by time, a member's commits of offsets of its
//! choosing, altering offsets (refused while the group has members; then a new member starts
//! where they say), and deleting the group.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_tokio::{Admin, AdminError, Consumer, OffsetSpec, Producer, Record};
use tests::kafka::{peer, Cluster};
use tests::tokio_block_on as block_on;

const TOPIC: &str = "admin-groups";
const GROUP: &str = "admin-group";

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 60 s"))
}

fn member(bootstrap: &str) -> Consumer {
    Consumer::from_map([
        ("bootstrap.servers", bootstrap),
        ("group.id", GROUP),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        ("client.id", "admin-test-member"),
    ])
    .unwrap()
}

#[test]
fn groups_and_offsets_are_listed_described_altered_and_deleted() {
    let cluster = Cluster::start(1);
    let bootstrap = cluster.bootstrap.clone();
    cluster.create_topic(TOPIC, 3, 1, &[]);
    block_on(async {
        // 100 records a partition, with timestamps 1,000 ms apart from t0.
        let t0 = 1_700_000_000_000i64;
        let p = Producer::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        for i in 0..300i64 {
            let r = Record::new(TOPIC, format!("v{i}"))
                .partition((i % 3) as i32)
                .timestamp(t0 + (i / 3) * 1000);
            p.send(r).await.unwrap();
        }
        p.flush().await;
        p.close(Duration::from_secs(5)).await;

        // A member reads 150 records and commits them.
        let mut m = member(&bootstrap);
        m.subscribe([TOPIC]).unwrap();
        let mut read = 0;
        while read < 150 {
            read += within("reading", m.recv_batch()).await.unwrap().len();
        }
        within("commit", m.commit()).await.unwrap();

        let admin = Admin::from_map([("bootstrap.servers", bootstrap.as_str())]).unwrap();
        let groups = within("list_groups", admin.list_groups()).await.unwrap();
        let g = groups
            .iter()
            .find(|g| g.group_id == GROUP)
            .unwrap_or_else(|| panic!("{GROUP} listed: {groups:?}"));
        assert_eq!(g.protocol_type, "consumer");

        let d = within("describe_group", admin.describe_group(GROUP))
            .await
            .unwrap();
        assert_eq!(d.state, "Stable", "{d:?}");
        assert_eq!(d.members.len(), 1, "{d:?}");
        assert_eq!(d.members[0].client_id, "admin-test-member");
        let mut assigned = d.members[0].assignment.clone();
        assigned.sort();
        assert_eq!(
            assigned,
            (0..3).map(|p| (TOPIC.to_owned(), p)).collect::<Vec<_>>()
        );

        // Committed offsets and lag, beside Java's AdminClient.
        let committed = within("list_group_offsets", admin.list_group_offsets(GROUP))
            .await
            .unwrap();
        // (The member's first batches may not reach every partition.)
        assert!(committed.values().sum::<i64>() >= 150, "{committed:?}");
        let partitions: Vec<(String, i32)> = (0..3).map(|p| (TOPIC.to_owned(), p)).collect();
        let ends = within(
            "list_offsets",
            admin.list_offsets(partitions.clone(), OffsetSpec::Latest),
        )
        .await;
        let ours: Vec<String> = committed
            .iter()
            .map(|(tp, c)| {
                let end = ends[tp].clone().unwrap();
                format!("{} {} {c} {end} {}", tp.0, tp.1, end - c)
            })
            .collect();
        let (ok, out, err) = peer(&["lag", &bootstrap, GROUP], None);
        assert!(ok, "Java's lag: {err}");
        let java: Vec<String> = out.lines().map(str::to_owned).collect();
        assert_eq!(
            ours, java,
            "committed, end and lag per partition, as Java's AdminClient"
        );

        // Offsets by time: the earliest is 0, the latest 100, and the first at t0 + 50 s is 50.
        let earliest = within(
            "earliest",
            admin.list_offsets(partitions.clone(), OffsetSpec::Earliest),
        )
        .await;
        assert!(
            earliest.values().all(|o| o.as_ref().ok() == Some(&0)),
            "{earliest:?}"
        );
        assert!(
            ends.values().all(|o| o.as_ref().ok() == Some(&100)),
            "{ends:?}"
        );
        let at = within(
            "by time",
            admin.list_offsets(partitions.clone(), OffsetSpec::Timestamp(t0 + 50_000)),
        )
        .await;
        assert!(at.values().all(|o| o.as_ref().ok() == Some(&50)), "{at:?}");
        let unknown = within(
            "an unknown topic",
            admin.list_offsets(vec![("no-such-topic".into(), 0)], OffsetSpec::Latest),
        )
        .await;
        assert!(unknown.values().all(|r| r.is_err()), "{unknown:?}");

        // The member commits offsets of its choosing (sync, then async), not what it read.
        within("commit_offsets", m.commit_offsets([((TOPIC, 0), 5)]))
            .await
            .unwrap();
        within(
            "commit_offsets_async",
            m.commit_offsets_async([((TOPIC, 1), 6)]),
        )
        .await
        .unwrap();
        let chosen = within("offsets", admin.list_group_offsets(GROUP))
            .await
            .unwrap();
        assert_eq!(chosen.get(&(TOPIC.to_owned(), 0)), Some(&5), "{chosen:?}");
        assert_eq!(chosen.get(&(TOPIC.to_owned(), 1)), Some(&6), "{chosen:?}");

        // Altering offsets is refused while the member runs.
        let to_10: BTreeMap<(String, i32), i64> =
            partitions.iter().map(|tp| (tp.clone(), 10)).collect();
        let refused = within("alter", admin.alter_group_offsets(GROUP, to_10.clone())).await;
        assert!(
            matches!(refused, Err(AdminError::GroupNotEmpty { .. })),
            "{refused:?}"
        );
        let refused = within("delete", admin.delete_group(GROUP)).await;
        assert!(
            refused.is_err(),
            "deleting a group with members: {refused:?}"
        );
        m.close(Duration::from_secs(10)).await;

        // Then it is taken, and a new member starts there: 90 records a partition are left.
        within("alter", admin.alter_group_offsets(GROUP, to_10))
            .await
            .unwrap();
        let after = within("offsets", admin.list_group_offsets(GROUP))
            .await
            .unwrap();
        assert!(after.values().all(|o| *o == 10), "{after:?}");
        let mut m = member(&bootstrap);
        m.subscribe([TOPIC]).unwrap();
        let mut first: BTreeMap<i32, i64> = BTreeMap::new();
        let mut read = 0;
        while read < 270 {
            for r in within("reading again", m.recv_batch()).await.unwrap() {
                first.entry(r.partition).or_insert(r.offset);
                read += 1;
            }
        }
        assert!(first.values().all(|o| *o == 10), "{first:?}");
        m.close(Duration::from_secs(10)).await;

        within("delete", admin.delete_group(GROUP)).await.unwrap();
        let groups = within("list_groups", admin.list_groups()).await.unwrap();
        assert!(groups.iter().all(|g| g.group_id != GROUP), "{groups:?}");
        let gone = within("describe", admin.describe_group(GROUP)).await;
        assert!(
            matches!(
                gone,
                Err(AdminError::Broker {
                    code: kafka_tokio::ErrorCode::GroupIdNotFound,
                    ..
                })
            ),
            "a deleted group: {gone:?}"
        );
    });
}
