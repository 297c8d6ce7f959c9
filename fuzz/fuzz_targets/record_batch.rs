//! Fuzz target: see `kafka_proto::testkit::fuzz::record_batch`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kafka_proto::testkit::fuzz::record_batch(data));
