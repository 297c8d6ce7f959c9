// The Java client as a peer for the tests (scripts/kafka peer compiles it against the
// kafka-clients jar of the Kafka version in use). Records cross the process boundary as
// tab-separated lines, bytes in hex, `-` for null:
//
//   partition  offset  timestamp  key  value  headers(name:hex,name:-,...)
//
// Subcommands (settings as k=v arguments after the fixed ones):
//   wait-brokers BOOTSTRAP N TIMEOUT_S      until the cluster shows N brokers
//   create-topic BOOTSTRAP NAME PARTITIONS RF [k=v]...   a topic with these topic configs
//   quorum-leader BOOTSTRAP                 the node id of the active KRaft controller
//   coordinator BOOTSTRAP GROUP             the node id of the group's coordinator
//   txn-coordinator BOOTSTRAP ID            the node id of a transactional id's coordinator
//   lag BOOTSTRAP GROUP                     per partition: `topic partition committed end lag`
//   produce BOOTSTRAP TOPIC [k=v]...        stdin: partition(-1 = the partitioner) timestamp
//                                           key value headers; stdout: partition offset.
//                                           With transactional.id, the input is one
//                                           transaction, committed (or, with peer.abort=true,
//                                           flushed and aborted; offsets are then not printed)
//   consume BOOTSTRAP TOPIC COUNT TIMEOUT_S [k=v]...  assigns every partition from the start
//                                           (or subscribes, with group.id); prints COUNT records
//   partition N                             stdin: hex keys; stdout: the built-in
//                                           partitioner's partition for each
//   member BOOTSTRAP GROUP TOPIC [k=v]...   a group member: prints `assigned p,p`, `revoked
//                                           p,p`, `record p offset value`, commits after each
//                                           poll; stops at the line `stop` on stdin
//   codec                                   stdin: `KEY VERSION req|resp HEX` message bodies;
//                                           each read by Kafka's generated message class and
//                                           written back at that version: `ok HEX`, or `error
//                                           WHY` (kafka-rs's codec differential)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class KafkaPeer {
    static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "wait-brokers" -> waitBrokers(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            case "create-topic" -> createTopic(args[1], args[2], Integer.parseInt(args[3]), Short.parseShort(args[4]), settings(args, 5));
            case "quorum-leader" -> quorumLeader(args[1]);
            case "coordinator" -> coordinator(args[1], args[2]);
            case "txn-coordinator" -> txnCoordinator(args[1], args[2]);
            case "lag" -> lag(args[1], args[2]);
            case "produce" -> produce(args[1], args[2], settings(args, 3));
            case "consume" -> consume(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]), settings(args, 5));
            case "partition" -> partition(Integer.parseInt(args[1]));
            case "member" -> member(args[1], args[2], args[3], settings(args, 4));
            case "codec" -> codec();
            default -> throw new IllegalArgumentException("unknown subcommand " + args[0]);
        }
    }

    static Properties settings(String[] args, int from) {
        Properties p = new Properties();
        for (int i = from; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            p.setProperty(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        return p;
    }

    static byte[] bytes(String field) {
        return field.equals("-") ? null : HEX.parseHex(field);
    }

    static String hex(byte[] b) {
        return b == null ? "-" : HEX.formatHex(b);
    }

    static void waitBrokers(String bootstrap, int n, int timeoutS) throws Exception {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        try (Admin admin = Admin.create(p)) {
            while (true) {
                try {
                    int seen = admin.describeCluster().nodes().get().size();
                    if (seen >= n) {
                        return;
                    }
                } catch (Exception e) {
                    // not up yet
                }
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("fewer than " + n + " brokers after " + timeoutS + " s");
                    System.exit(1);
                }
                Thread.sleep(200);
            }
        }
    }

    static void createTopic(String bootstrap, String name, int partitions, short rf, Properties configs) throws Exception {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            var topic = new org.apache.kafka.clients.admin.NewTopic(name, partitions, rf);
            var map = new java.util.HashMap<String, String>();
            configs.forEach((k, v) -> map.put((String) k, (String) v));
            topic.configs(map);
            try {
                admin.createTopics(List.of(topic)).all().get();
            } catch (java.util.concurrent.ExecutionException e) {
                // Already there (a node restarted with its data): fine.
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) {
                    throw e;
                }
            }
            // Every partition has a leader before the test goes on.
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                try {
                    var d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
                    if (d.partitions().stream().allMatch(tp -> tp.leader() != null && !tp.leader().isEmpty())) {
                        // Metadata names a leader before that leader has applied the change (the
                        // metadata cache is published first): a produce in that window gets
                        // NOT_LEADER_OR_FOLLOWER, and with acks=0 the broker closes the
                        // connection, losing the records. ListOffsets goes to each leader and
                        // succeeds once it serves the partition.
                        var spec = new java.util.HashMap<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec>();
                        for (var tp : d.partitions()) {
                            spec.put(new org.apache.kafka.common.TopicPartition(name, tp.partition()), org.apache.kafka.clients.admin.OffsetSpec.latest());
                        }
                        admin.listOffsets(spec).all().get();
                        return;
                    }
                } catch (java.util.concurrent.ExecutionException e) {
                    // Not known to the broker answering yet.
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("topic " + name + " has partitions without a leader");
                }
                Thread.sleep(100);
            }
        }
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        return Admin.create(p);
    }

    static void quorumLeader(String bootstrap) throws Exception {
        try (Admin a = admin(bootstrap)) {
            System.out.println(a.describeMetadataQuorum().quorumInfo().get().leaderId());
        }
    }

    static void coordinator(String bootstrap, String group) throws Exception {
        try (Admin a = admin(bootstrap)) {
            var d = a.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            System.out.println(d.coordinator().id());
        }
    }

    static void lag(String bootstrap, String group) throws Exception {
        try (Admin a = admin(bootstrap)) {
            var committed = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            var latest = new java.util.HashMap<org.apache.kafka.common.TopicPartition,
                org.apache.kafka.clients.admin.OffsetSpec>();
            for (var tp : committed.keySet()) {
                latest.put(tp, org.apache.kafka.clients.admin.OffsetSpec.latest());
            }
            var ends = a.listOffsets(latest).all().get();
            var sorted = new java.util.TreeMap<String, String>();
            for (var e : committed.entrySet()) {
                long c = e.getValue().offset();
                long end = ends.get(e.getKey()).offset();
                sorted.put(e.getKey().topic() + "\t" + String.format("%09d", e.getKey().partition()),
                    e.getKey().topic() + " " + e.getKey().partition() + " " + c + " " + end + " " + (end - c));
            }
            for (String line : sorted.values()) {
                System.out.println(line);
            }
        }
    }

    static void txnCoordinator(String bootstrap, String id) throws Exception {
        try (Admin a = admin(bootstrap)) {
            System.out.println(a.describeTransactions(List.of(id)).description(id).get().coordinatorId());
        }
    }

    static void produce(String bootstrap, String topic, Properties p) throws Exception {
        p.setProperty("bootstrap.servers", bootstrap);
        p.putIfAbsent("linger.ms", "5");
        boolean abort = Boolean.parseBoolean((String) p.remove("peer.abort"));
        // peer.sync: each record's send waits for the one before to be acknowledged.
        boolean sync = Boolean.parseBoolean((String) p.remove("peer.sync"));
        // peer.metrics: the client's own metrics are printed on stderr at the end.
        boolean metrics = Boolean.parseBoolean((String) p.remove("peer.metrics"));
        boolean transactional = p.containsKey("transactional.id");
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (transactional) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split("\t", -1);
                int partition = Integer.parseInt(f[0]);
                long timestamp = Long.parseLong(f[1]);
                RecordHeaders headers = new RecordHeaders();
                if (!f[4].equals("-") && !f[4].isEmpty()) {
                    for (String h : f[4].split(",")) {
                        int c = h.indexOf(':');
                        headers.add(h.substring(0, c), bytes(h.substring(c + 1)));
                    }
                }
                sent.add(producer.send(new ProducerRecord<>(topic, partition < 0 ? null : partition,
                        timestamp < 0 ? null : timestamp, bytes(f[2]), bytes(f[3]), headers)));
                if (sync) {
                    sent.get(sent.size() - 1).get();
                }
            }
            producer.flush();
            if (metrics) {
                printMetrics(producer.metrics());
            }
            if (transactional && abort) {
                producer.abortTransaction();
                return;
            }
            if (transactional) {
                producer.commitTransaction();
            }
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                System.out.println(m.partition() + "\t" + m.offset());
            }
        }
    }

    static String line(ConsumerRecord<byte[], byte[]> r) {
        StringBuilder h = new StringBuilder();
        for (Header header : r.headers()) {
            h.append(h.length() == 0 ? "" : ",").append(header.key()).append(':').append(hex(header.value()));
        }
        return r.partition() + "\t" + r.offset() + "\t" + r.timestamp() + "\t" + hex(r.key()) + "\t"
                + hex(r.value()) + "\t" + (h.length() == 0 ? "-" : h);
    }

    static void consume(String bootstrap, String topic, int count, int timeoutS, Properties p) {
        p.setProperty("bootstrap.servers", bootstrap);
        p.putIfAbsent("auto.offset.reset", "earliest");
        boolean metrics = Boolean.parseBoolean((String) p.remove("peer.metrics"));
        try (KafkaConsumer<byte[], byte[]> c =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            if (p.containsKey("group.id")) {
                c.subscribe(List.of(topic));
            } else {
                List<TopicPartition> tps = new ArrayList<>();
                for (PartitionInfo info : c.partitionsFor(topic)) {
                    tps.add(new TopicPartition(topic, info.partition()));
                }
                c.assign(tps);
                c.seekToBeginning(tps);
            }
            long deadline = System.currentTimeMillis() + timeoutS * 1000L;
            int seen = 0;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    System.out.println(line(r));
                    seen++;
                }
            }
            System.out.flush();
            if (seen < count) {
                // What the consumer holds and where it stands, so that a shortfall can be told
                // apart from a broker that has nothing more.
                StringBuilder where = new StringBuilder();
                for (TopicPartition tp : c.assignment()) {
                    where.append(" ").append(tp).append(" at ").append(c.position(tp, Duration.ofSeconds(5)));
                }
                System.err.println("only " + seen + " of " + count + " records within " + timeoutS
                        + " s; assignment and positions:" + where + "; log ends: "
                        + c.endOffsets(c.assignment(), Duration.ofSeconds(5)));
                System.exit(1);
            }
            if (p.containsKey("group.id")) {
                c.commitSync();
            }
            if (metrics) {
                printMetrics(c.metrics());
            }
        }
    }

    /// The client-wide metrics (those tagged with nothing but client-id) on stderr, one
    /// `metric GROUP NAME VALUE` line each.
    static void printMetrics(java.util.Map<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> all) {
        for (var e : all.entrySet()) {
            var n = e.getKey();
            if (n.tags().keySet().stream().allMatch(k -> k.equals("client-id"))) {
                System.err.println("metric " + n.group() + " " + n.name() + " " + e.getValue().metricValue());
            }
        }
    }

    static void partition(int n) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            out.append(BuiltInPartitioner.partitionForKey(HEX.parseHex(line), n)).append('\n');
        }
        System.out.print(out);
    }

    static void codec() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] p = line.split(" ", -1);
            short version = Short.parseShort(p[1]);
            try {
                ApiMessageType type = ApiMessageType.fromApiKey(Short.parseShort(p[0]));
                ApiMessage m = p[2].equals("req") ? type.newRequest() : type.newResponse();
                ByteBuffer body = ByteBuffer.wrap(HEX.parseHex(p[3]));
                m.read(new ByteBufferAccessor(body), version);
                if (body.hasRemaining()) {
                    throw new IllegalStateException(body.remaining() + " byte(s) left unread");
                }
                // Sized and written through the Message interface, which every Kafka 4.x has
                // (MessageUtil's helpers changed between 4.0 and 4.4).
                ObjectSerializationCache cache = new ObjectSerializationCache();
                ByteBuffer back = ByteBuffer.allocate(m.size(cache, version));
                m.write(new ByteBufferAccessor(back), cache, version);
                byte[] bytes = back.array();
                out.append("ok ").append(HEX.formatHex(bytes)).append('\n');
            } catch (Exception e) {
                out.append("error ").append(e.toString().replace('\n', ' ')).append('\n');
            }
        }
        System.out.print(out);
    }

    static String partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> Integer.toString(tp.partition())).sorted().collect(Collectors.joining(","));
    }

    static void member(String bootstrap, String group, String topic, Properties p) throws Exception {
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("group.id", group);
        p.setProperty("enable.auto.commit", "false");
        p.putIfAbsent("auto.offset.reset", "earliest");
        AtomicBoolean stop = new AtomicBoolean();
        Thread reader = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String l;
                while ((l = in.readLine()) != null && !l.equals("stop")) {
                    // wait for stop
                }
            } catch (Exception e) {
                // stdin closed
            }
            stop.set(true);
        });
        reader.setDaemon(true);
        reader.start();
        try (KafkaConsumer<byte[], byte[]> c =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    c.commitSync();
                    System.out.println("revoked\t" + partitions(tps));
                    System.out.flush();
                }

                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    System.out.println("assigned\t" + partitions(tps));
                    System.out.flush();
                }

                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    System.out.println("lost\t" + partitions(tps));
                    System.out.flush();
                }
            });
            while (!stop.get()) {
                var records = c.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    System.out.println("record\t" + r.partition() + "\t" + r.offset() + "\t" + hex(r.value()));
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                }
                System.out.flush();
            }
        }
        System.out.println("closed");
        System.out.flush();
    }
}
