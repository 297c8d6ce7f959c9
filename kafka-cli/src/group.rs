//! The group tools and `offsets`: groups listed and described with their lag, offsets reset
//! (to the earliest, the latest, a time, an offset, or shifted) and groups deleted, shaped
//! like Kafka's own `kafka-consumer-groups.sh`; a topic's offsets by time.

use std::collections::BTreeMap;

use kafka_tokio::{AdminError, OffsetSpec};
use serde_json::json;

use crate::args::ResetTo;
use crate::cluster::{CliResult, Cluster};

/// A topic partition.
type Tp = (String, i32);

/// A time as `--to-datetime` and `--time` take it: RFC 3339, or milliseconds since the epoch.
fn parse_time(s: &str) -> CliResult<i64> {
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| {
            format!(
                "'{s}' is not a time: {e} (use RFC 3339, e.g. 2026-12-01T10:00:00Z, or epoch ms)"
            )
        })?;
    Ok((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

pub async fn list(cluster: &Cluster, json: bool) -> CliResult<()> {
    let groups = cluster
        .admin()
        .list_groups()
        .await
        .map_err(|e| cluster.explain(e))?;
    if json {
        let v: Vec<_> = groups
            .iter()
            .map(|g| {
                json!({"group": g.group_id, "protocol_type": g.protocol_type,
                       "state": g.state, "coordinator": g.coordinator})
            })
            .collect();
        println!("{}", json!({ "groups": v }));
        return Ok(());
    }
    println!("{:<40} {:<10} {:<20} COORDINATOR", "GROUP", "TYPE", "STATE");
    for g in groups {
        println!(
            "{:<40} {:<10} {:<20} {}",
            g.group_id,
            g.protocol_type,
            g.state.as_deref().unwrap_or("-"),
            g.coordinator
        );
    }
    Ok(())
}

pub async fn describe(cluster: &Cluster, group: &str, json: bool) -> CliResult<()> {
    let admin = cluster.admin();
    let d = admin
        .describe_group(group)
        .await
        .map_err(|e| cluster.explain(e))?;
    let committed = admin
        .list_group_offsets(group)
        .await
        .map_err(|e| cluster.explain(e))?;
    // Every partition a member owns or the group committed, with its owner.
    let mut rows: BTreeMap<Tp, (Option<i64>, Option<&str>)> = BTreeMap::new();
    for m in &d.members {
        for tp in &m.assignment {
            rows.entry(tp.clone()).or_default().1 = Some(m.member_id.as_str());
        }
    }
    for (tp, o) in &committed {
        rows.entry(tp.clone()).or_default().0 = Some(*o);
    }
    let ends = admin
        .list_offsets(rows.keys().cloned().collect(), OffsetSpec::Latest)
        .await;
    let end = |tp: &(String, i32)| ends.get(tp).and_then(|r| r.as_ref().ok()).copied();
    if json {
        let partitions: Vec<_> = rows
            .iter()
            .map(|(tp, (c, m))| {
                let e = end(tp);
                json!({"topic": tp.0, "partition": tp.1, "committed": c, "log_end": e,
                       "lag": c.zip(e).map(|(c, e)| e - c), "member": m})
            })
            .collect();
        let members: Vec<_> = d
            .members
            .iter()
            .map(|m| {
                json!({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                       "client_id": m.client_id, "host": m.client_host,
                       "assignment": m.assignment.iter().map(|(t, p)| json!({"topic": t, "partition": p})).collect::<Vec<_>>()})
            })
            .collect();
        println!(
            "{}",
            json!({"group": d.group_id, "state": d.state, "protocol_type": d.protocol_type,
                   "assignor": d.protocol, "coordinator": d.coordinator,
                   "members": members, "partitions": partitions})
        );
        return Ok(());
    }
    println!(
        "group {} is {} ({} members, assignor {}, coordinator {})",
        d.group_id,
        d.state,
        d.members.len(),
        if d.protocol.is_empty() {
            "-"
        } else {
            &d.protocol
        },
        d.coordinator
    );
    println!(
        "{:<30} {:>9} {:>14} {:>14} {:>8}  {:<40} CLIENT-ID / HOST",
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER"
    );
    let dash = || "-".to_owned();
    for (tp, (c, m)) in &rows {
        let e = end(tp);
        let member = m.and_then(|id| d.members.iter().find(|x| x.member_id == id));
        println!(
            "{:<30} {:>9} {:>14} {:>14} {:>8}  {:<40} {}",
            tp.0,
            tp.1,
            c.map_or_else(dash, |v| v.to_string()),
            e.map_or_else(dash, |v| v.to_string()),
            c.zip(e).map_or_else(dash, |(c, e)| (e - c).to_string()),
            m.unwrap_or("-"),
            member.map_or_else(dash, |m| format!("{} / {}", m.client_id, m.client_host)),
        );
    }
    Ok(())
}

pub async fn reset(
    cluster: &Cluster,
    group: &str,
    topic: &str,
    to: &ResetTo,
    dry_run: bool,
) -> CliResult<()> {
    let admin = cluster.admin();
    let md = cluster.topic(topic).await?;
    let partitions: Vec<(String, i32)> = md
        .partitions
        .iter()
        .map(|p| (topic.to_owned(), p.partition))
        .collect();
    let list = |spec| admin.list_offsets(partitions.clone(), spec);
    let first = list(OffsetSpec::Earliest).await;
    let last = list(OffsetSpec::Latest).await;
    let bound = |m: &BTreeMap<(String, i32), Result<i64, AdminError>>, tp: &(String, i32)| {
        m.get(tp)
            .and_then(|r| r.as_ref().ok())
            .copied()
            .ok_or_else(|| format!("no offsets for {}-{} (does it have a leader?)", tp.0, tp.1))
    };
    let at = match &to.to_datetime {
        Some(t) => Some(list(OffsetSpec::Timestamp(parse_time(t)?)).await),
        None => None,
    };
    let committed = if to.shift_by.is_some() {
        admin
            .list_group_offsets(group)
            .await
            .map_err(|e| cluster.explain(e))?
    } else {
        BTreeMap::new()
    };
    let mut target = BTreeMap::new();
    for tp in &partitions {
        let (lo, hi) = (bound(&first, tp)?, bound(&last, tp)?);
        let want = if to.to_earliest {
            lo
        } else if to.to_latest {
            hi
        } else if let Some(at) = &at {
            bound(at, tp).unwrap_or(hi)
        } else if let Some(o) = to.to_offset {
            o
        } else {
            // --shift-by: from the committed offset (the log start without one).
            committed.get(tp).copied().unwrap_or(lo) + to.shift_by.unwrap_or(0)
        };
        target.insert(tp.clone(), want.clamp(lo, hi));
    }
    println!("{:<30} {:>9} {:>14}", "TOPIC", "PARTITION", "NEW-OFFSET");
    for ((t, p), o) in &target {
        println!("{t:<30} {p:>9} {o:>14}");
    }
    if dry_run {
        eprintln!("dry run: group '{group}' left as it was");
        return Ok(());
    }
    admin
        .alter_group_offsets(group, target)
        .await
        .map_err(|e| cluster.explain(e))?;
    eprintln!("reset group '{group}' on topic '{topic}'");
    Ok(())
}

pub async fn delete(cluster: &Cluster, group: &str) -> CliResult<()> {
    cluster
        .admin()
        .delete_group(group)
        .await
        .map_err(|e| match e {
            AdminError::Broker {
                code: kafka_tokio::ErrorCode::NonEmptyGroup,
                ..
            } => format!("group {group} has active members: stop its consumers, then delete it"),
            e => cluster.explain(e),
        })?;
    eprintln!("deleted group '{group}'");
    Ok(())
}

pub async fn offsets(
    cluster: &Cluster,
    topic: &str,
    at: Option<&str>,
    json: bool,
) -> CliResult<()> {
    let admin = cluster.admin();
    let md = cluster.topic(topic).await?;
    let partitions: Vec<(String, i32)> = md
        .partitions
        .iter()
        .map(|p| (topic.to_owned(), p.partition))
        .collect();
    let value = |m: &BTreeMap<(String, i32), Result<i64, AdminError>>, tp| {
        m.get(tp).map(|r| match r {
            Ok(o) => o.to_string(),
            Err(e) => format!("error: {e}"),
        })
    };
    let columns: Vec<(&str, BTreeMap<_, _>)> = match at {
        Some(t) => {
            let ms = parse_time(t)?;
            vec![(
                "AT-TIME",
                admin
                    .list_offsets(partitions.clone(), OffsetSpec::Timestamp(ms))
                    .await,
            )]
        }
        None => vec![
            (
                "EARLIEST",
                admin
                    .list_offsets(partitions.clone(), OffsetSpec::Earliest)
                    .await,
            ),
            (
                "LATEST",
                admin
                    .list_offsets(partitions.clone(), OffsetSpec::Latest)
                    .await,
            ),
        ],
    };
    if json {
        let rows: Vec<_> = partitions
            .iter()
            .map(|tp| {
                let mut o = serde_json::Map::new();
                o.insert("partition".into(), json!(tp.1));
                for (name, m) in &columns {
                    let v = m.get(tp).and_then(|r| r.as_ref().ok()).copied();
                    o.insert(name.to_lowercase().replace('-', "_"), json!(v));
                }
                serde_json::Value::Object(o)
            })
            .collect();
        println!("{}", json!({"topic": topic, "partitions": rows}));
        return Ok(());
    }
    print!("{:>9}", "PARTITION");
    for (name, _) in &columns {
        print!(" {name:>14}");
    }
    println!();
    for tp in &partitions {
        print!("{:>9}", tp.1);
        for (_, m) in &columns {
            print!(" {:>14}", value(m, tp).unwrap_or_else(|| "-".into()));
        }
        println!();
    }
    Ok(())
}
