//! kafka-cli: a kcat-like Kafka client on kafka-tokio. Errors print one line that names the
//! cause and exit 1; bad flags exit 2.

mod args;
mod cluster;
mod config;
mod consume;
mod format;
mod group;
mod produce;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser as _;
use kafka_tokio::NewTopic;

use args::{Cli, Command, ConfigAction, GroupAction, PerfCommand, TopicAction};
use cluster::{print_metadata, CliResult, Cluster};

/// With `RUST_LOG` set to a level (`error`, `warn`, `info`, `debug`, `trace`), the client's
/// tracing events at that level and above go to stderr, as fields (`key=value`).
fn logs() {
    let Ok(level) = std::env::var("RUST_LOG") else {
        return;
    };
    let Ok(level) = level.trim().parse::<tracing::Level>() else {
        eprintln!(
            "warning: RUST_LOG={level} is not a level (error, warn, info, debug, trace); no logs"
        );
        return;
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> ExitCode {
    // As kcat and other Unix filters: stdout closed by its reader (`kafka-cli consume | head`)
    // ends the program quietly, by SIGPIPE, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: restores a signal's default disposition at startup, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, like every other error: clap's message up to its usage block.
            let text = e.render().to_string();
            let message: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.trim_start().starts_with("tip:"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let message = message.join(" ");
            let message = message.trim_start_matches("error: ");
            eprintln!("error: {message} (see kafka-cli --help)");
            return ExitCode::from(2);
        }
    };
    logs();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> CliResult<()> {
    let cluster = Cluster::new(&cli.brokers, &cli.config, Duration::from_secs(cli.timeout))?;
    let global = cli.config;
    match cli.command {
        Command::Metadata { topic, json } => {
            let topics: Option<Vec<&str>> = topic.as_deref().map(|t| vec![t]);
            let md = match &topic {
                Some(t) => {
                    cluster.topic(t).await?;
                    cluster.metadata(topics.as_deref()).await?
                }
                None => cluster.metadata(None).await?,
            };
            print_metadata(&md, json);
            Ok(())
        }
        Command::Topic {
            action:
                TopicAction::Create {
                    name,
                    partitions,
                    replication_factor,
                },
        } => {
            let mut t = NewTopic::new(name.clone(), partitions);
            t.replication_factor = replication_factor;
            cluster.create(t).await?;
            eprintln!("created topic '{name}'");
            Ok(())
        }
        Command::Topic {
            action: TopicAction::Alter { name, partitions },
        } => {
            cluster.topic(&name).await?;
            let results = cluster
                .admin()
                .create_partitions(&[(name.as_str(), partitions)])
                .await;
            for (_, r) in results {
                r.map_err(|e| cluster.explain(e))?;
            }
            eprintln!("topic '{name}' now has {partitions} partitions");
            Ok(())
        }
        Command::Topic {
            action: TopicAction::Delete { name },
        } => {
            cluster.delete(&name).await?;
            eprintln!("deleted topic '{name}'");
            Ok(())
        }
        Command::Produce(mut a) => {
            a.config = global;
            produce::produce(cluster, &cli.brokers, a).await
        }
        Command::Consume(mut a) => {
            a.config = global;
            consume::consume(cluster, &cli.brokers, a).await
        }
        Command::Perf {
            what:
                PerfCommand::Produce {
                    topic,
                    count,
                    size,
                    idiom,
                    keys,
                    config: _,
                    json,
                },
        } => {
            let config = global;
            let a = produce::PerfArgs {
                topic,
                count,
                size,
                idiom,
                keys,
                config,
                json,
            };
            produce::perf(cluster, &cli.brokers, a).await
        }
        Command::Perf {
            what:
                PerfCommand::Consume {
                    topic,
                    count,
                    group,
                    config: _,
                    json,
                },
        } => {
            let config = global;
            let a = consume::PerfArgs {
                topic,
                count,
                group,
                config,
                json,
            };
            consume::perf(cluster, &cli.brokers, a).await
        }
        Command::Group { action } => match action {
            GroupAction::List { json } => group::list(&cluster, json).await,
            GroupAction::Describe { group, json } => group::describe(&cluster, &group, json).await,
            GroupAction::ResetOffsets {
                group,
                topic,
                to,
                dry_run,
            } => group::reset(&cluster, &group, &topic, &to, dry_run).await,
            GroupAction::Delete { group } => group::delete(&cluster, &group).await,
        },
        Command::Config { action } => match action {
            ConfigAction::Describe { target, json } => {
                config::describe(&cluster, &target, json).await
            }
            ConfigAction::Alter {
                target,
                set,
                delete,
            } => config::alter(&cluster, &target, &set, &delete).await,
        },
        Command::Offsets { topic, time, json } => {
            group::offsets(&cluster, &topic, time.as_deref(), json).await
        }
    }
}
