//! On runs with SASL, an application with the wrong password: its records fail as never
//! sent (`DeliveryError::Authentication`, or a metadata timeout when faults kept it from a
//! broker), within `max.block.ms`, and none is in the log; its admin call fails the same way.
//! The other applications, with the right password, are not disturbed.

use std::time::Duration;

use kafka_driver::{Admin, AdminError, DeliveryError, Producer, Record};

use super::apps::{security, Shared};
use crate::sim::apps::Dice;
use crate::simrt::{self, SimRuntime};

/// The user every application of a secured run authenticates as.
pub const USER: &str = "app";
/// Its password.
pub const PASSWORD: &str = "app-secret";
/// The intruder's records carry this prefix: none may reach the log.
pub const VALUE_PREFIX: &str = "intruder-";
const MAX_BLOCK: Duration = Duration::from_millis(2000);

/// Runs the intruder; a broken expectation fails the run.
pub async fn intruder(seed: u64, shared: Shared) {
    if let Err(message) = attempt(seed).await {
        shared.borrow_mut().fail(format!("intruder: {message}"));
    }
    shared.borrow_mut().intruder_done = true;
}

async fn attempt(seed: u64) -> Result<(), String> {
    let mut dice = Dice::new(seed ^ 0x696e_7472);
    simrt::sleep(Duration::from_millis(dice.below(4000))).await;
    let wrong = format!("wrong-{seed}");
    let settings: Vec<(String, String)> = security()
        .into_iter()
        .map(|(k, v)| {
            if k == "sasl.password" {
                (k, wrong.clone())
            } else {
                (k, v)
            }
        })
        .chain(
            [
                ("bootstrap.servers", super::apps::bootstrap()),
                ("max.block.ms", MAX_BLOCK.as_millis().to_string()),
                ("request.timeout.ms", "1500".into()),
                ("default.api.timeout.ms", "2000".into()),
                ("reconnect.backoff.ms", "20".into()),
                ("random.seed", seed.wrapping_add(4242).to_string()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        )
        .collect();
    let producer = Producer::<SimRuntime>::from_map(settings.clone())
        .map_err(|e| format!("settings refused: {e}"))?;
    for i in 0..3 {
        let started = simrt::now();
        let d = producer
            .send(Record::new("t", format!("{VALUE_PREFIX}{i}")))
            .await
            .map_err(|e| format!("send refused: {e}"))?;
        match d.await {
            Ok(ok) => {
                return Err(format!(
                    "a record was delivered with a wrong password: {ok:?}"
                ))
            }
            Err(f) => {
                let took = simrt::now().saturating_duration_since(started);
                let expected = matches!(
                    f.error,
                    DeliveryError::Authentication(_) | DeliveryError::MetadataTimeout { .. }
                );
                if !expected || f.certainty != kafka_core::producer::Certainty::NotSent {
                    return Err(format!("record {i} failed unexpectedly: {f}"));
                }
                if took > MAX_BLOCK + Duration::from_millis(100) {
                    return Err(format!("record {i} failed only after {took:?}: {f}"));
                }
                if f.to_string().contains(&wrong) {
                    return Err(format!("the password is in the error: {f}"));
                }
            }
        }
    }
    producer.close(Duration::from_secs(2)).await;
    let admin = Admin::<SimRuntime>::from_map(settings).map_err(|e| format!("{e}"))?;
    match admin.metadata(None).await {
        Ok(_) => Err("the admin client was answered with a wrong password".into()),
        Err(AdminError::Authentication(_) | AdminError::Timeout { .. }) => Ok(()),
        Err(e) => Err(format!("the admin call failed unexpectedly: {e}")),
    }
}
