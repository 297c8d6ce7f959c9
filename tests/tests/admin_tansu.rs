//! The admin, group and consumer calls of issue #22 against Tansu, the quickstart's embedded broker:
//! what it answers, pinned down so that a change in either shows (its gaps are in
//! `docs/compat.md`). Apache Kafka's answers are checked in `admin_groups_kafka.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_tokio::{Admin, ConfigResource, Consumer, OffsetSpec, Producer, Record};
use tests::brokers::{Kind, TestBroker};
use tests::tokio_block_on as block_on;

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 60 s"))
}

#[test]
fn tansu_answers_the_admin_and_lookup_calls() {
    let broker = TestBroker::exclusive(Kind::Tansu);
    let b = broker.addr.clone();
    broker.create_topic("tansu-admin", 2);
    block_on(async {
        let p = Producer::from_map([("bootstrap.servers", b.as_str())]).unwrap();
        for i in 0..20 {
            p.send(Record::new("tansu-admin", format!("v{i}")).partition(i % 2))
                .await
                .unwrap();
        }
        p.flush().await;
        let admin = Admin::from_map([
            ("bootstrap.servers", b.as_str()),
            ("default.api.timeout.ms", "5000"),
        ])
        .unwrap();
        let mut seen = BTreeMap::new();
        // DescribeCluster.
        let c = within("describe_cluster", admin.describe_cluster()).await;
        seen.insert("describe_cluster", format!("{c:?}"));
        // DescribeConfigs and IncrementalAlterConfigs on a topic.
        let topic = ConfigResource::Topic("tansu-admin".into());
        let d = within("describe_configs", admin.describe_configs(topic.clone())).await;
        seen.insert("describe_configs", format!("{d:?}"));
        let a = within(
            "alter_configs",
            admin.alter_configs(
                topic,
                vec![kafka_tokio::AlterConfigOp::Set(
                    "retention.ms".into(),
                    "100000".into(),
                )],
            ),
        )
        .await;
        seen.insert("alter_configs", format!("{a:?}"));
        // DeleteRecords.
        let del = within(
            "delete_records",
            admin.delete_records(BTreeMap::from([(("tansu-admin".to_owned(), 0), 3)])),
        )
        .await;
        seen.insert("delete_records", format!("{del:?}"));
        // The consumer's lookups.
        let consumer = Consumer::from_map([
            ("bootstrap.servers", b.as_str()),
            ("default.api.timeout.ms", "5000"),
        ])
        .unwrap();
        let tps = || (0..2).map(|p| ("tansu-admin".to_owned(), p));
        let begin = within("beginning_offsets", consumer.beginning_offsets(tps())).await;
        seen.insert("beginning_offsets", format!("{begin:?}"));
        let end = within("end_offsets", consumer.end_offsets(tps())).await;
        seen.insert("end_offsets", format!("{end:?}"));
        let listed = admin
            .list_offsets(tps().collect(), OffsetSpec::Latest)
            .await;
        for (k, v) in &seen {
            eprintln!("tansu {k}: {v}");
        }
        // Every call answers within its timeout, one way or the other; what Tansu does:
        assert!(c.is_ok(), "DescribeCluster: {c:?}");
        assert!(c.unwrap().brokers.len() == 1);
        assert!(begin.is_ok() && end.is_ok(), "{begin:?} {end:?}");
        // Tansu 0.6 lists no configuration keys, accepts an alteration, and closes the
        // connection on DeleteRecords: the call ends within default.api.timeout.ms, naming it.
        assert_eq!(
            d,
            Ok(Vec::new()),
            "Tansu now describes configurations: update compat.md"
        );
        assert_eq!(a, Ok(()));
        let del = &del[&("tansu-admin".to_owned(), 0)];
        assert!(
            matches!(del, Err(kafka_tokio::AdminError::Timeout { last: Some(l) }) if l.contains("closed")),
            "Tansu now answers DeleteRecords: update compat.md ({del:?})"
        );
        // The consumer's end offsets are what the admin client's ListOffsets says.
        let end = end.unwrap();
        for tp in tps() {
            assert_eq!(Some(end[&tp]), listed[&tp].clone().ok(), "{tp:?}");
        }
    });
}

/// The group tools' calls on Tansu: a group that read and committed is listed, described
/// (members gone: `Empty`), its offsets read, altered (no members) and deleted.
#[test]
fn tansu_answers_the_group_calls() {
    let broker = TestBroker::exclusive(Kind::Tansu);
    let b = broker.addr.clone();
    broker.create_topic("tansu-groups", 1);
    block_on(async {
        let p = Producer::from_map([("bootstrap.servers", b.as_str())]).unwrap();
        for i in 0..10 {
            p.send(Record::new("tansu-groups", format!("v{i}")))
                .await
                .unwrap();
        }
        p.flush().await;
        let mut c = Consumer::from_map([
            ("bootstrap.servers", b.as_str()),
            ("group.id", "tansu-g"),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "false"),
        ])
        .unwrap();
        c.subscribe(["tansu-groups"]).unwrap();
        let mut read = 0;
        while read < 10 {
            read += within("reading", c.recv_batch()).await.unwrap().len();
        }
        within("commit", c.commit()).await.unwrap();
        let admin = Admin::from_map([("bootstrap.servers", b.as_str())]).unwrap();
        // With its member: Tansu answers ConsumerGroupDescribe for it as an empty consumer
        // group, so the classic DescribeGroups is asked too, and tells the truth.
        let live = within("describe_group", admin.describe_group("tansu-g"))
            .await
            .unwrap();
        assert_eq!(live.members.len(), 1, "{live:?}");
        assert!(!live.consumer_protocol, "{live:?}");
        // Tansu 0.6's DescribeGroups carries no member assignment (docs/compat.md).
        assert!(
            live.members[0].assignment.is_empty(),
            "Tansu now describes assignments: update compat.md ({live:?})"
        );
        c.close(Duration::from_secs(10)).await;

        let groups = within("list_groups", admin.list_groups()).await.unwrap();
        let g = groups
            .iter()
            .find(|g| g.group_id == "tansu-g")
            .unwrap_or_else(|| panic!("listed: {groups:?}"));
        // Tansu 0.6 names every state Unknown (docs/compat.md).
        assert_eq!(g.state.as_deref(), Some("Unknown"), "{g:?}");
        let d = within("describe_group", admin.describe_group("tansu-g"))
            .await
            .unwrap();
        assert!(d.members.is_empty(), "{d:?}");
        let tp = ("tansu-groups".to_owned(), 0);
        let offsets = within("list_group_offsets", admin.list_group_offsets("tansu-g"))
            .await
            .unwrap();
        assert_eq!(offsets.get(&tp), Some(&10), "{offsets:?}");
        within(
            "alter_group_offsets",
            admin.alter_group_offsets("tansu-g", BTreeMap::from([(tp.clone(), 4)])),
        )
        .await
        .unwrap();
        let offsets = within("list_group_offsets", admin.list_group_offsets("tansu-g"))
            .await
            .unwrap();
        assert_eq!(offsets.get(&tp), Some(&4), "{offsets:?}");
        within("delete_group", admin.delete_group("tansu-g"))
            .await
            .unwrap();
        let groups = within("list_groups", admin.list_groups()).await.unwrap();
        assert!(
            groups.iter().all(|g| g.group_id != "tansu-g"),
            "deleted: {groups:?}"
        );
    });
}
