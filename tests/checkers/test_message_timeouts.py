"""Which sends a producer's own client timed out, per producer and in time order: the client's epoch bumps follow
them (checkers.client)."""
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.checkers.client import message_timeouts
from kafka_chaos.history.schema import SENDS_SCHEMA
from tests.checkers.conftest import MS, T, frames, send


def _sends_file(tmp_path, rows):
    sends, _ = frames(rows, [])
    path = tmp_path / "sends.parquet"
    pq.write_table(pa.Table.from_pandas(sends, schema=SENDS_SCHEMA, preserve_index=False), path)
    return path




def test_timeouts_per_producer_sorted_by_completion(tmp_path):
    rows = [send("a", outcome="info", producer="p1", t=50), send("b", outcome="info", producer="p0", t=30),
            send("c", outcome="info", producer="p1", t=10), send("d", producer="p1", t=20),
            send("e", outcome="fail", producer="p2", t=40)]
    rows[4]["error"] = "NOT_ENOUGH_REPLICAS"                 # failed, not by a client-side timeout
    got = message_timeouts(_sends_file(tmp_path, rows))
    done = {r["value"]: r["t_complete_ns"] for r in rows}
    assert set(got) == {"p0", "p1"}
    assert got["p1"].tolist() == [done["c"], done["a"]] and got["p0"].tolist() == [done["b"]]


def test_a_timeout_without_a_completion_time_is_left_out(tmp_path):
    rows = [send("a", outcome="info", t=10), send("b", outcome="info", t=20)]
    rows[1]["t_complete_ns"] = None
    assert message_timeouts(_sends_file(tmp_path, rows))["p0"].tolist() == [T + 10 * MS + 2 * MS]


def test_no_timeouts_no_producers(tmp_path):
    assert message_timeouts(_sends_file(tmp_path, [send("a"), send("b")])) == {}
