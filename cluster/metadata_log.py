"""The KRaft controller's metadata log, read back after a run: which broker each partition change elected, and
whether that broker was fenced at that point of the log.

Why: a controller must never name a fenced broker leader (it cannot serve; clients and followers are pointed at a
broker the controller itself considers dead). KAFKA-19522 is such a bug: with eligible leader replicas on, 4.0.x
elects a partition's last known leader even while it is fenced (PartitionChangeBuilder.canElectLastKnownLeader
logs "last known leader is not alive" and elects it anyway; fixed in 4.1.0). The cluster's samples cannot show it
(a fenced leader looks like any leader that is not answering yet); the metadata log records it exactly: a
PartitionChangeRecord naming a leader whose latest registration record says fenced.

The log is dumped with Kafka's own tool (kafka.tools.DumpLogSegments --cluster-metadata-decoder) inside the
controller's container, whose image has Kafka's jars; nothing of Kafka's is parsed here but that tool's text.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

METADATA_DIR = "/var/lib/kafka/data/__cluster_metadata-0"
DUMP_TOOLS = ("kafka.tools.DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments")   # core's, then tools'
_RECORD = re.compile(r"\|\s*offset: (\d+) CreateTime: (\d+) .*?payload: (\{.*\})\s*$")


@dataclass(frozen=True)
class Record:
    offset: int
    create_ms: int
    type: str
    data: dict


def dump(cluster) -> str:
    """DumpLogSegments' text for every segment of the first controller's metadata log (a KRaft cluster)."""
    from kafka_chaos.base.errors import UsageError

    if not cluster.controllers:
        raise UsageError(f"cluster {cluster.config.name} has no KRaft controller node (ZooKeeper mode?)",
                         "read the metadata log of a KRaft cluster")
    node = cluster.controllers[0]
    for tool in DUMP_TOOLS:
        script = (f"for f in {METADATA_DIR}/*.log; do java -cp '/opt/kafka/libs/*' {tool} "
                  "--cluster-metadata-decoder --files \"$f\" || exit $?; done")
        rc, text = node.exec(["sh", "-c", script], check=False)
        if rc == 0:
            return text
        if "Could not find or load main class" not in text:
            break
    raise UsageError(f"cannot dump the metadata log of {cluster.config.name} (Kafka {cluster.version}): "
                     f"{text.strip()[-300:]}",
                     "this release's broker classpath lacks DumpLogSegments (4.4.0's does: the tool is not in its "
                     "core jar); read a 4.0 or 4.1 cluster")


def parse(text: str) -> list[Record]:
    """The records of a DumpLogSegments text, in log order (control records and other lines skipped)."""
    out = []
    for line in text.splitlines():
        m = _RECORD.search(line)
        if m:
            payload = json.loads(m.group(3))
            out.append(Record(int(m.group(1)), int(m.group(2)), payload.get("type", ""), payload.get("data", {})))
    return out


def fenced_elections(records: list[Record]) -> list[dict]:
    """Partition changes that named a leader fenced at that point of the log (or never registered).

    A broker's state follows its records: RegisterBrokerRecord (fenced true/false), BrokerRegistrationChangeRecord
    (fenced 1 / -1; 0 means unchanged), and the older Fence/UnfenceBrokerRecord. A partition change's leader -1 is
    "no leader", -2 "unchanged": neither counts."""
    fenced: dict[int, bool] = {}
    topics: dict[str, str] = {}
    out = []
    for r in records:
        d = r.data
        if r.type == "TOPIC_RECORD":
            topics[d.get("topicId")] = d.get("name")
        elif r.type == "REGISTER_BROKER_RECORD":
            fenced[int(d["brokerId"])] = bool(d.get("fenced", True))
        elif r.type == "BROKER_REGISTRATION_CHANGE_RECORD" and d.get("fenced", 0) in (1, -1):
            fenced[int(d["brokerId"])] = d["fenced"] == 1
        elif r.type in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            fenced[int(d["id"])] = r.type == "FENCE_BROKER_RECORD"
        elif r.type in ("PARTITION_CHANGE_RECORD", "PARTITION_RECORD"):
            leader = d.get("leader")
            if leader is not None and leader >= 0 and fenced.get(int(leader), True):
                out.append({"offset": r.offset, "create_ms": r.create_ms, "topic": topics.get(d.get("topicId")),
                            "partition": d.get("partitionId"), "leader": int(leader), "isr": d.get("isr"),
                            "leader_recovery_state": d.get("leaderRecoveryState")})
    return out
