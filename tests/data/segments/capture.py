"""Capture tests/data/segments/: a segment a real broker wrote and Kafka's own reading of it.

Brings up the test cluster shape (tests/conftest.py), writes to a one-partition topic with an idempotent producer
(two batches) and a transactional producer (one committed, one aborted transaction: data and control batches),
copies the leader's segment out (cluster/replica_files.py) and runs Kafka's DumpLogSegments on the copy
(`kafka.tools.DumpLogSegments --print-data-log`, from a 3.9 broker image: see dump()), whose lines expected.tsv is
made from, so the parser's test is held to Kafka's own reader.

    .venv/bin/python tests/data/segments/capture.py
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kafka_chaos.cluster.kafka_cluster import KafkaCluster  # noqa: E402
from kafka_chaos.cluster.replica_files import replica_files  # noqa: E402
from tests.conftest import fast_cluster_config  # noqa: E402

HERE = Path(__file__).parent
TOPIC = "segment"


def produce(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 50})
    for i in range(5):
        p.produce(TOPIC, key=b"k" if i % 2 else None, value=f"idem-{i}".encode(), partition=0)
    p.flush(30)
    p.produce(TOPIC, value=b"idem-5", partition=0, headers=[("h", b"1")])
    p.flush(30)
    t = Producer({"bootstrap.servers": bootstrap, "transactional.id": "capture", "linger.ms": 50})
    t.init_transactions(30)
    for outcome in ("commit", "abort"):
        t.begin_transaction()
        for i in range(3):
            t.produce(TOPIC, value=f"txn-{outcome}-{i}".encode(), partition=0)
        t.flush(30)
        (t.commit_transaction if outcome == "commit" else t.abort_transaction)(30)


def dump(segment: Path) -> str:
    """Kafka's DumpLogSegments over the copied segment, in a broker image of a release whose core jar has it
    (kafka.tools.DumpLogSegments; 4.x moved it to kafka-tools, which the image does not ship): 3.9's reads the
    same v2 batches."""
    import docker

    client = docker.from_env()
    image = next(t for i in client.images.list() for t in i.tags if t.startswith("kafka-chaos-broker:3.9"))
    out = client.containers.run(image, entrypoint=["sh", "-c"], remove=True,
                                command=[f"java -Xmx256m -cp '/opt/kafka/libs/*' kafka.tools.DumpLogSegments "
                                         f"--print-data-log --files /seg/{segment.name}"],
                                volumes={str(segment.parent.resolve()): {"bind": "/seg", "mode": "ro"}})
    return out.decode()


def expected(text: str) -> list[list[str]]:
    """(offset, producerId, sequence, isControl, payload or marker) per record, from DumpLogSegments' lines."""
    rows, batch = [], {}
    for line in text.splitlines():
        if line.startswith("baseOffset:"):
            batch = dict(re.findall(r"(\w+): (\S+)", line))
        elif line.startswith("| offset:"):
            rec = dict(re.findall(r"(\w+): (\S+)", line))
            payload = rec.get("payload") or rec.get("endTxnMarker")
            rows.append([rec["offset"], batch["producerId"], rec["sequence"], batch["isControl"], payload])
    return rows


def main() -> None:
    c = KafkaCluster(fast_cluster_config(f"seg{os.getpid()}"))
    c.up()
    try:
        c.create_topic(TOPIC, partitions=1, replication_factor=3)
        produce(c.bootstrap_servers)
        leader = c.node(c.leader(TOPIC, 0))
        files = replica_files(leader, TOPIC, 0)["files"]
        name = min(n for n in files if n.endswith(".log"))
        (HERE / name).write_bytes(files[name])
        text = dump(HERE / name)
        (HERE / "dump.txt").write_text(text)
        rows = expected(text)
        (HERE / "expected.tsv").write_text("offset\tproducer_id\tsequence\tis_control\tvalue\n" +
                                           "".join("\t".join(r) + "\n" for r in rows))
        print(f"{name}: {len(rows)} records; Kafka {c.version}")
    finally:
        c.down()


if __name__ == "__main__":
    main()
