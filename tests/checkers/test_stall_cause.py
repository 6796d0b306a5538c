"""Whose time a stall was (checkers/stall_cause.py): pinned on a recorded history whose client-statistics table
was built through the history contract from librdkafka-shaped statistics documents, with a counter-case the
statistics do not explain, and an older results directory without the table."""
import json

import pyarrow.parquet as pq

from kafka_chaos.checkers.availability import Stall
from kafka_chaos.checkers.stall_cause import NO_STATS, NO_WAIT, ClientSettings, Explainer
from kafka_chaos.harness.cli import main
from kafka_chaos.history.build import client_stats_table
from kafka_chaos.history.journal import write_sidecar
from kafka_chaos.history.schema import CLIENT_STATS_SCHEMA
from kafka_chaos.workloads.client_stats import stats_rows
from tests.checkers.conftest import MS, T, read, send, write_run
from tests.schemas import validate

S = 1000 * MS
IN_FLIGHT = ("requests in flight to broker 1, awaiting its response (the client waits until the first message's "
             "delivery.timeout.ms=30000 (capped by socket.timeout.ms=60000; request.timeout.ms=10000 is the broker's))")


def stats_doc(t_s: int, waiting: bool, leader0: int | None = 1, state1: str = "UP", timeouts1: int = 0) -> str:
    """One librdkafka statistics document (STATISTICS.md's fields) as the stats_cb gets it."""
    def broker(node, state, waitresp, timeouts=0):
        return {"name": f"b{node}:9092/{node}", "nodeid": node, "state": state, "stateage": 5_000_000,
                "outbuf_cnt": 0, "waitresp_cnt": waitresp, "req_timeouts": timeouts, "txretries": 0,
                "rtt": {"avg": 900}}

    def part(p, leader, inflight):
        return {"partition": p, "leader": -1 if leader is None else leader, "unknown": False, "msgq_cnt": 0,
                "xmit_msgq_cnt": 3 if inflight else 0, "msgs_inflight": inflight}

    return json.dumps({
        "ts": t_s * 1_000_000, "time": 0, "msg_cnt": 10, "msg_max": 100000,
        "brokers": {"b1": broker(1, state1, 2 if waiting else 0, timeouts1), "b2": broker(2, "UP", 0),
                    "boot": {"nodeid": -1, "state": "UP", "waitresp_cnt": 0}},
        "topics": {"chaos": {"metadata_age": 800, "partitions": {
            "0": part(0, leader0, 40 if waiting else 0), "1": part(1, 2, 0), "-1": part(-1, None, 0)}}}})


def recorded_run(tmp_path, with_stats=True):
    """Partition 0 stalls 10-20 s while librdkafka waits on broker 1; partition 1 stalls 5-9 s while its
    statistics show nothing waiting; no faults, so the model predicts no unavailability at all."""
    sends = []
    for i in range(300):                     # one send every 100 ms to each partition
        t = i * 100
        done0 = 20_000 if 10_000 <= t < 20_000 else t
        done1 = 9_000 if 5_000 <= t < 9_000 else t
        sends.append(send(f"0-{2 * i}", partition=0, offset=i, acks="1", t=t)
                     | {"t_complete_ns": T + done0 * MS + 2 * MS})
        sends.append(send(f"0-{2 * i + 1}", partition=1, offset=i, acks="1", t=t)
                     | {"t_complete_ns": T + done1 * MS + 2 * MS})
    reads = [read(s["value"], partition=s["partition"], offset=s["offset"], t=31_000) for s in sends]
    run = write_run(tmp_path / "stalled", sends, reads, start_ns=T, end_ns=T + 30 * S,
                    producers=[{"name": "p0", "acks": "1", "idempotent": False, "delivery_timeout_ms": 30000,
                                "request_timeout_ms": 10000, "client": "librdkafka"}])
    if with_stats:
        journal = run / "history" / "journal"
        journal.mkdir()
        write_sidecar(journal / "producer-0.json", {"kind": "sends", "process": 0, "producer": "p0", "acks": "1",
                                                    "idempotent": False, "profile": {"client": "librdkafka"}})
        lines = [json.dumps(r) for t in range(31) for r in stats_rows(stats_doc(t, 10 <= t <= 20), "chaos", T)]
        (journal / "producer-0.stats.jsonl").write_text("\n".join(lines) + "\n")
        table = client_stats_table(journal)
        assert table.schema.equals(CLIENT_STATS_SCHEMA)
        pq.write_table(table, run / "history/client_stats.parquet")
    return run


def test_each_stall_second_is_attributed_from_the_clients_own_statistics(tmp_path, capsys):
    run = recorded_run(tmp_path)
    assert main(["check", str(run), "--engine", "pandas"]) == 0
    verdict = json.loads((run / "verdict.json").read_text())
    validate(verdict, "verdict")
    avail = verdict["availability"]
    by_partition = {c["partition"]: c for c in avail["stall_causes"]}
    assert len(avail["stall_causes"]) == len(avail["stalls"]) == 2
    waited = by_partition[0]
    assert waited["cluster_s"] == 0 and waited["unexplained_s"] == 0
    assert abs(waited["client_s"] - waited["seconds"]) < 1e-3 and waited["seconds"] > 9.9
    assert [c["mechanism"] for c in waited["causes"]] == [IN_FLIGHT]
    # the counter-case: the leader connected, nothing in flight, the cluster's leader the client's: unexplained
    idle = by_partition[1]
    assert idle["client_s"] == 0 and abs(idle["unexplained_s"] - idle["seconds"]) < 1e-3
    assert [c["mechanism"] for c in idle["causes"]] == [NO_WAIT]
    assert avail["attribution"]["statistics"] is True
    assert avail["attribution"]["mechanisms"] == {f"client: {IN_FLIGHT}": waited["client_s"],
                                                  f"unexplained: {NO_WAIT}": idle["unexplained_s"]}
    assert "stall seconds: cluster 0.0, client 10.1" in capsys.readouterr().out


def test_a_history_without_client_statistics_leaves_the_time_unexplained(tmp_path):
    run = recorded_run(tmp_path, with_stats=False)
    assert main(["check", str(run), "--engine", "pandas"]) == 0
    avail = json.loads((run / "verdict.json").read_text())["availability"]
    assert avail["attribution"]["statistics"] is False and avail["attribution"]["client_s"] == 0
    assert {c["mechanism"] for s in avail["stall_causes"] for c in s["causes"]} == {NO_STATS}


def explainer(windows, docs, cluster_leader=None):
    rows = [r | {"process": 0, "producer": "p0", "client": "librdkafka"} for t, d in docs
            for r in stats_rows(d, "chaos", T)]
    import pandas as pd
    leaders = None if cluster_leader is None else pd.DataFrame(
        {"t_ns": [T], "partition": [0], "leader": [cluster_leader]})
    return Explainer(windows, pd.DataFrame(rows), {"p0": ClientSettings()}, leaders)


def test_the_models_window_is_the_clusters_time_and_the_rest_is_read_off_the_statistics():
    ex = explainer([(T + 10 * S, T + 14 * S, 0, "no reachable leader")],
                   [(t, stats_doc(t, False, leader0=None if t < 17 else 1, state1="CONNECT" if t >= 17 else "UP"))
                    for t in range(25)])
    got = ex.explain(Stall(0, T + 10 * S, T + 20 * S, 4 * S))
    assert (got["cluster_s"], got["client_s"], got["unexplained_s"]) == (4.0, 6.0, 0.0)
    assert [(c["cause"], c["seconds"]) for c in got["causes"]] == [("cluster", 4.0), ("client", 2.0),
                                                                     ("client", 4.0)]
    assert got["causes"][0]["mechanism"] == "no reachable leader"
    assert got["causes"][1]["mechanism"].startswith("metadata refresh: the partition's leader unknown")
    assert got["causes"][2]["mechanism"].startswith("broker 1 not connected (CONNECT): reconnecting")


def test_a_client_sending_to_a_broker_the_cluster_no_longer_leads_with_is_stale_metadata():
    ex = explainer([], [(t, stats_doc(t, False)) for t in range(10)], cluster_leader=2)
    got = ex.explain(Stall(0, T + 2 * S, T + 5 * S, 0))
    assert got["client_s"] == 3.0
    assert got["causes"][0]["mechanism"].startswith("metadata refresh: the client sends to broker 1, the cluster's "
                                                    "leader is 2")


def test_a_leader_the_clusters_own_metadata_lacks_is_the_clusters_time_though_the_model_predicted_none():
    """As in a real leader-power-loss run: a broker crashed on its own, the partition had no leader for seconds,
    the model knew nothing of it; the client then sees the leader unknown, but the time is the cluster's."""
    from dataclasses import replace

    import pandas as pd
    docs = [(t, stats_doc(t, False, leader0=None)) for t in range(12)]
    ex = explainer([], docs)
    ex = replace(ex, leaders=pd.DataFrame({"t_ns": [T + t * S for t in range(12)], "partition": [0] * 12,
                                           "leader": [1.0] * 4 + [float("nan")] * 8}))     # no leader from 4 s
    got = ex.explain(Stall(0, T + 2 * S, T + 8 * S, 0))
    assert (got["cluster_s"], got["client_s"]) == (5.0, 1.0)       # each slice read at its end: 3-8 s the cluster's
    assert got["causes"][1]["mechanism"].startswith("no leader in the cluster's metadata")
    ex = replace(ex, leaders=pd.DataFrame({"t_ns": [T], "partition": [0], "leader": [float("nan")]}))   # too old
    assert ex.explain(Stall(0, T + 6 * S, T + 8 * S, 0))["cluster_s"] == 0.0


def test_statistics_rows_skip_bootstrap_brokers_and_the_unassigned_queue():
    rows = stats_rows(stats_doc(3, True, leader0=None), "chaos", T)
    assert {r["scope"] for r in rows} == {"client", "broker", "partition"}
    assert sorted(r["broker"] for r in rows if r["scope"] == "broker") == [1, 2]
    parts = {r["partition"]: r for r in rows if r["scope"] == "partition"}
    assert set(parts) == {0, 1} and parts[0]["leader"] is None and parts[0]["msgq_cnt"] == 3
    assert all(r["t_ns"] == T + 3 * S for r in rows)


def test_the_report_shows_each_stall_beside_whose_time_it_was(tmp_path):
    from kafka_chaos.report.page import write_report
    run = recorded_run(tmp_path)
    assert main(["check", str(run), "--engine", "pandas"]) == 0
    html = write_report(run).read_text()
    assert "Stalls: whose time" in html and "requests in flight to broker 1" in html
    assert "unexplained: the client&#39;s statistics show no waiting" in html


def test_requests_that_later_time_out_were_in_flight_to_an_unreachable_broker():
    ex = explainer([], [(t, stats_doc(t, 3 <= t <= 8, timeouts1=0 if t < 8 else 2)) for t in range(12)])
    got = ex.explain(Stall(0, T + 3 * S, T + 8 * S, 0))
    assert got["client_s"] == 5.0
    assert [c["mechanism"] for c in got["causes"]] == [
        "requests in flight to unreachable broker 1, timed out at the first message's delivery.timeout.ms=30000 "
        "(capped by socket.timeout.ms=60000; request.timeout.ms=10000 is the broker's)"]
