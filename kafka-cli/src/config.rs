//! `config describe` and `config alter`: a topic's or a broker's configuration, shaped like
//! Kafka's own `kafka-configs.sh --describe --all` and `--alter --add-config/--delete-config`
//! (changed incrementally: keys not named keep their values). Sensitive values never print.

use kafka_tokio::{AlterConfigOp, ConfigResource};
use serde_json::json;

use crate::args::ConfigTarget;
use crate::cluster::{CliResult, Cluster};

fn resource(t: &ConfigTarget) -> ConfigResource {
    match (&t.topic, t.broker) {
        (Some(topic), _) => ConfigResource::Topic(topic.clone()),
        (None, Some(id)) => ConfigResource::Broker(id),
        (None, None) => unreachable!("clap requires --topic or --broker"),
    }
}

fn what(t: &ConfigTarget) -> String {
    match (&t.topic, t.broker) {
        (Some(topic), _) => format!("topic '{topic}'"),
        (_, Some(id)) => format!("broker {id}"),
        _ => String::new(),
    }
}

pub async fn describe(cluster: &Cluster, target: &ConfigTarget, json: bool) -> CliResult<()> {
    let entries = cluster
        .admin()
        .describe_configs(resource(target))
        .await
        .map_err(|e| format!("{}: {}", what(target), cluster.explain(e)))?;
    if json {
        let v: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({"name": e.name, "value": e.value, "source": e.source.java_name(),
                       "sensitive": e.sensitive, "read_only": e.read_only})
            })
            .collect();
        println!("{}", json!({ "configs": v }));
        return Ok(());
    }
    println!("{:<48} {:<32} SOURCE", "KEY", "VALUE");
    for e in entries {
        let value = match (&e.value, e.sensitive) {
            (_, true) => "(sensitive)".to_owned(),
            (Some(v), _) => v.clone(),
            (None, _) => "-".to_owned(),
        };
        println!("{:<48} {:<32} {}", e.name, value, e.source.java_name());
    }
    Ok(())
}

pub async fn alter(
    cluster: &Cluster,
    target: &ConfigTarget,
    set: &[String],
    delete: &[String],
) -> CliResult<()> {
    let mut ops = Vec::new();
    for s in set {
        let Some((k, v)) = s.split_once('=') else {
            return Err(format!("--set takes KEY=VALUE, got '{s}'"));
        };
        ops.push(AlterConfigOp::Set(k.trim().to_owned(), v.to_owned()));
    }
    ops.extend(delete.iter().map(|k| AlterConfigOp::Delete(k.clone())));
    if ops.is_empty() {
        return Err("nothing to change: give --set KEY=VALUE or --delete KEY".to_owned());
    }
    cluster
        .admin()
        .alter_configs(resource(target), ops)
        .await
        .map_err(|e| format!("{}: {}", what(target), cluster.explain(e)))?;
    eprintln!(
        "altered {}: {} set, {} deleted",
        what(target),
        set.len(),
        delete.len()
    );
    Ok(())
}
