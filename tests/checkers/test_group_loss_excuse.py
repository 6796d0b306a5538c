"""A group anomaly excused by a loss event (issue 48) only where the loss removed what it needs: a `group_skip` only
if the skipped record itself was appended in the loss window and the loss came after it (UnifiedLog.truncateTo
removes only what is above the truncation point when it happens); a `commit_backwards` or `reread_below_commit`
only if the last record the committed offset covered was appended in the window and the loss came before the
anomaly (the truncation put the committed offset out of range and auto.offset.reset started over). A loss anywhere
else on the partition's history excuses nothing."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers.groups import find
from kafka_chaos.checkers.model import ModelResult
from kafka_chaos.checkers.model.config import ModelConfig
from kafka_chaos.checkers.model.windows import Cause, Window
from kafka_chaos.history.schema import GROUP_SCHEMA, SENDS_SCHEMA
from tests.checkers.conftest import MS, T, fault, frames, read, send, write_run
from tests.checkers.test_group_checks import event
from tests.checkers.test_verdict_truth import checked, meta, steady_samples, with_times

S = 1000 * MS


def model(start_s, end_s, cause_s, partition=0) -> ModelResult:
    """A model whose one loss window (an unclean election's) holds partition's writes of start_s..end_s."""
    at = lambda s: T + round(s * S)                                           # noqa: E731
    cause = Cause("election p0 e3", at(cause_s), "the election of broker 2 uncleanly, epoch 3")
    window = Window(partition, at(start_s), at(end_s), ("1", "all"),
                    "unclean election: uncleanly (broker 2, epoch 3) lacked writes of epoch 2", cause)
    cfg = ModelConfig(kafka_version="4.1.0", partitions=3, replication_factor=3, min_insync_replicas=1,
                      acks=("all",))
    return ModelResult(cfg, risk=[window], unavailable=[], truncations=[], events=[])


def history(tmp_path, sent_s: dict[int, float]):
    """p0 holds v0..v5, sent at `sent_s` (seconds, default offset+1). c0 reads 0..3 and commits 4 at 240 s; c1 is
    assigned p0 with committed 4 at 250 s, reads 1 and 5 (1 below the committed offset; 4 never read: a skip) and
    commits 2 at 252 s (below 4). Returns (group, reads, sends file)."""
    sends = [send(f"v{i}", offset=i, t=int(sent_s.get(i, i + 1) * 1000)) for i in range(6)]
    reads = [read(f"v{o}", offset=o, consumer="c0", t=239_000 + o) for o in range(4)]
    reads += [read("v1", offset=1, consumer="c1", t=251_000), read("v5", offset=5, consumer="c1", t=251_500)]
    reads += [read(f"v{i}", offset=i, t=300_000) for i in range(6)]
    s, r = frames(sends, reads)
    path = tmp_path / "sends.parquet"
    pq.write_table(pa.Table.from_pandas(s, schema=SENDS_SCHEMA, preserve_index=False), path)
    group = pa.Table.from_pylist([event("c0", 0, "assigned"), event("c0", 240_000, "commit", offset=4),
                                  event("c0", 245_000, "revoked"), event("c1", 250_000, "assigned", offset=4),
                                  event("c1", 252_000, "commit", offset=2)], schema=GROUP_SCHEMA).to_pandas()
    return group, r, path


def judged(tmp_path, m, sent_s=None) -> dict:
    group, reads, path = history(tmp_path, sent_s or {})
    rows = find(group, reads, m, sends_file=path)
    return {k: rows[rows["kind"] == k].iloc[0].to_dict() for k in
            ("group_skip", "commit_backwards", "reread_below_commit")}


def test_a_loss_window_that_held_the_records_excuses_the_group_anomalies_and_names_the_election(tmp_path):
    # v4 (the skip) and v3 (the committed offset 4's last record) were sent at 4-5 s, in the window; the election
    # at 246 s came after them and before the lower commit (252 s) and the re-read (251 s)
    found = judged(tmp_path, model(3, 6, 246))
    for kind, excuse in (("group_skip", "loss_event"), ("commit_backwards", "group.committed_offset_truncated"),
                         ("reread_below_commit", "group.committed_offset_truncated")):
        row = found[kind]
        assert row["classification"] == "allowed", (kind, row["reason"])
        assert (row["excuse"], row["cause_id"], row["cause_t_ns"]) == (excuse, "election p0 e3", T + 246 * S), kind
        assert "allowed by " + excuse in row["reason"]


def test_a_loss_late_in_the_run_whose_window_holds_later_writes_excuses_nothing_early(tmp_path):
    # the case: an unclean election at 260 s whose window holds writes of 198-230 s; the records were sent
    # in the first seconds, below any truncation point it had
    found = judged(tmp_path, model(198, 230, 260))
    assert {r["classification"] for r in found.values()} == {"violation"}
    assert all(r["excuse"] is None for r in found.values())


def test_a_loss_of_another_partition_excuses_nothing(tmp_path):
    found = judged(tmp_path, model(3, 6, 246, partition=1))
    assert {r["classification"] for r in found.values()} == {"violation"}


def test_a_loss_before_the_skipped_record_was_sent_excuses_nothing(tmp_path):
    # the window meets v4's span, but the election (4 s) came before v4 was sent (5 s): it cannot have removed it
    found = judged(tmp_path, model(3, 6, 4))
    assert found["group_skip"]["classification"] == "violation"


def test_a_loss_after_the_lower_commit_excuses_neither_it_nor_the_reread(tmp_path):
    # the window holds v3, but the election at 253 s came after the lower commit (252 s) and the re-read (251 s)
    found = judged(tmp_path, model(3, 6, 253))
    assert found["commit_backwards"]["classification"] == found["reread_below_commit"]["classification"] \
        == "violation"
    assert found["group_skip"]["classification"] == "allowed"       # v4 was appended in the window, before it


@pytest.mark.parametrize("cause_s, skip, back, reread", [
    (5, "allowed", "allowed", "allowed"),              # at v4's send: it existed
    (4.999, "violation", "allowed", "allowed"),         # before v4's send, after v3's (4 s)
    (251, "allowed", "allowed", "allowed"),             # at the re-read
    (251.001, "allowed", "allowed", "violation"),       # after the re-read, before the lower commit's answer
    (252, "allowed", "allowed", "violation"),           # at the lower commit's answer
    (252.001, "allowed", "violation", "violation")])
def test_the_loss_must_come_after_the_record_and_no_later_than_the_anomaly(tmp_path, cause_s, skip, back, reread):
    found = judged(tmp_path, model(3, 6, cause_s))
    assert (found["group_skip"]["classification"], found["commit_backwards"]["classification"],
            found["reread_below_commit"]["classification"]) == (skip, back, reread)


def test_the_window_must_meet_the_records_send_to_ack(tmp_path):
    # v4 sent at 5 s and acked 2 ms later; v3 at 4 s: a window starting 1 ms after v4's ack misses both
    assert judged(tmp_path, model(5.003, 9, 246))["group_skip"]["classification"] == "violation"
    assert judged(tmp_path, model(5.002, 9, 246))["group_skip"]["classification"] == "allowed"
    found = judged(tmp_path, model(4.003, 4.5, 246))
    assert found["commit_backwards"]["classification"] == "violation"


def test_without_the_sends_file_nothing_is_excused_by_a_loss(tmp_path):
    group, reads, _ = history(tmp_path, {})
    rows = find(group, reads, model(0, 300, 246))
    judged_kinds = rows[rows["kind"].isin(["group_skip", "commit_backwards", "reread_below_commit"])]
    assert set(judged_kinds["classification"]) == {"violation"}


# -- end to end: the cascade with an unclean election (test_excuse_ablation.py's) ---------------------------------

def _cascade(shift_s: int) -> list[dict]:
    at = [(10, "start", 2), (12, "start", 3), (14, "start", 1), (30, "heal", 2), (50, "heal", 3), (52, "heal", 1)]
    return [fault((shift_s + t) * 1000, action, "kill", [n]) for t, action, n in at]


def _group_cascade_run(tmp_path, move, t_b_s=13, lower_commit_s=40):
    """Followers 2 and 3 die at 10/12 s, leader 1 at 14 s; 2 comes back at 30 s and is elected uncleanly (3.9.2,
    min ISR 1), lacking what 1 appended alone: b, sent at `t_b_s`, at offset 5. c0 reads 0..3 and 5 (4 is
    skipped... by the group) and commits 6 at 14 s; c1 is assigned p0 with committed 6 at 35 s and commits 2 at
    `lower_commit_s`."""
    shift = 100 if move == "cause later" else 0
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True)
    values = {i: f"v{i}" for i in range(6)}
    values[5] = "b"
    t_sent = {i: i + 1 for i in range(5)} | {5: t_b_s}
    t_sent[4] = t_b_s - 0.5                                      # the skipped record, just before b
    sends = [send(values[i], offset=i, t=int(t_sent[i] * 1000)) for i in range(6)]
    live = [read(values[o], offset=o, consumer="c0", t=int(t_b_s * 1000) + 100 + o) for o in (0, 1, 2, 3, 5)]
    final = [read(values[i], offset=i, t=200_000) for i in range(6)]
    run = write_run(tmp_path / "r", sends, live + final, _cascade(shift), steady_samples(10_000),
                    consumer_mode="subscribe", consumer_commit="manual", **with_times(m, 240_000))
    events = [event("c0", 0, "assigned"), event("c0", int(t_b_s * 1000) + 500, "commit", offset=6),
              event("c0", 34_000, "revoked"), event("c1", 35_000, "assigned", offset=6),
              event("c1", lower_commit_s * 1000, "commit", offset=2)]
    pq.write_table(pa.Table.from_pylist(events, schema=GROUP_SCHEMA), run / "history/group.parquet")
    return run


def _classes(run, kind):
    _, _, rows = checked(run)
    found = rows[rows["kind"].isin(kind)]
    return list(found["classification"]), list(found["excuse"]), list(found["reason"])


def truncated_commit(tmp_path, move):
    """A commit below the committed offset 6, whose last record b the unclean election removed before the lower
    commit. Moves: the cascade 100 s later (b was on every replica by then), the lower commit answered at 20 s,
    before the election. The ablation contract of test_excuse_ablation.py."""
    lower = 20 if move == "anomaly before the cause" else 40
    return _classes(_group_cascade_run(tmp_path, move, lower_commit_s=lower), ["commit_backwards"])


def skipped_in_the_window(tmp_path, move):
    """A group skip of a record appended on broker 1 alone just before the cascade; moved: the cascade 100 s later,
    the records written at 70 s, after the heal."""
    return _classes(_group_cascade_run(tmp_path, move, t_b_s=70 if move == "write after the cause" else 13,
                                       lower_commit_s=80), ["group_skip"])


def test_check_allows_a_commit_below_what_an_unclean_election_truncated_and_names_the_election(tmp_path):
    classes, excuse, reasons = truncated_commit(tmp_path, "none")
    assert classes == ["allowed"] and excuse == ["group.committed_offset_truncated"], reasons
    assert "election p0" in reasons[0]


@pytest.mark.parametrize("move", ["cause later", "anomaly before the cause"])
def test_check_calls_the_lower_commit_a_violation_when_the_election_did_not_cut_its_offset_first(tmp_path, move):
    classes, excuse, reasons = truncated_commit(tmp_path, move)
    assert classes == ["violation"] and not any(isinstance(e, str) for e in excuse), reasons


def test_check_allows_a_skip_of_a_record_the_election_cut_and_not_when_moved(tmp_path):
    classes, excuse, reasons = skipped_in_the_window(tmp_path, "none")
    assert classes == ["allowed"] and excuse == ["loss_event"], reasons
    for move in ("cause later", "write after the cause"):
        classes, _, reasons = skipped_in_the_window(tmp_path / move.replace(" ", "-"), move)
        assert classes == ["violation"], (move, reasons)
