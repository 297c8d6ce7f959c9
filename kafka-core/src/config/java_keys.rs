//! Which Java client a configuration key belongs to, so that one settings map can serve the
//! producer, the consumer and the admin client: a key of another client (or a Java key this
//! client has no use for, such as a serializer class) is accepted with a note, and only a key
//! no Java client knows is an error, naming the right client's documentation.

/// The Java clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `ProducerConfig`.
    Producer,
    /// `ConsumerConfig`.
    Consumer,
    /// `AdminClientConfig`.
    Admin,
}

impl Client {
    /// The client's name, as Kafka's documentation names its configs.
    pub fn name(self) -> &'static str {
        match self {
            Client::Producer => "producer",
            Client::Consumer => "consumer",
            Client::Admin => "admin",
        }
    }

    /// Kafka's documentation of the client's configs.
    pub fn docs(self) -> &'static str {
        match self {
            Client::Producer => "https://kafka.apache.org/documentation/#producerconfigs",
            Client::Consumer => "https://kafka.apache.org/documentation/#consumerconfigs",
            Client::Admin => "https://kafka.apache.org/documentation/#adminclientconfigs",
        }
    }
}

/// Keys every Java client has (CommonClientConfigs, security, metrics).
const COMMON: &[&str] = &[
    "bootstrap.resolve.timeout.ms",
    "bootstrap.servers",
    "client.dns.lookup",
    "config.providers",
    "client.id",
    "connections.max.idle.ms",
    "enable.metrics.push",
    "metadata.cluster.check.enable",
    "metadata.max.age.ms",
    "metadata.recovery.strategy",
    "metadata.recovery.rebootstrap.trigger.ms",
    "metric.reporters",
    "metrics.num.samples",
    "metrics.recording.level",
    "metrics.sample.window.ms",
    "auto.include.jmx.reporter",
    "receive.buffer.bytes",
    "send.buffer.bytes",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "security.protocol",
    "security.providers",
    "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms",
];

/// Key prefixes every Java client has: TLS and SASL settings.
const COMMON_PREFIXES: &[&str] = &["ssl.", "sasl."];

const PRODUCER: &[&str] = &[
    "acks",
    "batch.size",
    "buffer.memory",
    "buffer.memory.allocation.strategy",
    "client.rack",
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "delivery.timeout.ms",
    "enable.idempotence",
    "interceptor.classes",
    "key.serializer",
    "value.serializer",
    "linger.ms",
    "max.block.ms",
    "max.in.flight.requests.per.connection",
    "max.request.size",
    "metadata.max.idle.ms",
    "partitioner.class",
    "partitioner.ignore.keys",
    "partitioner.adaptive.partitioning.enable",
    "partitioner.availability.timeout.ms",
    "partitioner.rack.aware",
    "retries",
    "transactional.id",
    "transaction.timeout.ms",
    "transaction.two.phase.commit.enable",
];

const CONSUMER: &[&str] = &[
    "allow.auto.create.topics",
    "auto.commit.interval.ms",
    "auto.offset.reset",
    "check.crcs",
    "client.rack",
    "default.api.timeout.ms",
    "enable.auto.commit",
    "exclude.internal.topics",
    "fetch.max.bytes",
    "fetch.max.wait.ms",
    "fetch.min.bytes",
    "group.id",
    "group.instance.id",
    "group.protocol",
    "group.remote.assignor",
    "heartbeat.interval.ms",
    "interceptor.classes",
    "internal.throw.on.fetch.stable.offset.unsupported",
    "isolation.level",
    "key.deserializer",
    "value.deserializer",
    "max.partition.fetch.bytes",
    "max.poll.interval.ms",
    "max.poll.records",
    "partition.assignment.strategy",
    "session.timeout.ms",
    "share.acknowledgement.mode",
    "share.acquire.mode",
];

const ADMIN: &[&str] = &["bootstrap.controllers", "default.api.timeout.ms", "retries"];

/// This project's own settings (not Java's), by the clients that take them: another client
/// notes and ignores them as it does the Java keys of other clients, so that one set of
/// settings (the CLI's `-X`) can serve every client.
const OWN: &[(&str, &[Client])] = &[(
    "connections.per.broker",
    &[Client::Producer, Client::Consumer],
)];

fn keys(client: Client) -> &'static [&'static str] {
    match client {
        Client::Producer => PRODUCER,
        Client::Consumer => CONSUMER,
        Client::Admin => ADMIN,
    }
}

/// Whether `key` is a key of `client` in Java.
pub fn is_key_of(client: Client, key: &str) -> bool {
    COMMON.contains(&key)
        || COMMON_PREFIXES.iter().any(|p| key.starts_with(p))
        || keys(client).contains(&key)
}

/// The note for a Java key this client (`of`) does not use; `None` if no Java client knows
/// the key (an error, then).
pub fn note(of: Client, key: &str) -> Option<String> {
    if is_key_of(of, key) {
        return Some(format!(
            "`{key}` is a Java {} setting this client does not use; ignored",
            of.name()
        ));
    }
    let owners: Vec<&str> = [Client::Producer, Client::Consumer, Client::Admin]
        .into_iter()
        .filter(|c| {
            *c != of
                && (keys(*c).contains(&key)
                    || OWN
                        .iter()
                        .any(|(k, owners)| *k == key && owners.contains(c)))
        })
        .map(Client::name)
        .collect();
    (!owners.is_empty()).then(|| {
        format!(
            "`{key}` is a {} setting; the {} ignores it",
            owners.join(" and "),
            of.name()
        )
    })
}
