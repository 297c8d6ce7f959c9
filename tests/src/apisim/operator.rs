//! An operator's application on the `Admin` API: it describes the cluster, lists the groups,
//! creates topics and deletes them through the faults. Each call ends within `default.api.timeout.ms`, each
//! answer agrees with what the client was told before, and the cluster ends as the answers
//! said.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_driver::{Admin, AdminError, ErrorCode, NewTopic};

use super::apps::{bootstrap, Shared};
use crate::sim::apps::Dice;
use crate::simrt::{self, SimRuntime};

/// `default.api.timeout.ms` of the operator.
pub const API_TIMEOUT: Duration = Duration::from_millis(4000);

/// What the operator knows of a topic it created: its partition count, and whether it exists
/// (`None`: a call timed out, so it may or may not).
pub type Known = BTreeMap<String, (usize, Option<bool>)>;

/// Runs admin calls until `stop_at`; leaves what it learned in the ledger's `topics`.
pub async fn operator(seed: u64, stop_at: kafka_core::Instant, shared: Shared) {
    if let Err(message) = operate(seed, stop_at, &shared).await {
        shared.borrow_mut().fail(message);
    }
    shared.borrow_mut().operator_done = true;
}

async fn operate(seed: u64, stop_at: kafka_core::Instant, shared: &Shared) -> Result<(), String> {
    let mut dice = Dice::new(seed ^ 0x6f70_6572);
    let settings: Vec<(&str, String)> = vec![
        ("bootstrap.servers", bootstrap()),
        ("client.id", "operator".into()),
        (
            "default.api.timeout.ms",
            API_TIMEOUT.as_millis().to_string(),
        ),
        ("request.timeout.ms", "1500".into()),
        ("retry.backoff.ms", "50".into()),
        ("reconnect.backoff.ms", "20".into()),
        ("reconnect.backoff.max.ms", "500".into()),
        ("random.seed", seed.wrapping_add(77).to_string()),
    ];
    let settings = settings
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(super::apps::security());
    let admin = Admin::<SimRuntime>::from_map(settings).expect("valid simulation settings");
    let mut made = 0u32;
    while simrt::now() < stop_at {
        simrt::sleep(Duration::from_millis(50 + dice.below(500))).await;
        let began = simrt::now();
        let what = match dice.below(4) {
            3 => {
                let r = admin.list_groups().await;
                match &r {
                    Ok(_) | Err(AdminError::Timeout { .. }) => {}
                    // Every third seed, broker 2 offers no ListGroups.
                    Err(AdminError::Unsupported(_)) if seed.is_multiple_of(3) => {}
                    Err(e) => return Err(format!("operator: listing the groups failed: {e:?}")),
                }
                format!("list groups: {}", brief(r.map(|_| ())))
            }
            0 => {
                let r = admin.metadata(None).await;
                if let Ok(md) = &r {
                    let known = shared.borrow().topics.clone();
                    check_metadata(md, &known)?;
                }
                format!("metadata: {}", brief(r.map(|_| ())))
            }
            1 => {
                let name = format!("adm-{made}");
                made += 1;
                let partitions = 1 + dice.below(4) as i32;
                let mut topic = NewTopic::new(name.clone(), partitions);
                topic.replication_factor = 1 + dice.below(2) as i16;
                let r = admin.create_topic(topic).await;
                let exists = match &r {
                    Ok(()) => Some(true),
                    // An earlier attempt of this call made it (its answer was lost).
                    Err(AdminError::Broker {
                        code: ErrorCode::TopicAlreadyExists,
                        ..
                    }) => Some(true),
                    // Replicas are placed only on brokers that are up.
                    Err(AdminError::Broker {
                        code: ErrorCode::InvalidReplicationFactor,
                        ..
                    }) => Some(false),
                    Err(AdminError::Timeout { .. }) => None,
                    Err(e) => return Err(format!("operator: creating {name} failed: {e:?}")),
                };
                shared
                    .borrow_mut()
                    .topics
                    .insert(name.clone(), (partitions as usize, exists));
                format!("create {name} ({partitions}): {}", brief(r))
            }
            _ => {
                let existing: Vec<String> = shared
                    .borrow()
                    .topics
                    .iter()
                    .filter(|(_, (_, e))| *e == Some(true))
                    .map(|(n, _)| n.clone())
                    .collect();
                let Some(name) = existing.get(dice.below(existing.len().max(1) as u64) as usize)
                else {
                    continue;
                };
                let r = admin.delete_topic(name).await;
                let exists = match &r {
                    Ok(()) => Some(false),
                    Err(AdminError::Broker {
                        code: ErrorCode::UnknownTopicOrPartition,
                        ..
                    }) => Some(false),
                    Err(AdminError::Timeout { .. }) => None,
                    Err(e) => return Err(format!("operator: deleting {name} failed: {e:?}")),
                };
                if let Some(t) = shared.borrow_mut().topics.get_mut(name) {
                    t.1 = exists;
                }
                format!("delete {name}: {}", brief(r))
            }
        };
        let took = simrt::now() - began;
        let mut l = shared.borrow_mut();
        l.notes.push(format!("operator {what} in {took:?}"));
        l.admin_calls.0 += 1;
        if !what.ends_with("timed out") {
            l.admin_calls.1 += 1;
        }
        if took > API_TIMEOUT + Duration::from_millis(1) {
            return Err(format!(
                "operator: {what} took {took:?}, past default.api.timeout.ms ({API_TIMEOUT:?})"
            ));
        }
    }
    Ok(())
}

fn brief(r: Result<(), AdminError>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(AdminError::Timeout { .. }) => "timed out".into(),
        Err(e) => format!("{e}"),
    }
}

/// A cluster description agrees with the simulated topic "t" and with what the operator was
/// told of its own topics.
fn check_metadata(md: &kafka_driver::ClusterMetadata, known: &Known) -> Result<(), String> {
    let find = |name: &str| {
        md.topics
            .iter()
            .find(|t| t.name == name && t.error.is_none())
    };
    match find("t") {
        Some(t) if t.partitions.len() == 3 => {}
        other => return Err(format!("operator: metadata describes t as {other:?}")),
    }
    if md.brokers.is_empty() {
        return Err("operator: metadata lists no brokers".into());
    }
    for (name, (partitions, exists)) in known {
        match (exists, find(name)) {
            (Some(true), Some(t)) if t.partitions.len() == *partitions => {}
            (Some(false), None) | (None, _) => {}
            (_, found) => {
                return Err(format!(
                    "operator: {name} should {}exist with {partitions} partitions; metadata says {found:?}",
                    if *exists == Some(false) { "not " } else { "" }
                ))
            }
        }
    }
    Ok(())
}

/// At the end: the cluster holds the operator's topics as its answers said.
pub fn check_cluster(cluster: &kafka_sim::SimCluster, known: &Known) -> Result<(), String> {
    for (name, (partitions, exists)) in known {
        let found = cluster.partition_count(name);
        match (exists, found) {
            (Some(true), Some(n)) if n == *partitions => {}
            (Some(false), None) | (None, _) => {}
            _ => {
                return Err(format!(
                    "operator: the client was told {name} {} ({partitions} partitions), the cluster has {found:?}",
                    if *exists == Some(true) { "exists" } else { "does not exist" }
                ))
            }
        }
    }
    Ok(())
}
