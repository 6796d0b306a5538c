// kafka-chaos's exactly-once processor through Kafka's own Java client: workloads/eos.py's twin, journaling in the
// same formats (producer-N.invoke.tsv / .complete.tsv / .progress, eos-NAME.tsv; history/eos.py), so the history
// cannot tell the clients apart but by the processor's name and its producer profile's `client`.
//
// One transaction per poll (max.poll.records = batch): begin, send each record's transform to the same partition of
// the output topic, flush, sendOffsetsToTransaction(offsets after the last read, the consumer's group metadata;
// KIP-447), commit. Abortable error: abort and seek back to the batch's first reads. Fatal (fenced, or an abort
// that fails): the outcome is unknown; a new producer under the same transactional.id, and a new consumer, which
// starts at the group's committed offsets. The wrapper (workloads/java_client.py) stops it by closing its stdin.
//
// Usage: java -cp CLASSPATH EosProcessor key=value ...
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
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class EosProcessor {
    static final String NULL = "\\N";
    static final AtomicBoolean STOP = new AtomicBoolean(false);

    final Map<String, String> a;
    final String name, input, output;
    final int batch;
    final double rate;
    final BufferedWriter invokes, completes, txns;
    final Path progress;
    long invoked = 0, ok = 0, fail = 0, info = 0, txn = 0;
    KafkaConsumer<String, String> consumer;
    KafkaProducer<String, String> producer;
    volatile boolean assigned = false;
    long rebalances = 0, batchMark = 0;          // rebalances served (in poll), and their count when a batch began
    ConsumerGroupMetadata batchMeta;             // the group metadata when the batch in hand began to be polled

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) { /* wait for the end of input */ }
            } catch (IOException e) { /* a closed stdin means stop as well */ }
            STOP.set(true);
        }, "stdin-watch");
        stdin.setDaemon(true);
        stdin.start();
        new EosProcessor(a).run();
    }

    EosProcessor(Map<String, String> a) throws IOException {
        this.a = a;
        name = a.get("name");
        input = a.get("input");
        output = a.get("output");
        batch = Integer.parseInt(a.get("batch"));
        rate = Double.parseDouble(a.getOrDefault("rate", "0"));
        Path j = Path.of(a.get("journal"));
        String stem = "producer-" + a.get("process");
        invokes = append(j.resolve(stem + ".invoke.tsv"));
        completes = append(j.resolve(stem + ".complete.tsv"));
        progress = j.resolve(stem + ".progress");
        txns = append(j.resolve("eos-" + name + ".tsv"));
    }

    static BufferedWriter append(Path p) throws IOException {
        return Files.newBufferedWriter(p, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    static long nowNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    // history/eos.py's payload(): "<p>-<o>-<crc32 of the value, 8 hex digits>"
    static String payload(int p, long o, String value) {
        CRC32 crc = new CRC32();
        crc.update(value.getBytes(StandardCharsets.UTF_8));
        return p + "-" + o + "-" + String.format("%08x", crc.getValue());
    }

    KafkaProducer<String, String> newProducer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        p.put("transactional.id", a.get("txn_id"));
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("transaction.timeout.ms", a.get("txn_timeout_ms"));
        KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        for (int attempt = 0; ; attempt++) {
            try {
                prod.initTransactions();
                return prod;
            } catch (TimeoutException e) {
                if (attempt >= 9) throw e;       // a fault may hold the coordinator away for a while
            }
        }
    }

    KafkaConsumer<String, String> newConsumer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        p.put("group.id", a.get("group"));
        p.put("enable.auto.commit", "false");
        p.put("isolation.level", "read_committed");
        p.put("auto.offset.reset", "earliest");
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        p.put("max.poll.records", String.valueOf(Math.max(1, batch / 2)));
        p.put("max.partition.fetch.bytes", "2048");    // a backlog of one partition must not starve the others
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
        c.subscribe(List.of(input), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> parts) { rebalances++; }
            public void onPartitionsAssigned(Collection<TopicPartition> parts) { assigned = true; rebalances++; }
            public void onPartitionsLost(Collection<TopicPartition> parts) { rebalances++; }
        });
        return c;
    }

    void run() throws Exception {
        producer = newProducer();
        consumer = newConsumer();
        long started = 0, nextFlush = nowNs();
        boolean ready = false;
        while (!STOP.get()) {
            long now = nowNs();
            long due = rate > 0 && ready ? (long) ((now - started) * rate / 1e9) - invoked + batch : batch;
            List<ConsumerRecord<String, String>> recs = due > 0 ? poll() : null;
            if (due <= 0) Thread.sleep(50);
            if (!ready && (assigned || now - nextFlush > 60_000_000_000L)) {
                Properties v = new Properties();
                try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
                    if (in != null) v.load(in);
                }
                System.out.println("ready kafka-clients " + v.getProperty("version", "unknown"));
                System.out.flush();
                ready = true;
                started = nowNs();
            }
            if (recs != null && !recs.isEmpty()) transaction(recs);
            if (nowNs() >= nextFlush) {
                flush();
                nextFlush = nowNs() + 250_000_000L;
            }
        }
        flush();
        try { consumer.close(Duration.ofSeconds(5)); } catch (KafkaException e) { /* a fault may be running */ }
        try { producer.close(Duration.ofSeconds(5)); } catch (KafkaException e) { /* likewise */ }
        flush();
    }

    // One batch, from every partition held when it can: the partitions of a first poll are paused for a second, so
    // the others (whose records may queue behind a backlog) get their turn and the transaction spans them.
    List<ConsumerRecord<String, String>> poll() {
        batchMark = rebalances;                 // a rebalance from here on: the batch may hold another's partition
        batchMeta = consumer.groupMetadata();   // the generation to commit with (KIP-447): a later one fences it
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        consumer.poll(Duration.ofMillis(100)).forEach(out::add);
        if (out.isEmpty()) return out;
        java.util.Set<TopicPartition> got = new java.util.HashSet<>();
        for (ConsumerRecord<String, String> r : out) got.add(new TopicPartition(r.topic(), r.partition()));
        java.util.Set<TopicPartition> held = consumer.assignment();
        if (got.containsAll(held)) return out;
        got.retainAll(held);
        consumer.pause(got);
        try {
            consumer.poll(Duration.ofMillis(100)).forEach(out::add);
        } finally {
            consumer.resume(got);
        }
        return out;
    }

    void flush() throws IOException {
        invokes.flush();
        completes.flush();
        txns.flush();
        Path tmp = Path.of(progress + ".tmp");
        Files.writeString(tmp, invoked + " " + ok + " " + fail + " " + info + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, progress, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    void transaction(List<ConsumerRecord<String, String>> recs) throws IOException {
        List<String> values = new ArrayList<>();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        StringBuilder reads = new StringBuilder();
        Map<TopicPartition, Long> first = new LinkedHashMap<>();
        Map<TopicPartition, OffsetAndMetadata> commits = new LinkedHashMap<>();
        for (ConsumerRecord<String, String> r : recs) {
            TopicPartition tp = new TopicPartition(r.topic(), r.partition());
            first.putIfAbsent(tp, r.offset());
            commits.put(tp, new OffsetAndMetadata(r.offset() + 1));
            reads.append(reads.length() > 0 ? "," : "").append(r.partition()).append(':').append(r.offset());
        }
        long tBegin = nowNs(), tCommit = -1;
        String outcome = "committed", error = null;
        try {
            producer.beginTransaction();
            for (ConsumerRecord<String, String> r : recs) {
                String v = payload(r.partition(), r.offset(), r.value()) + "@" + name + "." + txn;
                values.add(v);
                invokes.write(v + "\t" + r.partition() + "\t" + r.partition() + "\t" + nowNs() + "\n");
                invoked++;
                sent.add(producer.send(new ProducerRecord<>(output, r.partition(), String.valueOf(r.partition()), v)));
            }
            invokes.flush();              // on disk before it can commit: a kill after the commit leaves no phantom
            producer.flush();
            if (rebalances != batchMark) {       // polled across a rebalance: committing could duplicate (eos.py)
                producer.abortTransaction();
                outcome = "aborted";
                error = "_REBALANCED";
            } else {
                producer.sendOffsetsToTransaction(commits, batchMeta);
                tCommit = nowNs();
                commit();
            }
        } catch (ProducerFencedException e) {
            outcome = "unknown";
            error = e.getClass().getSimpleName();
        } catch (KafkaException e) {
            error = e.getClass().getSimpleName();
            try {
                producer.abortTransaction();
                outcome = "aborted";
            } catch (KafkaException e2) {
                outcome = "unknown";
                error = e2.getClass().getSimpleName();
            }
        }
        if (tCommit < 0) tCommit = nowNs();
        settle(values, sent, outcome, error, reads.toString(), commits, tBegin, tCommit);
        if (outcome.equals("aborted")) {
            for (Map.Entry<TopicPartition, Long> e : first.entrySet()) {
                try { consumer.seek(e.getKey(), e.getValue()); } catch (IllegalStateException x) { /* revoked */ }
            }
        } else if (outcome.equals("unknown")) {           // it may have committed: the group's offsets decide
            try { producer.close(Duration.ofSeconds(5)); } catch (KafkaException x) { /* fenced */ }
            producer = newProducer();
            try { consumer.close(Duration.ofSeconds(5)); } catch (KafkaException x) { /* a fault may be running */ }
            consumer = newConsumer();
        }
        txn++;
    }

    void commit() {
        for (int attempt = 0; ; attempt++) {
            try {
                producer.commitTransaction();
                return;
            } catch (TimeoutException e) {                // retriable: "retry call to resume"
                if (attempt >= 3) throw e;
            }
        }
    }

    void settle(List<String> values, List<Future<RecordMetadata>> sent, String outcome, String error, String reads,
                Map<TopicPartition, OffsetAndMetadata> commits, long tBegin, long tCommit) throws IOException {
        long t = nowNs();
        StringBuilder writes = new StringBuilder();
        for (int i = 0; i < values.size(); i++) {
            String v = values.get(i);
            int partition = Integer.parseInt(v.substring(0, v.indexOf('-')));
            RecordMetadata md = null;
            String err = error;
            try {
                if (sent.get(i).isDone()) md = sent.get(i).get();
            } catch (Exception e) {
                err = (e.getCause() != null ? e.getCause() : e).getClass().getSimpleName();
            }
            writes.append(i > 0 ? "," : "").append(partition).append(':');
            if (outcome.equals("committed") && md != null && md.hasOffset()) {
                completes.write(v + "\tok\t" + NULL + "\t" + partition + "\t" + md.offset() + "\t" + t + "\n");
                writes.append(md.offset());
                ok++;
            } else if (outcome.equals("aborted")) {
                completes.write(v + "\tfail\t_TXN_ABORTED\t" + partition + "\t" + NULL + "\t" + t + "\n");
                fail++;
            } else {
                completes.write(v + "\tinfo\t" + (err == null ? "UNKNOWN" : err) + "\t" + partition + "\t" + NULL
                                + "\t" + t + "\n");
                info++;
            }
        }
        StringBuilder offs = new StringBuilder();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : commits.entrySet()) {
            offs.append(offs.length() > 0 ? "," : "").append(e.getKey().partition()).append(':')
                .append(e.getValue().offset());
        }
        txns.write(txn + "\t" + outcome + "\t" + (error == null ? NULL : error) + "\t" + reads + "\t" + writes + "\t"
                   + offs + "\t" + tBegin + "\t" + tCommit + "\t" + t + "\n");
    }
}
