//! `consume`: prints records in kcat's `-f` format, from an offset, until the end or a count.

use std::collections::BTreeSet;
use std::io::Write;

use futures_util::FutureExt;
use kafka_tokio::{Consumer, ConsumerConfig, ConsumerEvent, StartFrom};

use crate::args::{settings, ConsumeArgs};
use crate::cluster::{CliResult, Cluster};
use crate::format::Format;

/// Resolves at SIGINT (Ctrl-C) or SIGTERM.
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Where `-o` starts.
enum Start {
    /// The same for every partition.
    All(StartFrom),
    /// N records before each partition's end (`-o -N`).
    BeforeEnd(i64),
    /// The first record at or after this time, epoch ms (`-o s@TS`).
    At(i64),
}

fn start_from(o: &str) -> CliResult<Start> {
    let bad = || format!("-o {o}: expected beginning, end, an offset >= 0, -N or s@TIMESTAMP");
    match o {
        "beginning" => Ok(Start::All(StartFrom::Earliest)),
        "end" => Ok(Start::All(StartFrom::Latest)),
        _ if o.starts_with("s@") => o[2..].parse().map(Start::At).map_err(|_| bad()),
        _ if o.starts_with('-') => o[1..]
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(Start::BeforeEnd)
            .ok_or_else(bad),
        n => n
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| Start::All(StartFrom::Offset(n)))
            .ok_or_else(bad),
    }
}

/// Each partition's start for `-o -N` and `-o s@TS`, from the partitions' offsets.
async fn starts(
    cluster: &Cluster,
    topic: &str,
    partitions: &[i32],
    start: &Start,
) -> CliResult<Vec<(i32, StartFrom)>> {
    use kafka_tokio::OffsetSpec;
    let tps: Vec<(String, i32)> = partitions.iter().map(|p| (topic.to_owned(), *p)).collect();
    let admin = cluster.admin();
    let list = |spec| admin.list_offsets(tps.clone(), spec);
    let offset =
        |m: &std::collections::BTreeMap<(String, i32), Result<i64, kafka_tokio::AdminError>>,
         p: i32| {
            match m.get(&(topic.to_owned(), p)) {
                Some(Ok(o)) => Ok(*o),
                Some(Err(e)) => Err(format!("offsets of {topic}-{p}: {e}")),
                None => Err(format!("no offsets for {topic}-{p}")),
            }
        };
    let mut out = Vec::new();
    match start {
        Start::All(s) => out.extend(partitions.iter().map(|p| (*p, *s))),
        Start::BeforeEnd(n) => {
            let (first, last) = (
                list(OffsetSpec::Earliest).await,
                list(OffsetSpec::Latest).await,
            );
            for p in partitions {
                let from = (offset(&last, *p)? - n).max(offset(&first, *p)?);
                out.push((*p, StartFrom::Offset(from)));
            }
        }
        Start::At(ts) => {
            let at = list(OffsetSpec::Timestamp(*ts)).await;
            for p in partitions {
                // No record at or after the time: from the end.
                let o = offset(&at, *p)?;
                out.push((
                    *p,
                    if o < 0 {
                        StartFrom::Latest
                    } else {
                        StartFrom::Offset(o)
                    },
                ));
            }
        }
    }
    Ok(out)
}

pub async fn consume(cluster: Cluster, brokers: &str, a: ConsumeArgs) -> CliResult<()> {
    let format = Format::parse(&a.format)?;
    let start = start_from(&a.offset)?;
    let mut map = vec![("bootstrap.servers".to_owned(), brokers.to_owned())];
    if let Some(g) = &a.group {
        map.push(("group.id".to_owned(), g.clone()));
        let reset = match start {
            Start::All(StartFrom::Earliest) => "earliest",
            Start::All(_) => "latest",
            _ => {
                return Err(format!(
                    "-o {}: relative and time offsets work without -G (a group starts at its \
                     committed offsets; move them with `group reset-offsets`)",
                    a.offset
                ))
            }
        };
        map.push(("auto.offset.reset".to_owned(), reset.to_owned()));
    }
    map.extend(settings(&a.config)?);
    let cfg = ConsumerConfig::from_map(map).map_err(|e| format!("consumer config: {e}"))?;
    for note in cfg.notes() {
        eprintln!("note: {note}");
    }
    let topic = cluster.topic(&a.topic).await?;
    let partitions: Vec<i32> = match a.partition {
        Some(p) if p >= 0 && (p as usize) < topic.partitions.len() => vec![p],
        Some(p) => {
            return Err(format!(
                "-p {p}: topic '{}' has partitions 0..{}",
                a.topic,
                topic.partitions.len()
            ))
        }
        None => topic.partitions.iter().map(|p| p.partition).collect(),
    };
    let mut consumer = Consumer::new(cfg);
    let mut open: BTreeSet<i32> = BTreeSet::new();
    if a.group.is_some() {
        consumer
            .subscribe([a.topic.clone()])
            .map_err(|e| e.to_string())?;
    } else {
        let starts = starts(&cluster, &a.topic, &partitions, &start).await?;
        consumer
            .assign(
                partitions.iter().map(|p| (a.topic.as_str(), *p)),
                StartFrom::Latest,
            )
            .map_err(|e| e.to_string())?;
        for (p, s) in starts {
            consumer.seek(&a.topic, p, s);
        }
        open = partitions.into_iter().collect();
    }
    cluster.close();
    let mut assigned_once = a.group.is_none();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut buf = Vec::new();
    let mut printed = 0u64;
    let write_err = |e: std::io::Error| format!("writing stdout: {e}");
    let mut stop = std::pin::pin!(interrupted());
    while a.count.is_none_or(|c| printed < c)
        && !(a.exit_at_end && assigned_once && open.is_empty())
    {
        // Flush only when the next record is not already here: one write per burst.
        let ev = match consumer.next_event().now_or_never() {
            Some(ev) => ev,
            None => {
                out.flush().map_err(write_err)?;
                tokio::select! {
                    ev = consumer.next_event() => ev,
                    // Ctrl-C or SIGTERM: what was printed is committed as the group is left,
                    // below, so that a rerun goes on from there (next_event is cancel-safe).
                    () = &mut stop => {
                        eprintln!("interrupted after {printed} records: committing and leaving");
                        break;
                    }
                }
            }
        };
        match ev.map_err(|e| e.to_string())? {
            ConsumerEvent::Record(r) => {
                buf.clear();
                format.render(&r, &mut buf);
                out.write_all(&buf).map_err(write_err)?;
                printed += 1;
            }
            ConsumerEvent::EndOfPartition { partition, .. } => {
                open.remove(&partition);
            }
            ConsumerEvent::Assigned(tps) => {
                let list: Vec<String> = tps.iter().map(|(t, p)| format!("{t}-{p}")).collect();
                eprintln!("assigned: {}", list.join(", "));
                open.extend(tps.iter().map(|(_, p)| *p));
                assigned_once = true;
            }
            ConsumerEvent::Revoking(tps) | ConsumerEvent::Lost(tps) => {
                for (_, p) in &tps {
                    open.remove(p);
                }
                // With enable.auto.commit (the default) this waits for its commit.
                consumer.ack_revocation();
            }
            _ => {}
        }
    }
    out.flush().map_err(write_err)?;
    // Leaves the group, committing what was printed (enable.auto.commit).
    consumer.close(std::time::Duration::from_secs(10)).await;
    Ok(())
}

/// How many records a topic holds (log end minus log start, over its partitions), in words.
async fn held(cluster: &Cluster, name: &str, topic: &kafka_tokio::TopicMetadata) -> String {
    use kafka_tokio::OffsetSpec;
    let tps: Vec<(String, i32)> = topic
        .partitions
        .iter()
        .map(|p| (name.to_owned(), p.partition))
        .collect();
    let admin = cluster.admin();
    let first = admin.list_offsets(tps.clone(), OffsetSpec::Earliest).await;
    let last = admin.list_offsets(tps.clone(), OffsetSpec::Latest).await;
    let mut n = 0;
    for tp in &tps {
        match (first.get(tp), last.get(tp)) {
            (Some(Ok(a)), Some(Ok(b))) => n += b - a,
            _ => return "an unknown number of records".into(),
        }
    }
    format!("{n} records")
}

pub struct PerfArgs {
    pub topic: String,
    pub count: u64,
    pub group: Option<String>,
    pub config: Vec<String>,
    pub json: bool,
}

/// `perf consume`: N records from the beginning, timed from the first request.
pub async fn perf(cluster: Cluster, brokers: &str, a: PerfArgs) -> CliResult<()> {
    let topic = cluster.topic(&a.topic).await?;
    let timeout = cluster.timeout();
    let closed = cluster.close();
    let mut map = vec![
        ("bootstrap.servers".to_owned(), brokers.to_owned()),
        ("auto.offset.reset".to_owned(), "earliest".to_owned()),
    ];
    if let Some(g) = &a.group {
        map.push(("group.id".to_owned(), g.clone()));
    }
    map.extend(settings(&a.config)?);
    let cfg = ConsumerConfig::from_map(map).map_err(|e| format!("consumer config: {e}"))?;
    for note in cfg.notes() {
        eprintln!("note: {note}");
    }
    let bar = if a.json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(a.count)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} records, {per_sec}, eta {eta}",
        )
        .expect("a valid template"),
    );
    let start = std::time::Instant::now();
    let mut consumer = Consumer::new(cfg);
    match &a.group {
        Some(_) => consumer.subscribe([a.topic.clone()]),
        None => consumer.assign(
            topic
                .partitions
                .iter()
                .map(|p| (a.topic.as_str(), p.partition)),
            StartFrom::Earliest,
        ),
    }
    .map_err(|e| e.to_string())?;
    let (mut count, mut bytes) = (0u64, 0u64);
    // `recv_batch`, the API's fastest idiom: one call (and one look at the clock for
    // `max.poll.interval.ms`) per batch of fetched records instead of per record.
    while count < a.count {
        // A topic that holds fewer records than asked for says so after --timeout without
        // a record, instead of waiting for ever.
        let batch = match tokio::time::timeout(timeout, consumer.recv_batch()).await {
            Ok(batch) => batch.map_err(|e| e.to_string())?,
            Err(_) => {
                bar.finish_and_clear();
                consumer.close(std::time::Duration::from_secs(10)).await;
                let held = match closed.reopen() {
                    Ok(cluster) => held(&cluster, &a.topic, &topic).await,
                    Err(_) => "an unknown number of records".into(),
                };
                return Err(format!(
                    "only {count} of {} records arrived, none in the last {}s: topic '{}' holds \
                     {held} (ask for fewer with -n, or produce more)",
                    a.count,
                    timeout.as_secs(),
                    a.topic
                ));
            }
        };
        for r in batch {
            count += 1;
            bytes += r.value.as_ref().map_or(0, |v| v.len()) as u64;
        }
        bar.set_position(count);
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let metrics = consumer.metrics().await;
    consumer.close(std::time::Duration::from_secs(10)).await;
    let rps = count as f64 / seconds;
    let mbps = bytes as f64 / seconds / 1e6;
    if a.json {
        let out = serde_json::json!({
            "records": count,
            "bytes": bytes,
            "seconds": seconds,
            "records_per_sec": rps,
            "mb_per_sec": mbps,
            "metrics": crate::format::headline(&metrics, "consumer-fetch-manager-metrics", &[
                "fetch-latency-avg",
                "fetch-latency-max",
                "fetch-size-avg",
                "fetch-rate",
                "records-lag-max",
                "records-consumed-total",
                "bytes-consumed-total",
            ]),
        });
        println!("{out}");
    } else {
        println!(
            "{count} records ({bytes} B of values) in {seconds:.2} s: {rps:.0} records/s, {mbps:.1} MB/s"
        );
    }
    Ok(())
}
