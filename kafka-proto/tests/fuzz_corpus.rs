//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the same harnesses the
//! fuzzer runs, so every input the fuzzer kept is a regression test.

use std::path::PathBuf;

use kafka_proto::testkit::fuzz;

fn replay(target: &str, harness: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "corpus {} is missing ({e}); it is committed with the repo",
                dir.display()
            )
        })
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        entries.len() >= 5,
        "corpus {} has only {} inputs",
        dir.display(),
        entries.len()
    );
    for path in &entries {
        let data = std::fs::read(path).unwrap();
        let result = std::panic::catch_unwind(|| harness(&data));
        assert!(result.is_ok(), "fuzz input {} fails", path.display());
    }
    println!("{target}: replayed {} inputs", entries.len());
}

#[test]
fn frame_corpus() {
    replay("frame", fuzz::frame);
}

#[test]
fn response_corpus() {
    replay("response", fuzz::response);
}

#[test]
fn record_batch_corpus() {
    replay("record_batch", fuzz::record_batch);
}

#[test]
fn roundtrip_corpus() {
    replay("roundtrip", fuzz::roundtrip);
}
