// A live consumer in a consumer group (subscribe mode) through Kafka's own Java client: workloads/group_consumer.py's
// twin, journaling in the same formats (reads-NAME.tsv; group-NAME.tsv: event, partition, offset, error, t_ns with
// events assigned (with the group's committed offset), revoked and commit), so the group checks judge both clients
// alike (docs/history.md, "history/group.parquet").
//
// Commits: `manual` commits synchronously, after each journal flush, the next offset of every record journaled (and
// on revocation), as librdkafka's manual mode; `auto` is the client's own auto commit (enable.auto.commit, every
// auto.commit.interval.ms, of what poll() returned), journaled through a ConsumerInterceptor's onCommit, which the
// client calls for every successful commit, auto commits included (ConsumerCoordinator; a failed auto commit is
// only logged by the client, so it is not journaled: librdkafka's on_commit also reports failures).
// The member leaves (close) and joins again every rejoin_s seconds, the first time after (1 + index) half intervals.
// Ready (the line "ready ...") at its first assignment, or after ready_timeout_s without one.
//
// Usage: java -cp CLASSPATH JavaGroupConsumer key=value ...
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class JavaGroupConsumer {
    static BufferedWriter group;                 // the interceptor's way to the journal (one member per JVM)

    private JavaGroupConsumer() {
    }

    static synchronized void event(String event, int partition, Long offset, String error) {
        try {
            group.write(event + "\t" + partition + "\t" + (offset == null || offset < 0 ? KafkaChaosClient.NULL
                    : Long.toString(offset)) + "\t" + (error == null ? KafkaChaosClient.NULL
                    : KafkaChaosClient.esc(error)) + "\t" + KafkaChaosClient.nowNs() + "\n");
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    static synchronized void flushGroup() throws IOException {
        group.flush();
    }

    /** Journals every successful commit, the auto commits included. */
    public static final class CommitJournal implements ConsumerInterceptor<String, String> {
        @Override
        public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
            return records;
        }

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                event("commit", e.getKey().partition(), e.getValue().offset(), null);
            }
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        KafkaChaosClient.watchStdin();
        new Member(a).run();
    }

    static final class Member implements ConsumerRebalanceListener {
        final Map<String, String> a;
        final boolean manual;
        final Map<Integer, Long> pending = new HashMap<>();   // manual: partition -> next offset journaled
        final BufferedWriter reads;
        final Path progress;
        KafkaConsumer<String, String> consumer;
        boolean assignedOnce = false;
        long seq = 0;

        Member(Map<String, String> a) throws IOException {
            this.a = a;
            manual = "manual".equals(a.get("commit"));
            Path dir = Path.of(a.get("journal"));
            reads = KafkaChaosClient.append(dir.resolve("reads-" + a.get("name") + ".tsv"));
            group = KafkaChaosClient.append(dir.resolve("group-" + a.get("name") + ".tsv"));
            progress = dir.resolve("reads-" + a.get("name") + ".count");
        }

        void join() {
            Properties p = new Properties();
            p.put("bootstrap.servers", a.get("bootstrap"));
            p.put("group.id", a.get("group"));
            p.put("client.id", "kafka-chaos-" + a.get("name"));
            p.put("enable.auto.commit", Boolean.toString(!manual));
            p.put("auto.commit.interval.ms", a.getOrDefault("auto_commit_interval_ms", "1000"));
            p.put("auto.offset.reset", "earliest");
            p.put("isolation.level", "read_committed");
            p.put("session.timeout.ms", "10000");
            p.put("heartbeat.interval.ms", "1000");
            p.put("interceptor.classes", CommitJournal.class.getName());
            p.put("key.deserializer", StringDeserializer.class.getName());
            p.put("value.deserializer", StringDeserializer.class.getName());
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(List.of(a.get("topic")), this);
        }

        void leave() throws IOException {
            if (consumer == null) return;
            try {
                commit();
                consumer.close(Duration.ofSeconds(10));   // auto: close commits what poll returned (onCommit)
            } catch (RuntimeException e) {
                System.err.println("close: " + e);      // a fault may be running: the group times the member out
            }
            consumer = null;
            flushGroup();
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assignedOnce = true;
            Map<TopicPartition, OffsetAndMetadata> committed = Map.of();
            String error = null;
            try {
                if (!partitions.isEmpty()) committed = consumer.committed(new java.util.HashSet<>(partitions),
                        Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                error = e.getClass().getSimpleName();
            }
            for (TopicPartition tp : partitions) {
                OffsetAndMetadata o = committed.get(tp);
                event("assigned", tp.partition(), o == null ? null : o.offset(), error);
            }
            try {
                flushGroup();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            try {
                commit();
                for (TopicPartition tp : partitions) {
                    pending.remove(tp.partition());
                    event("revoked", tp.partition(), null, null);
                }
                flushGroup();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }

        /** Manual mode: commit, synchronously, the next offset of every record journaled (flushed first). A
         *  successful commit is journaled by the interceptor; a failed one here, with its error. */
        void commit() throws IOException {
            if (!manual || pending.isEmpty() || consumer == null) return;
            reads.flush();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (Map.Entry<Integer, Long> e : pending.entrySet()) {
                offsets.put(new TopicPartition(a.get("topic"), e.getKey()), new OffsetAndMetadata(e.getValue()));
            }
            pending.clear();
            try {
                consumer.commitSync(offsets, Duration.ofSeconds(10));
            } catch (RuntimeException e) {
                for (Map.Entry<TopicPartition, OffsetAndMetadata> o : offsets.entrySet()) {
                    event("commit", o.getKey().partition(), o.getValue().offset(), e.getClass().getSimpleName());
                }
            }
        }

        void run() throws Exception {
            long tickNs = (long) (Double.parseDouble(a.getOrDefault("flush_interval_s", "0.25")) * 1e9);
            double rejoinS = Double.parseDouble(a.getOrDefault("rejoin_s", "0"));
            long rejoinNs = (long) (rejoinS * 1e9);
            int index = Integer.parseInt(a.getOrDefault("index", "0"));
            long now = KafkaChaosClient.nowNs();
            long nextTick = now + tickNs;
            long nextRejoin = rejoinNs > 0 ? now + (1 + index) * rejoinNs / 2 : Long.MAX_VALUE;
            long readyBy = now + (long) (Double.parseDouble(a.getOrDefault("ready_timeout_s", "45")) * 1e9);
            boolean ready = false;
            join();
            try {
                while (true) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    long t = KafkaChaosClient.nowNs();
                    if (!ready && (assignedOnce || t >= readyBy)) {
                        KafkaChaosClient.ready();
                        ready = true;
                    }
                    for (ConsumerRecord<String, String> r : records) {
                        reads.write(seq + "\t" + r.partition() + "\t" + r.offset() + "\t" + KafkaChaosClient.esc(r.key())
                                + "\t" + KafkaChaosClient.esc(r.value() == null ? "" : r.value()) + "\t" + t + "\n");
                        seq++;
                        pending.put(r.partition(), r.offset() + 1);
                    }
                    if (t >= nextTick) {
                        reads.flush();
                        commit();
                        flushGroup();
                        KafkaChaosClient.writeAtomic(progress, seq + "\n");
                        if (KafkaChaosClient.STOP.get()) break;
                        nextTick = t + tickNs;
                    }
                    if (t >= nextRejoin) {
                        leave();
                        join();
                        nextRejoin = t + rejoinNs;
                    }
                }
            } finally {
                leave();
                reads.flush();
                reads.close();
                flushGroup();
                group.close();
                KafkaChaosClient.writeAtomic(progress, seq + "\n");
            }
        }
    }
}
