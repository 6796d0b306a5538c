// Moves one partition's replicas with Kafka's own Admin client (alterPartitionReassignments, KIP-455), for the
// `partition-reassign` fault: librdkafka, and so confluent-kafka, has no such call. Run inside a broker container
// (nemesis/reassign.py compiles it there once): java -cp DIR:'/opt/kafka/libs/*' Reassign BOOTSTRAP TOPIC PART 1,2,3
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartition;

public class Reassign {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        List<Integer> target = new ArrayList<>();
        for (String s : args[3].split(",")) target.add(Integer.parseInt(s.trim()));
        TopicPartition tp = new TopicPartition(args[1], Integer.parseInt(args[2]));
        try (Admin admin = Admin.create(props)) {
            admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(target))))
                 .all().get(30, TimeUnit.SECONDS);
            System.out.println("reassigning " + tp + " to " + target);
        }
    }
}
