//! The command line: kcat's flag letters where kcat has one, subcommands for the modes.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A kcat-like Kafka client.
#[derive(Debug, Parser)]
#[command(name = "kafka-cli", version, about)]
pub struct Cli {
    /// Bootstrap broker(s), HOST:PORT[,HOST:PORT...].
    #[arg(
        short = 'b',
        long = "brokers",
        global = true,
        default_value = "localhost:9092"
    )]
    pub brokers: String,
    /// Seconds to wait for the cluster before giving up on metadata and admin calls.
    #[arg(long, global = true, default_value_t = 10)]
    pub timeout: u64,
    /// A client config, key=value (repeatable), for every command: security
    /// (`security.protocol=SASL_SSL`, `sasl.mechanism=SCRAM-SHA-512`, `ssl.ca.location=...`)
    /// and the producer's or consumer's settings (`acks=all`, `linger.ms=5`).
    #[arg(short = 'X', long = "config", global = true)]
    pub config: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lists brokers, topics, partitions and leaders (kcat -L).
    #[command(short_flag = 'L')]
    Metadata {
        /// Only this topic.
        #[arg(short = 't', long)]
        topic: Option<String>,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Creates or deletes topics.
    Topic {
        #[command(subcommand)]
        action: TopicAction,
    },
    /// Produces one record per stdin line (kcat -P).
    #[command(short_flag = 'P')]
    Produce(ProduceArgs),
    /// Prints records (kcat -C).
    #[command(short_flag = 'C')]
    Consume(ConsumeArgs),
    /// Load tests.
    Perf {
        #[command(subcommand)]
        what: PerfCommand,
    },
    /// Consumer groups: list, describe (offsets and lag), reset offsets, delete.
    Group {
        #[command(subcommand)]
        action: GroupAction,
    },
    /// A topic's or a broker's configuration: describe, or alter key by key.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// A topic's offsets per partition: earliest and latest, or the first at a time.
    Offsets {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// The first offset at or after this time (RFC 3339, e.g. 2026-12-01T10:00:00Z, or
        /// milliseconds since the epoch).
        #[arg(long)]
        time: Option<String>,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum GroupAction {
    /// Lists the groups of every broker.
    List {
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// A group's state and members, and per partition its committed offset, log end and lag.
    Describe {
        /// The group.
        group: String,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Moves a group's committed offsets on a topic (refused while the group has members).
    ResetOffsets {
        /// The group.
        group: String,
        /// The topic whose partitions move.
        #[arg(short = 't', long)]
        topic: String,
        #[command(flatten)]
        to: ResetTo,
        /// Print the new offsets without committing them.
        #[arg(long)]
        dry_run: bool,
    },
    /// Deletes a group (refused while it has members).
    Delete {
        /// The group.
        group: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Every key with its value and source (kafka-configs --describe --all).
    Describe {
        #[command(flatten)]
        target: ConfigTarget,
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Sets or deletes keys; the others keep their values (kafka-configs --alter).
    Alter {
        #[command(flatten)]
        target: ConfigTarget,
        /// KEY=VALUE to set (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// A key to reset to its default (repeatable).
        #[arg(long = "delete", value_name = "KEY")]
        delete: Vec<String>,
    },
}

/// Whose configuration (one of them).
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct ConfigTarget {
    /// A topic.
    #[arg(short = 't', long)]
    pub topic: Option<String>,
    /// A broker, by node id.
    #[arg(long)]
    pub broker: Option<i32>,
}

/// Where `group reset-offsets` moves a group (one of them).
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct ResetTo {
    /// To each partition's log start.
    #[arg(long)]
    pub to_earliest: bool,
    /// To each partition's log end.
    #[arg(long)]
    pub to_latest: bool,
    /// To the first offset at or after this time (RFC 3339 or epoch ms).
    #[arg(long)]
    pub to_datetime: Option<String>,
    /// To this offset (kept within each partition's log).
    #[arg(long, allow_negative_numbers = true)]
    pub to_offset: Option<i64>,
    /// By this many records from the committed offset (negative: back), kept within the log.
    #[arg(long, allow_negative_numbers = true)]
    pub shift_by: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum TopicAction {
    /// Creates a topic.
    Create {
        /// Its name.
        name: String,
        /// Its partition count (-1: the broker's default).
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        partitions: i32,
        /// Its replication factor (-1: the broker's default).
        #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
        replication_factor: i16,
    },
    /// Deletes a topic.
    Delete {
        /// Its name.
        name: String,
    },
    /// Raises a topic's partition count (kafka-topics --alter --partitions).
    Alter {
        /// Its name.
        name: String,
        /// The new partition count (more than it has).
        #[arg(long)]
        partitions: i32,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Codec {
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

#[derive(Debug, Args)]
pub struct ProduceArgs {
    /// The topic.
    #[arg(short = 't', long)]
    pub topic: String,
    /// Splits each line at the first DELIM into key and value.
    #[arg(short = 'K', long = "key-delimiter")]
    pub key_delimiter: Option<String>,
    /// A header for every record, name=value (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Sends every record to this partition.
    #[arg(short = 'p', long)]
    pub partition: Option<i32>,
    /// Compression codec.
    #[arg(short = 'z', long = "compression", value_enum)]
    pub compression: Option<Codec>,
    /// With `-X transactional.id=ID` (which sends the whole input in one transaction,
    /// committed at end of input): write the records, then abort the transaction, so that
    /// read_committed readers skip them and read_uncommitted ones see them.
    #[arg(long)]
    pub abort: bool,
    /// The global -X settings (filled in from [`Cli::config`]).
    #[arg(skip)]
    pub config: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ConsumeArgs {
    /// The topic.
    #[arg(short = 't', long)]
    pub topic: String,
    /// Only this partition (default: all).
    #[arg(short = 'p', long)]
    pub partition: Option<i32>,
    /// Joins this consumer group instead of reading every partition (prints assignments on
    /// stderr; -o then applies only where the group has no committed offset).
    #[arg(short = 'G', long = "group", conflicts_with = "partition")]
    pub group: Option<String>,
    /// Where to start: beginning, end, an offset, -N (N records before each partition's
    /// end), or s@TIMESTAMP (the first record at or after it, epoch ms), as in kcat.
    #[arg(short = 'o', long, default_value = "end", allow_hyphen_values = true)]
    pub offset: String,
    /// Exits once every partition's end is reached.
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,
    /// Exits after COUNT records.
    #[arg(short = 'c', long)]
    pub count: Option<u64>,
    /// Output format: %t topic, %p partition, %o offset, %k key, %s value, %T timestamp,
    /// %h headers, %K key length, %S value length, %% percent; \n and \t escapes.
    #[arg(short = 'f', long, default_value = "%s\\n")]
    pub format: String,
    /// The global -X settings (filled in from [`Cli::config`]).
    #[arg(skip)]
    pub config: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PerfCommand {
    /// Produces N records of SIZE bytes as fast as the producer takes them.
    Produce {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// How many records.
        #[arg(short = 'n', long, default_value_t = 1_000_000)]
        count: u64,
        /// Value size in bytes.
        #[arg(short = 's', long, default_value_t = 100)]
        size: usize,
        /// How records are sent and their outcomes taken, to compare the API's idioms: a window
        /// of `Deliveries` taken oldest first with one shared `Topic` (the fastest), a
        /// `FuturesUnordered` of deliveries, deliveries dropped unawaited (then a flush), or
        /// `Deliveries` with the topic passed as a `String` per record.
        #[arg(long, value_enum, default_value_t = Idiom::Deliveries)]
        idiom: Idiom,
        /// Gives each record a key, taken in turn from N distinct keys, so that the default
        /// partitioner (murmur2 of the key, as Java's) spreads records over every partition as
        /// an application with keyed records does (0: no keys; the sticky partitioner then
        /// fills one partition's batch at a time).
        #[arg(long, default_value_t = 0)]
        keys: u64,
        /// The global -X settings (filled in from [`Cli::config`]).
        #[arg(skip)]
        config: Vec<String>,
        /// One JSON object on stdout instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// Reads N records from the beginning as fast as they come.
    Consume {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// How many records.
        #[arg(short = 'n', long, default_value_t = 1_000_000)]
        count: u64,
        /// Reads through this consumer group instead of assigning every partition.
        #[arg(short = 'G', long = "group")]
        group: Option<String>,
        /// The global -X settings (filled in from [`Cli::config`]).
        #[arg(skip)]
        config: Vec<String>,
        /// One JSON object on stdout instead of the summary.
        #[arg(long)]
        json: bool,
    },
}

/// How `perf produce` sends (see its `--idiom`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Idiom {
    /// A window of `Deliveries` taken oldest first, one shared `Topic`.
    Deliveries,
    /// Every delivery pushed into a `FuturesUnordered`, taken as they complete.
    FuturesUnordered,
    /// Deliveries dropped unawaited; a flush at the end.
    Detached,
    /// `Deliveries`, with the topic passed as a `String` for each record.
    StringTopic,
}

/// Splits `key=value` settings, naming the bad one.
pub fn settings(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
                .ok_or_else(|| {
                    // A malformed setting may hold a secret (`sasl.password:...`): never echo
                    // one that looks like it.
                    let lower = kv.to_ascii_lowercase();
                    let secret = ["password", "secret", "jaas", "token", "key"]
                        .iter()
                        .any(|w| lower.contains(w));
                    let shown = if secret { "<redacted>" } else { kv.as_str() };
                    format!("-X {shown}: expected key=value")
                })
        })
        .collect()
}
