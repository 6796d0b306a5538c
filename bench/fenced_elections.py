"""Print the partition changes that elected a fenced broker, from a running KRaft cluster's metadata log
(cluster/metadata_log.py), and save the log's text beside a run: KAFKA-19522's evidence (docs/findings.md).

    .venv/bin/python bench/fenced_elections.py CLUSTER_NAME [SAVE_AS]

Exit 1 when some partition change named a fenced leader, 0 when none did.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.cluster.metadata_log import dump, fenced_elections, parse


def main(name: str, save: str | None = None) -> int:
    text = dump(KafkaCluster.attach(name))
    if save:
        Path(save).write_text(text)
    records = parse(text)
    found = fenced_elections(records)
    print(f"{name}: {len(records)} metadata records, {len(found)} partition changes electing a fenced broker")
    for e in found[:5]:
        t = time.strftime("%H:%M:%S", time.gmtime(e["create_ms"] / 1000))
        print(f"  offset {e['offset']} at {t}: {e['topic']}/{e['partition']} leader {e['leader']} isr {e['isr']} "
              f"leaderRecoveryState {e['leader_recovery_state']}")
    if len(found) > 5:
        print(f"  ... and {len(found) - 5} more")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
