// The transactional producer (`--transactions`) through Kafka's own Java client: workloads/txn_producer.py's twin,
// journaling in the same formats (producer-N.invoke.tsv / .complete.tsv / .progress / .txn.tsv; history/journal.py).
//
// Transactions of max(partitions, txn_size) consecutive values "<process>-<seq>", round robin over the partitions,
// every abort_every-th aborted on purpose; paced at `rate` values a second. A send's completion waits for its
// transaction's end: committed -> ok with the offset; aborted (on purpose, or after an abortable error: the
// client's KafkaException other than the fatal ones) -> fail `_TXN_ABORTED`; a fatal error (ProducerFenced,
// OutOfOrderSequence, InvalidProducerEpoch, an abort that fails) -> the outcome is unknown (info) and a new producer
// under a new transactional.id, as librdkafka's worker does. Ready once initTransactions answered.
//
// Usage: java -cp CLASSPATH JavaTxnProducer key=value ...
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringSerializer;

public final class JavaTxnProducer {
    static final String NULL = KafkaChaosClient.NULL;
    static final String TXN_ABORTED = "_TXN_ABORTED";
    static final Duration TXN_TIMEOUT = Duration.ofSeconds(30);

    private JavaTxnProducer() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        KafkaChaosClient.watchStdin();
        new Worker(a).run();
    }

    static final class Worker {
        final Map<String, String> a;
        final String topic;
        final int partitions, size, abortEvery, process;
        final double rate;
        final BufferedWriter invokes, completes, txns;
        final Path progress;
        long seq = 0, ok = 0, fail = 0, info = 0, txnNo = 0, incarnation = 0;
        KafkaProducer<String, String> producer;

        Worker(Map<String, String> a) throws IOException {
            this.a = a;
            topic = a.get("topic");
            partitions = Integer.parseInt(a.get("partitions"));
            size = Math.max(partitions, Integer.parseInt(a.get("txn_size")));
            abortEvery = Math.max(1, Integer.parseInt(a.get("abort_every")));
            process = Integer.parseInt(a.get("process"));
            rate = Double.parseDouble(a.getOrDefault("rate", "0"));
            Path dir = Path.of(a.get("journal"));
            String stem = "producer-" + process;
            invokes = KafkaChaosClient.append(dir.resolve(stem + ".invoke.tsv"));
            completes = KafkaChaosClient.append(dir.resolve(stem + ".complete.tsv"));
            txns = KafkaChaosClient.append(dir.resolve(stem + ".txn.tsv"));
            progress = dir.resolve(stem + ".progress");
        }

        KafkaProducer<String, String> newProducer() {
            Properties p = new Properties();
            p.put("bootstrap.servers", a.get("bootstrap"));
            p.put("client.id", "kafka-chaos-" + a.get("name"));
            p.put("transactional.id", "kafka-chaos-" + ProcessHandle.current().pid() + "-" + process + "-"
                    + incarnation++);
            p.put("acks", "all");
            p.put("enable.idempotence", "true");
            p.put("max.in.flight.requests.per.connection", a.getOrDefault("max_in_flight", "5"));
            p.put("delivery.timeout.ms", a.get("delivery_timeout_ms"));
            p.put("request.timeout.ms", a.get("request_timeout_ms"));
            p.put("linger.ms", a.get("linger_ms"));
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            KafkaProducer<String, String> k = new KafkaProducer<>(p);
            while (true) {               // the first transactional producer of a cluster waits for __transaction_state
                try {
                    k.initTransactions();
                    return k;
                } catch (TimeoutException e) {
                    System.err.println("initTransactions: " + e + "; asking again");
                    if (KafkaChaosClient.STOP.get()) return k;
                }
            }
        }

        static boolean fatal(KafkaException e) {
            return e instanceof ProducerFencedException || e instanceof OutOfOrderSequenceException
                    || e instanceof InvalidProducerEpochException || e instanceof AuthorizationException
                    || e instanceof UnsupportedVersionException;
        }

        void settle(String outcome, String error, List<String> values, List<Future<RecordMetadata>> sent) throws IOException {
            long t = KafkaChaosClient.nowNs();
            for (int i = 0; i < values.size(); i++) {
                int partition = (int) ((seq + i) % partitions);
                String v = values.get(i);
                if (outcome.equals("committed")) {
                    RecordMetadata md = sent.get(i).isDone() ? get(sent.get(i)) : null;
                    if (md != null) {
                        completes.write(v + "\tok\t" + NULL + "\t" + md.partition() + "\t" + md.offset() + "\t" + t + "\n");
                        ok++;
                        continue;
                    }
                    completes.write(v + "\tinfo\tUNKNOWN\t" + partition + "\t" + NULL + "\t" + t + "\n");
                    info++;
                } else if (outcome.equals("aborted")) {
                    completes.write(v + "\tfail\t" + TXN_ABORTED + "\t" + partition + "\t" + NULL + "\t" + t + "\n");
                    fail++;
                } else {
                    completes.write(v + "\tinfo\t" + KafkaChaosClient.esc(error) + "\t" + partition + "\t" + NULL + "\t"
                            + t + "\n");
                    info++;
                }
            }
            txns.write(txnNo + "\t" + seq + "\t" + values.size() + "\t" + outcome + "\t"
                    + (error == null ? NULL : KafkaChaosClient.esc(error)) + "\t" + t + "\n");
            txnNo++;
        }

        static RecordMetadata get(Future<RecordMetadata> f) {
            try {
                return f.get();
            } catch (Exception e) {
                return null;
            }
        }

        void transaction(boolean abort) throws IOException {
            List<String> values = new ArrayList<>();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try {
                producer.beginTransaction();
                for (long s = seq; s < seq + size; s++) {
                    int partition = (int) (s % partitions);
                    String v = process + "-" + s;
                    values.add(v);
                    invokes.write(v + "\t" + partition + "\t" + partition + "\t" + KafkaChaosClient.nowNs() + "\n");
                    sent.add(producer.send(new ProducerRecord<>(topic, partition, Integer.toString(partition), v)));
                }
                invokes.flush();            // on disk before it can commit: a kill after the commit leaves no phantom
                producer.flush();
                if (abort) {
                    producer.abortTransaction();
                    settle("aborted", null, values, sent);
                } else {
                    producer.commitTransaction();
                    settle("committed", null, values, sent);
                }
            } catch (KafkaException e) {
                String name = e.getClass().getSimpleName();
                if (!fatal(e)) {
                    try {
                        producer.abortTransaction();
                        settle("aborted", name, values, sent);
                        return;
                    } catch (KafkaException e2) {
                        name = e2.getClass().getSimpleName();
                    }
                }
                System.err.println("transaction " + txnNo + " ended unknown (" + name + "): a new producer");
                settle("unknown", name, values, sent);
                try {
                    producer.close(Duration.ofSeconds(5));
                } catch (RuntimeException ignored) {
                    // a fenced producer may refuse anything
                }
                producer = newProducer();
            } finally {
                seq += values.size();
            }
        }

        void checkpoint() throws IOException {
            invokes.flush();
            completes.flush();
            txns.flush();
            KafkaChaosClient.writeAtomic(progress, seq + " " + ok + " " + fail + " " + info + "\n");
        }

        void run() throws Exception {
            producer = newProducer();
            KafkaChaosClient.ready();
            long tickNs = (long) (Double.parseDouble(a.getOrDefault("flush_interval_s", "0.25")) * 1e9);
            long start = KafkaChaosClient.nowNs(), nextTick = start;
            double perS = rate > 0 ? rate : 1000;
            while (true) {
                long now = KafkaChaosClient.nowNs();
                if (now >= nextTick) {
                    checkpoint();
                    if (KafkaChaosClient.STOP.get()) break;
                    nextTick = now + tickNs;
                }
                long due = (long) ((now - start) * perS / 1e9) - seq;
                if (due < size) {
                    Thread.sleep(Math.min(50, tickNs / 1_000_000));
                    continue;
                }
                transaction(txnNo % abortEvery == abortEvery - 1);
            }
            try {
                producer.close(TXN_TIMEOUT);
            } catch (RuntimeException ignored) {
                // closing under a fault
            }
            checkpoint();
            invokes.close();
            completes.close();
            txns.close();
        }
    }
}
