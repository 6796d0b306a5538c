"""The metadata-log reader that shows KAFKA-19522: a partition change naming a leader that the log's own broker
records say is fenced. The lines are trimmed from the real 4.0.0 dump of `bench/historical_bugs.sh` (README
"Historical bugs"); the second case is the fixed order (unfenced first, elected after)."""
from kafka_chaos.cluster.metadata_log import fenced_elections, parse

HEAD = "Dumping /var/lib/kafka/data/__cluster_metadata-0/00000000000000000000.log\nLog starting offset: 0\n"


def line(offset: int, payload: str) -> str:
    return (f"| offset: {offset} CreateTime: {1795452983000 + offset} keySize: -1 valueSize: 19 sequence: -1 "
            f"headerKeys: [] payload: {payload}\n")


BOOT = (HEAD + line(17, '{"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":1,"brokerEpoch":17,'
                        '"fenced":true}}')
        + line(30, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":17,'
                   '"fenced":-1}}')
        + line(43, '{"type":"TOPIC_RECORD","version":0,"data":{"name":"chaos","topicId":"D1Ewzu5QQv-JOr1IcIjI6A"}}')
        + line(44, '{"type":"PARTITION_RECORD","version":2,"data":{"partitionId":0,"topicId":"D1Ewzu5QQv-JOr1IcIjI6A",'
                   '"replicas":[1,2,3],"isr":[1,2,3],"leader":1}}')
        + line(359, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":17,'
                    '"fenced":1}}')
        + line(360, '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":0,'
                    '"topicId":"D1Ewzu5QQv-JOr1IcIjI6A","isr":[],"leader":-1,"eligibleLeaderReplicas":[1],'
                    '"lastKnownElr":[1]}}'))
ELECT = line(744, '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":0,'
                  '"topicId":"D1Ewzu5QQv-JOr1IcIjI6A","isr":[1],"leader":1,"leaderRecoveryState":1,'
                  '"eligibleLeaderReplicas":[],"lastKnownElr":[]}}')
REGISTER = line(794, '{"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":1,"brokerEpoch":741,'
                     '"fenced":true}}')
UNFENCE = line(830, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,'
                    '"brokerEpoch":741,"fenced":-1}}')


def test_the_last_known_leader_elected_while_fenced_is_found():
    """4.0.0: elected in the batch of its own registration (fenced), before any unfence."""
    found = fenced_elections(parse(BOOT + ELECT + REGISTER))
    assert [(e["offset"], e["topic"], e["partition"], e["leader"], e["isr"]) for e in found] == \
        [(744, "chaos", 0, 1, [1])]


def test_a_leader_elected_once_unfenced_is_not_reported():
    """4.1+: registered fenced, unfenced, then elected; also the clean start (leader 1 unfenced at creation)."""
    assert fenced_elections(parse(BOOT + REGISTER + UNFENCE + line(831, ELECT.split("payload: ")[1]))) == []


def test_no_leader_and_lines_that_are_not_records_are_ignored():
    assert fenced_elections(parse(BOOT + "baseOffset: 0 lastOffset: 0 count: 1 isControl: true\n")) == []
