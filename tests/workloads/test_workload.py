"""Against the real cluster: every send gets exactly one outcome row, and every read is in the history."""
from __future__ import annotations

import json
import time

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kafka_chaos.history.journal import producer_paths, read_progress
from kafka_chaos.history.writer import HistoryWriter
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.run import Workload, WorkloadConfig

pytestmark = pytest.mark.cluster

META = {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2}


def run_workload(cluster, topic, tmp_path, config: WorkloadConfig, seconds: float):
    history = HistoryWriter(tmp_path / "run", META | {"topic": topic})
    workload = Workload(cluster, history, config)
    workload.start()
    time.sleep(seconds)
    live = workload.stats()
    workload.stop()
    drain = workload.final_drain()
    summary = workload.finalize()
    return history, workload, live, drain, summary


def test_every_send_has_exactly_one_outcome_and_acked_sends_are_read_back(cluster, topic, tmp_path):
    profiles = [ProducerProfile("idem", acks="all", idempotent=True, rate=2000),
                ProducerProfile("one", acks="1", idempotent=False, rate=1000),
                ProducerProfile("zero", acks="0", idempotent=False, rate=500)]
    config = WorkloadConfig(topic=topic, producers=profiles, consumers=1, sample_interval_s=0.5)
    history, workload, live, drain, summary = run_workload(cluster, topic, tmp_path, config, 4)

    sends = pq.read_table(history.history_dir / "sends.parquet")
    reads = pq.read_table(history.history_dir / "reads.parquet")
    assert live.sends > 0 and live.workers_alive == 4
    # each producer's own count of produce() calls is exactly its rows, each value once
    for process, profile in enumerate(profiles):
        counted = read_progress(producer_paths(history.journal_dir, process)["progress"])
        mine = sends.filter(pc.equal(sends["process"], process))
        assert mine.num_rows == counted["invoked"] > 0
        assert set(mine["producer"].to_pylist()) == {profile.name}
        assert set(mine["acks"].to_pylist()) == {profile.acks}
        assert set(mine["value"].to_pylist()) == {f"{process}-{i}" for i in range(counted["invoked"])}
    assert pc.count_distinct(sends["value"]).as_py() == sends.num_rows
    assert pc.count_distinct(sends["op_id"]).as_py() == sends.num_rows
    # a healthy cluster acknowledges everything, and every send has its delivery report
    assert set(sends["outcome"].to_pylist()) == {"ok"} and summary.without_outcome == 0
    assert sends["t_complete_ns"].null_count == 0
    assert set(sends["partition"].to_pylist()) == {0, 1, 2}
    acked_offsets = sends.filter(pc.not_equal(sends["acks"], "0"))["offset"]
    assert acked_offsets.null_count == 0
    assert sends.filter(pc.equal(sends["acks"], "0"))["offset"].null_count == summary.sends - len(acked_offsets)
    # the final drain reads every partition to its end: every value acked by a broker exactly once. (acks=0's
    # "ok" only means written to the socket: on a busy machine the broker may append it after the end snapshot.)
    assert drain.healthy and drain.complete
    final = reads.filter(pc.equal(reads["phase"], "final"))
    final_values = final["value"].to_pylist()
    assert len(final_values) == len(set(final_values))
    broker_acked = sends.filter(pc.not_equal(sends["acks"], "0"))["value"].to_pylist()
    assert set(broker_acked) <= set(final_values) <= set(sends["value"].to_pylist())
    assert final["seq"].to_pylist() == list(range(final.num_rows))
    # the acked offset of each send is where the drain found it
    acked = {(r["value"]): (r["partition"], r["offset"]) for r in sends.to_pylist() if r["offset"] is not None}
    assert all(acked[r["value"]] == (r["partition"], r["offset"]) for r in final.to_pylist()
               if r["value"] in acked)
    # the live consumer saw (nearly) everything and recorded it in order of receipt
    live_reads = reads.filter(pc.equal(reads["consumer"], "c0"))
    assert live_reads.num_rows > 0.5 * sends.num_rows
    assert set(live_reads["value"].to_pylist()) <= set(sends["value"].to_pylist())
    # the sampler recorded each partition's leader and full ISR several times
    cluster_rows = pq.read_table(history.history_dir / "cluster.parquet").to_pylist()
    assert len(cluster_rows) >= 3 * 4
    assert {r["partition"] for r in cluster_rows} == {0, 1, 2}
    assert all(r["leader"] in (1, 2, 3) and sorted(r["isr"]) == [1, 2, 3] and r["elr"] is None
               for r in cluster_rows)
    controllers = [r["controller"] for r in cluster_rows]
    assert set(controllers) <= {101, None} and controllers.count(101) > len(controllers) / 2
    meta = json.loads((history.dir / "meta.json").read_text())
    assert meta["topic"] == topic and [p["name"] for p in meta["producers"]] == ["idem", "one", "zero"]
    assert meta["start_ns"] < meta["end_ns"]


def test_sends_during_a_broker_kill_still_get_exactly_one_outcome(cluster, topic, tmp_path):
    """acks=1 without retries while the leader of a partition dies: outcomes vary, but none is missing."""
    profile = ProducerProfile("fragile", acks="1", idempotent=False, retries=0, rate=3000,
                              delivery_timeout_ms=3000, request_timeout_ms=1000)
    config = WorkloadConfig(topic=topic, producers=[profile], consumers=0, producer_stop_timeout_s=1)
    history = HistoryWriter(tmp_path / "run", META)
    workload = Workload(cluster, history, config)
    workload.start()
    time.sleep(1)
    victim = cluster.node(cluster.leader(topic, 0))
    victim.kill()
    time.sleep(3)
    workload.stop()
    victim.start()
    workload.final_drain()
    summary = workload.finalize()
    sends = pq.read_table(history.history_dir / "sends.parquet")
    counted = read_progress(producer_paths(history.journal_dir, 0)["progress"])
    assert sends.num_rows == counted["invoked"] == summary.sends
    assert pc.count_distinct(sends["value"]).as_py() == sends.num_rows
    assert (summary.ok, summary.fail, summary.info) == (counted["ok"], counted["fail"], counted["info"])
    assert summary.without_outcome == 0
    assert summary.ok > 0 and summary.fail + summary.info > 0
    # an errored send has its error's name and no offset
    errored = sends.filter(pc.not_equal(sends["outcome"], "ok"))
    assert errored["error"].null_count == 0 and errored["offset"].null_count == errored.num_rows


def test_subscribe_mode_consumers_share_the_topic_as_one_group(cluster, topic, tmp_path):
    config = WorkloadConfig(topic=topic, producers=[ProducerProfile("p0", rate=1000)], consumers=2,
                            consumer_mode="subscribe", sample_interval_s=1)
    history, workload, live, drain, summary = run_workload(cluster, topic, tmp_path, config, 6)
    reads = pq.read_table(history.history_dir / "reads.parquet")
    live_reads = reads.filter(pc.equal(reads["phase"], "live"))
    assert set(live_reads["consumer"].to_pylist()) <= {"c0", "c1"} and live_reads.num_rows > 0
    # the group splits the partitions between its members, and together they saw the acked sends
    assert {r["consumer"] for r in live_reads.select(["consumer"]).to_pylist()} == {"c0", "c1"}
    seen = set(live_reads["value"].to_pylist())
    sent = pq.read_table(history.history_dir / "sends.parquet")["value"].to_pylist()
    assert seen <= set(sent) and len(seen) > 0.5 * len(sent)
    assert json.loads((history.dir / "meta.json").read_text())["consumer_mode"] == "subscribe"
    assert summary.final_reads == summary.ok


def test_final_drain_waits_for_health_only_so_long_then_reads_what_it_can(cluster, topic, tmp_path):
    from kafka_chaos.workloads.drain import final_drain

    config = WorkloadConfig(topic=topic, producers=[ProducerProfile("p0", rate=1000)], consumers=0,
                            sample_interval_s=1)
    history = HistoryWriter(tmp_path / "run", META)
    workload = Workload(cluster, history, config)
    workload.start()
    time.sleep(2)
    workload.stop()
    follower = next(n for n in cluster.brokers if n.id != cluster.leader(topic, 0))
    follower.stop()
    try:
        started = time.monotonic()
        drain = final_drain(cluster, topic, history.journal_dir, healthy_timeout_s=3, read_timeout_s=60)
        waited = time.monotonic() - started
    finally:
        follower.start()
    summary = workload.finalize()
    assert not drain.healthy and waited < 60
    assert drain.complete and drain.records == summary.final_reads == summary.ok
    assert drain.positions == drain.ends
