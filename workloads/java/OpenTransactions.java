// The open transactions the brokers know of on some partitions, through Kafka's own Admin client: DescribeProducers
// (KIP-664; the API from 2.8, Admin.describeProducers from 3.0), asked of each partition's leader. One line per
// producer with a transaction open on the partition (a currentTransactionStartOffset):
//   partition <TAB> producerId <TAB> producerEpoch <TAB> currentTransactionStartOffset <TAB> lastTimestamp
// and a line "error <TAB> partition <TAB> message" for a partition the brokers did not describe. workloads/drain.py
// runs it when the final drain stops at a last stable offset below the high watermark (checkers/lso.py names the
// producer). Compiled with the other Java sources, only against kafka-clients 3.0 or newer (workloads/java_client.py).
//
// Usage: java -cp CLASSPATH OpenTransactions BOOTSTRAP TOPIC PARTITION...
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.common.TopicPartition;

public final class OpenTransactions {
    private OpenTransactions() {
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        List<TopicPartition> partitions = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            partitions.add(new TopicPartition(args[1], Integer.parseInt(args[i])));
        }
        try (Admin admin = Admin.create(props)) {
            DescribeProducersResult result = admin.describeProducers(partitions);
            for (TopicPartition tp : partitions) {
                try {
                    for (ProducerState s : result.partitionResult(tp).get(20, TimeUnit.SECONDS).activeProducers()) {
                        if (s.currentTransactionStartOffset().isPresent()) {
                            System.out.println(tp.partition() + "\t" + s.producerId() + "\t" + s.producerEpoch() + "\t"
                                    + s.currentTransactionStartOffset().getAsLong() + "\t" + s.lastTimestamp());
                        }
                    }
                } catch (Exception e) {
                    System.out.println("error\t" + tp.partition() + "\t" + e.getClass().getSimpleName() + ": "
                            + String.valueOf(e.getMessage()).replace('\t', ' ').replace('\n', ' '));
                }
            }
        }
    }
}
