"""verdict.json's `clients`: two client libraries side by side, each with its own acked, lost, duplicates, stalls."""
import json

import pyarrow.parquet as pq
import pytest

from kafka_chaos.harness.cli import main
from tests.checkers.conftest import read, send, write_run

PRODUCERS = [{"name": "p0", "acks": "all", "idempotent": False, "client": "librdkafka"},
             {"name": "j0", "acks": "all", "idempotent": False, "client": "java"}]
CLIENTS = {"librdkafka": {"library": "librdkafka", "version": "2.16.0"},
           "java": {"library": "kafka-clients", "version": "4.4.0"}}


def _check(run) -> dict:
    main(["check", str(run), "--engine", "pandas"])
    return json.loads((run / "verdict.json").read_text())


def test_each_client_gets_its_own_losses_duplicates_and_stall(tmp_path):
    # librdkafka: a0 acked and drained, a1 acked and lost. java: b0 read twice (a duplicate), b1 acked 5 s after
    # invoke while librdkafka's sends to the same partition kept being acked (a stall of the Java client only).
    sends = [send("a0", offset=0, producer="p0", idempotent=False, t=0),
             send("a1", offset=1, producer="p0", idempotent=False, t=100),
             send("b0", offset=2, producer="j0", process=1, idempotent=False, t=200),
             send("b1", offset=3, producer="j0", process=1, idempotent=False, t=300)]
    sends[3]["t_complete_ns"] = sends[3]["t_invoke_ns"] + 5_000_000_000
    for i in range(50):              # librdkafka keeps being acked every 100 ms meanwhile
        sends.append(send(f"a{2 + i}", offset=4 + i, producer="p0", idempotent=False, t=400 + 100 * i))
    reads = [read("a0", offset=0), read("b0", offset=2), read("b1", offset=3), read("b0", offset=60)] + \
        [read(f"a{2 + i}", offset=4 + i) for i in range(50)]
    run = write_run(tmp_path / "both", sends, reads, producers=PRODUCERS, clients=CLIENTS,
                    start_ns=sends[0]["t_invoke_ns"], end_ns=sends[-1]["t_complete_ns"])
    verdict = _check(run)
    rdk, java = verdict["clients"]["librdkafka"], verdict["clients"]["java"]
    assert (rdk["producers"], java["producers"]) == (["p0"], ["j0"])
    assert (rdk["version"], java["version"], java["library"]) == ("2.16.0", "4.4.0", "kafka-clients")
    assert (rdk["sends"], rdk["acked"], java["sends"], java["acked"]) == (52, 52, 2, 2)
    assert (rdk["lost"], java["lost"]) == (1, 0)
    assert (rdk["duplicates"], java["duplicates"]) == (0, 1)
    assert rdk["longest_stall_s"] == 0
    assert 4.5 <= java["longest_stall_s"] <= 5.1 and java["stalls"][0][2] == 0
    # the per-client counts add up to the run's
    assert rdk["lost"] + java["lost"] == verdict["anomalies"]["lost"]
    assert rdk["duplicates"] + java["duplicates"] == verdict["anomalies"]["duplicate"]


def test_lost_rows_are_attributed_to_the_client_whose_producer_sent_them(tmp_path):
    sends = [send(f"v{i}", offset=i, producer=("p0", "j0")[i % 2], process=i % 2, idempotent=False, t=10 * i)
             for i in range(20)]
    reads = [read(f"v{i}", offset=i) for i in range(20) if i not in (3, 4, 5)]     # v3 and v5 java, v4 librdkafka
    run = write_run(tmp_path / "lost", sends, reads, producers=PRODUCERS, clients=CLIENTS)
    verdict = _check(run)
    lost = pq.read_table(run / "anomalies.parquet").to_pandas().query("kind == 'lost'")
    assert sorted(lost["value"]) == ["v3", "v4", "v5"]
    assert verdict["clients"]["java"]["lost"] == 2 and verdict["clients"]["librdkafka"]["lost"] == 1
    assert verdict["clients"]["java"]["lost_violations"] == 2       # no faults: every acked loss is a violation


def test_a_run_that_names_no_clients_has_no_comparison(tmp_path):
    run = write_run(tmp_path / "old", [send("a", offset=0)], [read("a", offset=0)],
                    producers=[{"name": "p0", "acks": "all"}])
    assert "clients" not in _check(run)


def test_the_report_shows_the_clients_side_by_side(tmp_path):
    from kafka_chaos.report.page import write_report

    sends = [send(f"v{i}", offset=i, producer=("p0", "j0")[i % 2], process=i % 2, idempotent=False, t=10 * i)
             for i in range(6)]
    run = write_run(tmp_path / "rep", sends, [read(f"v{i}", offset=i) for i in range(6) if i != 1],
                    producers=PRODUCERS, clients=CLIENTS)
    _check(run)
    html = write_report(run).read_text()
    table = html[html.index('<table id="clients">'):]
    table = table[:table.index("</table>")]
    rows = [r for r in table.split("<tr>")[2:]]
    assert len(rows) == 2
    java = next(r for r in rows if "kafka-clients" in r)
    assert "4.4.0" in java and "j0" in java
    cells = [c.split("</td>")[0] for c in java.split('<td class="num">')[1:]]
    assert cells[:6] == ["3", "3", "0", "0", "1", "1"]      # sends, acked, fail, info, lost, lost (violations)


def test_a_lone_clients_entry_is_the_runs_own_figures_and_equals_measuring_it_again(tmp_path, monkeypatch):
    # one client named: its entry comes from the run's counts and stalls (only the producer column is read); it
    # must equal the entry measured from every send, as for two clients
    from kafka_chaos.checkers import clients
    from kafka_chaos.history.meta import load_meta

    lone = [PRODUCERS[0]]
    sends = [send(f"a{i}", offset=i, producer="p0", idempotent=False, t=100 * i + 4000 * (i >= 15))
             for i in range(40)]
    for s in sends[10:15]:                       # nothing acked from 1.0 s to 5.5 s while these wait: a stall
        s["t_complete_ns"] = sends[0]["t_invoke_ns"] + 5_500_000_000
    sends.append(send("x", offset=None, producer="p0", idempotent=False, t=4100, outcome="info"))
    reads = [read(f"a{i}", offset=i) for i in range(40) if i != 7]                   # a7 lost
    run = write_run(tmp_path / "lone", sends, reads, producers=lone, clients={"librdkafka": CLIENTS["librdkafka"]},
                    start_ns=sends[0]["t_invoke_ns"], end_ns=sends[-2]["t_complete_ns"])
    measure = clients.compare
    monkeypatch.setattr(clients, "compare", lambda *a, **k: pytest.fail("measured again: the run's own figures "
                                                                        "were not used"))
    entry = _check(run)["clients"]["librdkafka"]
    monkeypatch.setattr(clients, "compare", measure)
    judged = pq.read_table(run / "anomalies.parquet").to_pandas()
    measured = clients.compare(pq.read_table(run / "history" / "sends.parquet").to_pandas(), judged,
                               load_meta(run), [])["librdkafka"]
    explained = {"attribution", "stall_causes"}          # the run's stall attribution, added to both alike
    assert {k: v for k, v in entry.items() if k not in explained} == measured
    assert (entry["sends"], entry["acked"], entry["info"], entry["lost"]) == (41, 40, 1, 1)
    assert entry["longest_stall_s"] >= 3.5
