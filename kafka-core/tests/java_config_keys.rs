//! Every key of the Java clients' configurations is accepted, as this client's own or as a
//! Java key it notes and ignores (with a warning at construction): a configuration written for
//! Java never fails here for a key Java knows. `java_config_keys.txt` lists Apache Kafka's
//! keys (extracted by `scripts/java/ConfigKeys.java`; `scripts/test` checks it against the
//! jars).

use kafka_core::config::java_keys::{is_key_of, Client};
use kafka_core::config::{AdminConfig, ConsumerConfig, ProducerConfig};

#[test]
fn every_java_key_is_known() {
    let mut unknown = Vec::new();
    let mut checked = 0;
    for line in include_str!("java_config_keys.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (client, key) = line.split_once(' ').expect("CLIENT KEY");
        let (ours, java) = match client {
            "producer" => (ProducerConfig::KEYS, Client::Producer),
            "consumer" => (ConsumerConfig::KEYS, Client::Consumer),
            "admin" => (AdminConfig::KEYS, Client::Admin),
            other => panic!("unknown client {other}"),
        };
        if !ours.iter().any(|(k, _)| *k == key) && !is_key_of(java, key) {
            unknown.push(line);
        }
        checked += 1;
    }
    assert!(checked > 300, "the list is whole ({checked} keys)");
    assert!(
        unknown.is_empty(),
        "Java keys this client would refuse as unknown (add them to config/java_keys.rs, or \
         implement them): {unknown:?}"
    );
}
