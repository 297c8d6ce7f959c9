//! kafka-cli: a kcat-like tool. The commands arrive with the adapters issue.

fn main() {
    eprintln!(
        "kafka-cli {}: no commands yet; metadata, produce, consume and perf arrive with the adapters issue",
        env!("CARGO_PKG_VERSION")
    );
    std::process::exit(2);
}
