// kafka-chaos's workload through Kafka's own Java client (kafka-clients of the release under test).
//
// One process is one producer or one live consumer. It writes the same journals as the Python workers
// (history/journal.py: producer-N.invoke.tsv / .complete.tsv / .progress, reads-NAME.tsv), so the history is
// built from them exactly as from librdkafka's. The Python wrapper (workloads/java_client.py) writes the sidecars,
// starts this program, waits for its "ready" line and ends it by closing its stdin: end of input means stop, so
// a wrapper that dies takes this process with it.
//
// Usage: java -cp CLASSPATH KafkaChaosClient producer|consumer key=value ...
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class KafkaChaosClient {
    static final String NULL = "\\N";
    static final AtomicBoolean STOP = new AtomicBoolean(false);

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            a.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        watchStdin();
        if (args[0].equals("producer")) {
            new Producer(a).run();
        } else if (args[0].equals("consumer")) {
            new Consumer(a).run();
        } else {
            throw new IllegalArgumentException("first argument: producer or consumer, not " + args[0]);
        }
    }

    /** STOP at "stop" or the end of stdin (a wrapper that dies takes this process with it). */
    static void watchStdin() {
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) { /* wait */ }
            } catch (IOException e) { /* a closed stdin means stop as well */ }
            STOP.set(true);
        }, "stdin-watch");
        stdin.setDaemon(true);
        stdin.start();
    }

    static long nowNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    // history/journal.py's esc(): NULL for null, backslash escapes for backslash, tab, newline, carriage return
    static String esc(String s) {
        if (s == null) return NULL;
        if (s.indexOf('\\') < 0 && s.indexOf('\t') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) return s;
        return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r");
    }

    static BufferedWriter append(Path p) throws IOException {
        return Files.newBufferedWriter(p, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    static void writeAtomic(Path p, String text) throws IOException {
        Path tmp = Path.of(p + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    // the client's own version, from the properties file every kafka-clients jar carries
    static void ready() throws IOException {
        Properties v = new Properties();
        try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) v.load(in);
        }
        System.out.println("ready kafka-clients " + v.getProperty("version", "unknown"));
        System.out.flush();
    }

    /** One producer: round-robin partitions, values "<process>-<seq>", keys naming the partition. */
    static final class Producer {
        final Map<String, String> a;
        final String topic;
        final int partitions;
        final double rate;
        final long tickNs;
        final boolean singleAttempt;
        final BufferedWriter invokes;
        final BufferedWriter completes;
        final Path progress;
        final BufferedWriter stats;               // producer-N.stats.jsonl: the client's own metrics, once a second
        long nextStatsNs = 0;
        final ConcurrentLinkedQueue<String> done = new ConcurrentLinkedQueue<>();
        final AtomicLong ok = new AtomicLong(), fail = new AtomicLong(), info = new AtomicLong();
        final Thread main = Thread.currentThread();
        final String prefix;
        long seq = 0;
        KafkaProducer<String, String> producer;

        Producer(Map<String, String> a) throws IOException, InterruptedException {
            this.a = a;
            topic = a.get("topic");
            partitions = Integer.parseInt(a.get("partitions"));
            rate = Double.parseDouble(a.getOrDefault("rate", "0"));
            tickNs = (long) (Double.parseDouble(a.getOrDefault("flush_interval_s", "0.25")) * 1e9);
            singleAttempt = "0".equals(a.get("retries")) && !Boolean.parseBoolean(a.get("idempotent"));
            Path dir = Path.of(a.get("journal"));
            String stem = "producer-" + a.get("process");
            invokes = append(dir.resolve(stem + ".invoke.tsv"));
            completes = append(dir.resolve(stem + ".complete.tsv"));
            progress = dir.resolve(stem + ".progress");
            stats = append(dir.resolve(stem + ".stats.jsonl"));
            prefix = a.get("process") + "-";
            producer = newProducer();
            awaitMetadata();
        }

        /** The topic's metadata before the first send, so that a cold start is not journaled as failed sends. */
        void awaitMetadata() throws InterruptedException {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (true) {
                try {
                    producer.partitionsFor(topic);
                    return;
                } catch (RuntimeException e) {
                    if (System.nanoTime() > deadline) throw e;
                    Thread.sleep(200);
                }
            }
        }

        KafkaProducer<String, String> newProducer() {
            Properties p = new Properties();
            p.put("bootstrap.servers", a.get("bootstrap"));
            p.put("client.id", "kafka-chaos-" + a.get("name"));
            p.put("acks", a.get("acks"));
            p.put("enable.idempotence", a.get("idempotent"));
            p.put("max.in.flight.requests.per.connection", a.get("max_in_flight"));
            p.put("delivery.timeout.ms", a.get("delivery_timeout_ms"));
            p.put("request.timeout.ms", a.get("request_timeout_ms"));
            p.put("linger.ms", a.get("linger_ms"));
            if (a.containsKey("retries")) p.put("retries", a.get("retries"));
            // send() blocks for metadata or buffer space at most this long; the send loop must keep its pace
            p.put("max.block.ms", a.getOrDefault("max_block_ms", "1000"));
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            return new KafkaProducer<>(p);
        }

        /** ok, fail (certainly never in a log) or info (unknown), as workloads/outcomes.py means them. */
        String classify(Exception e, boolean enqueued) {
            // A callback run inside send() on our own thread: the record never reached the accumulator.
            if (!enqueued) return "fail";
            if (e instanceof RecordTooLargeException || e instanceof RecordBatchTooLargeException
                    || e instanceof InvalidTopicException || e instanceof TopicAuthorizationException
                    || e instanceof ClusterAuthorizationException || e instanceof SerializationException) {
                return "fail";
            }
            if (singleAttempt && e instanceof NotEnoughReplicasException) return "fail";
            return "info";
        }

        Callback callback(String value) {
            return (md, e) -> {
                long t = nowNs();
                if (e == null) {
                    done.add(value + "\tok\t" + NULL + "\t" + md.partition() + "\t"
                            + (md.hasOffset() ? Long.toString(md.offset()) : NULL) + "\t" + t + "\n");
                    ok.incrementAndGet();
                    return;
                }
                String outcome = classify(e, Thread.currentThread() != main || !inSend);
                int partition = md == null ? -1 : md.partition();
                done.add(value + "\t" + outcome + "\t" + esc(e.getClass().getSimpleName()) + "\t"
                        + (partition < 0 ? NULL : Integer.toString(partition)) + "\t" + NULL + "\t" + t + "\n");
                (outcome.equals("fail") ? fail : info).incrementAndGet();
            };
        }

        volatile boolean inSend = false;

        void checkpoint() throws IOException {
            invokes.flush();                  // invokes first: a completion is never on disk without its invoke
            String line;
            while ((line = done.poll()) != null) completes.write(line);
            completes.flush();
            writeAtomic(progress, seq + " " + ok.get() + " " + fail.get() + " " + info.get() + "\n");
            long now = nowNs();
            if (now >= nextStatsNs) {
                nextStatsNs = now + 1_000_000_000L;
                try {
                    sampleStats(now);
                } catch (RuntimeException e) {
                    // a closing client's metrics: no rows this second
                }
            }
        }

        static String num(Object v) {
            return v instanceof Number n && Double.isFinite(n.doubleValue()) ? Long.toString(Math.round(n.doubleValue()))
                    : "null";
        }

        /** history/client_stats.parquet's rows (docs/history.md): producer-metrics' requests-in-flight, metadata-age
         *  and buffer-available-bytes; each node's request-latency-avg; each partition's leader as the client's
         *  cached metadata has it. The Java client has no per-broker connection state or in-flight count. */
        void sampleStats(long t) throws IOException {
            Double inFlight = null, metadataAgeS = null, bufferBytes = null;
            Map<Integer, Double> latencyMs = new HashMap<>();
            for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
                MetricName m = e.getKey();
                Object v = e.getValue().metricValue();
                if (!(v instanceof Double d)) continue;
                if (m.group().equals("producer-metrics")) {
                    switch (m.name()) {
                        case "requests-in-flight" -> inFlight = d;
                        case "metadata-age" -> metadataAgeS = d;
                        case "buffer-available-bytes" -> bufferBytes = d;
                        default -> { }
                    }
                } else if (m.group().equals("producer-node-metrics") && m.name().equals("request-latency-avg")) {
                    String node = m.tags().getOrDefault("node-id", "");
                    if (node.startsWith("node-")) {
                        try {
                            int id = Integer.parseInt(node.substring(5));
                            if (id >= 0) latencyMs.put(id, d);
                        } catch (NumberFormatException ignored) { }
                    }
                }
            }
            StringBuilder out = new StringBuilder();
            out.append("{\"t_ns\":").append(t).append(",\"scope\":\"client\",\"waitresp_cnt\":").append(num(inFlight))
                    .append(",\"metadata_age_ms\":").append(num(metadataAgeS == null ? null : metadataAgeS * 1000))
                    .append(",\"buffer_available_bytes\":").append(num(bufferBytes)).append("}\n");
            for (Map.Entry<Integer, Double> e : latencyMs.entrySet()) {
                out.append("{\"t_ns\":").append(t).append(",\"scope\":\"broker\",\"broker\":").append(e.getKey())
                        .append(",\"rtt_avg_us\":").append(num(e.getValue() * 1000)).append("}\n");
            }
            try {
                for (PartitionInfo p : producer.partitionsFor(topic)) {
                    Node l = p.leader();
                    out.append("{\"t_ns\":").append(t).append(",\"scope\":\"partition\",\"partition\":")
                            .append(p.partition()).append(",\"leader\":")
                            .append(l == null || l.id() < 0 ? "null" : Integer.toString(l.id())).append("}\n");
                }
            } catch (RuntimeException e) {
                // no metadata for the topic within max.block.ms: no partition rows this second
            }
            stats.write(out.toString());
            stats.flush();
        }

        void send(String value, String key, int partition) throws IOException {
            long t = nowNs();
            invokes.write(value + "\t" + key + "\t" + partition + "\t" + t + "\n");
            inSend = true;
            try {
                producer.send(new ProducerRecord<>(topic, partition, key, value), callback(value));
            } catch (RuntimeException e) {
                // thrown, not passed to the callback: never enqueued (e.g. a fatal state). A fresh client then.
                done.add(value + "\tfail\t" + esc(e.getClass().getSimpleName()) + "\t" + partition + "\t" + NULL
                        + "\t" + nowNs() + "\n");
                fail.incrementAndGet();
                System.err.println("send threw " + e + ": replacing the producer");
                KafkaProducer<String, String> old = producer;
                old.close(Duration.ofSeconds(5));
                producer = newProducer();
            } finally {
                inSend = false;
            }
        }

        void run() throws Exception {
            ready();
            if (a.containsKey("go")) {          // side by side: the first send waits until every worker is ready
                Path go = Path.of(a.get("go"));
                while (!Files.exists(go) && !STOP.get()) Thread.sleep(20);
            }
            long start = nowNs(), nextTick = start;
            while (true) {
                long now = nowNs();
                if (now >= nextTick) {
                    checkpoint();
                    if (STOP.get()) break;
                    nextTick = now + tickNs;
                }
                int n;
                if (rate <= 0) {
                    n = seq - (ok.get() + fail.get() + info.get()) < 50_000 ? 256 : 0;
                } else {
                    long due = (long) ((now - start) * rate / 1e9) - seq;
                    if (due > rate) start = now - (long) (seq / rate * 1e9);   // fell behind a second: no burst
                    n = (int) Math.max(0, Math.min(256, due));
                }
                for (int i = 0; i < n; i++) {
                    int partition = (int) (seq % partitions);
                    send(prefix + seq, Integer.toString(partition), partition);
                    seq++;
                }
                if (n == 0) Thread.sleep(rate > 0 ? Math.max(1, Math.min((long) (1000 / rate), tickNs / 1_000_000)) : 5);
            }
            // close() waits for every outstanding send up to the timeout, then fails the rest (callbacks: info)
            long timeoutMs = Long.parseLong(a.get("stop_timeout_ms"));
            Thread closer = new Thread(() -> producer.close(Duration.ofMillis(timeoutMs)), "closer");
            closer.start();
            while (closer.isAlive()) {
                closer.join(tickNs / 1_000_000);
                checkpoint();
            }
            checkpoint();
            invokes.close();
            completes.close();
            stats.close();
        }
    }

    /** One live consumer in assign mode: every partition from the beginning, read_committed, no commits. */
    static final class Consumer {
        final Map<String, String> a;

        Consumer(Map<String, String> a) {
            this.a = a;
        }

        void run() throws Exception {
            Properties p = new Properties();
            p.put("bootstrap.servers", a.get("bootstrap"));
            p.put("group.id", a.get("group"));
            p.put("client.id", "kafka-chaos-" + a.get("name"));
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("isolation.level", "read_committed");
            p.put("key.deserializer", StringDeserializer.class.getName());
            p.put("value.deserializer", StringDeserializer.class.getName());
            String topic = a.get("topic");
            int partitions = Integer.parseInt(a.get("partitions"));
            long tickNs = (long) (Double.parseDouble(a.getOrDefault("flush_interval_s", "0.25")) * 1e9);
            Path dir = Path.of(a.get("journal"));
            Path progress = dir.resolve("reads-" + a.get("name") + ".count");
            long seq = 0;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
                 BufferedWriter out = append(dir.resolve("reads-" + a.get("name") + ".tsv"))) {
                List<TopicPartition> tps = new ArrayList<>();
                for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
                consumer.assign(tps);
                consumer.seekToBeginning(tps);
                ready();
                long nextTick = nowNs() + tickNs;
                while (true) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    long t = nowNs();
                    for (ConsumerRecord<String, String> r : records) {
                        out.write(seq + "\t" + r.partition() + "\t" + r.offset() + "\t" + esc(r.key()) + "\t"
                                + esc(r.value() == null ? "" : r.value()) + "\t" + t + "\n");
                        seq++;
                    }
                    if (t >= nextTick) {
                        out.flush();
                        writeAtomic(progress, seq + "\n");
                        if (STOP.get()) break;
                        nextTick = t + tickNs;
                    }
                }
                out.flush();
                writeAtomic(progress, seq + "\n");
            }
        }
    }
}
