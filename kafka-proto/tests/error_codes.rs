//! Every error code's retriability against the Java client's: `java_error_codes.txt` lists
//! Apache Kafka's `Errors` with whether each exception class extends `RetriableException`
//! (extracted by `scripts/java/ErrorCodes.java`; `scripts/test` checks it against the jars).

use kafka_proto::ErrorCode;

#[test]
fn every_code_matches_the_java_clients_name_and_retriability() {
    let listed = include_str!("java_error_codes.txt");
    let mut checked = 0;
    for line in listed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut fields = line.split(' ');
        let code: i16 = fields.next().unwrap().parse().unwrap();
        let name = fields.next().unwrap();
        let retriable: bool = fields.next().unwrap().parse().unwrap();
        let ours = ErrorCode::from_code(code).unwrap();
        assert!(
            !matches!(ours, ErrorCode::Unknown(_)),
            "error code {code} ({name}) is missing from kafka-proto's table"
        );
        assert_eq!(ours.name(), name, "error code {code}");
        assert_eq!(
            ours.is_retriable(),
            retriable,
            "{name} ({code}): Java's exception class says retriable = {retriable}"
        );
        checked += 1;
    }
    assert!(checked > 130, "only {checked} codes listed");
}

/// Under transaction version 2 a Produce answers CONCURRENT_TRANSACTIONS while the previous
/// transaction's markers are still being written: Java 4.x retries it.
#[test]
fn concurrent_transactions_is_retriable() {
    assert!(ErrorCode::ConcurrentTransactions.is_retriable());
}
