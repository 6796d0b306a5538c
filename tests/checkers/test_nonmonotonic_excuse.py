"""An idempotent producer's `nonmonotonic_send` (acked below its previous send to the partition) is excused only by a
loss event that removed that EARLIER send: its send..ack span in the loss window of an unclean election or power
loss that came after it was sent and no later than the later send's ack (EARLIER_SEND_TRUNCATED in
checkers/judge/earlier_sends.py). A loss window around the later send alone, or an election after the later ack,
excuses nothing."""
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers.client import EARLIER_LOOKBACK_NS, ClientVoids, earlier_sends
from kafka_chaos.checkers.judge.rules import judge
from kafka_chaos.checkers.model import ModelResult
from kafka_chaos.checkers.model.config import ModelConfig
from kafka_chaos.checkers.model.windows import Cause, Window
from kafka_chaos.checkers.reference import find_anomalies
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import SENDS_SCHEMA
from tests.checkers.conftest import MS, T, fault, frames, read, send, write_run
from tests.checkers.test_verdict_truth import S as SEC
from tests.checkers.test_verdict_truth import checked, meta, steady_samples, with_times

S = 1000 * MS
EARLIER_T, LATER_T = 15 * S, 30 * S          # the earlier send (offset 100) and the later one (offset 50), from T
LATER_ACK = T + LATER_T + 2 * MS              # conftest.send acks 2 ms after the invocation


def history(tmp_path, idempotent=True, gap_s=0):
    """p0 sends to partition 0: offset 40 at 5 s, 100 at 15 s (the earlier send), a failed send at 20 s, then 50 at
    30 s + gap_s (the later send, acked below 100); p1 sends to partition 0 and p0 to partition 1 in between."""
    rows = [send("a", offset=40, t=5000, idempotent=idempotent),
            send("b", offset=100, t=EARLIER_T // MS, idempotent=idempotent),
            send("x", offset=None, outcome="fail", t=20_000, idempotent=idempotent),
            send("y", offset=101, producer="p1", t=25_000), send("z", partition=1, offset=7, t=26_000),
            send("c", offset=50, t=LATER_T // MS + gap_s * 1000, idempotent=idempotent)]
    sends, reads = frames(rows, [])
    path = tmp_path / "sends.parquet"
    pq.write_table(pa.Table.from_pandas(sends, schema=SENDS_SCHEMA, preserve_index=False), path)
    found = find_anomalies(sends, reads)
    return found[found["kind"] == "nonmonotonic_send"].reset_index(drop=True), path


def model(start_s, end_s, cause_t_ns, partition=0) -> ModelResult:
    """A model whose one loss window (an unclean election's) holds partition's writes of start_s..end_s."""
    cause = Cause("election p0 e3", cause_t_ns, "the election of broker 2 uncleanly, epoch 3")
    window = Window(partition, T + start_s * S, T + end_s * S, ("1", "all"),
                    "unclean election: uncleanly (broker 2, epoch 3) lacked writes of epoch 2", cause)
    cfg = ModelConfig(kafka_version="4.1.0", partitions=3, replication_factor=3, min_insync_replicas=1,
                      acks=("all",))
    return ModelResult(cfg, risk=[window], unavailable=[], truncations=[], events=[])


def judged(tmp_path, m: ModelResult, **kw) -> pd.Series:
    rows, path = history(tmp_path, **kw)
    assert len(rows) == 1 and rows["value"].iloc[0] == "c"
    meta = RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=1, kafka_version="4.1.0")
    return judge(rows, meta, m, client_voids=ClientVoids(sends_file=str(path))).iloc[0]


def test_the_earlier_send_is_the_previous_ok_send_of_the_same_producer_and_partition(tmp_path):
    rows, path = history(tmp_path)
    earlier = earlier_sends(path, rows).iloc[0]
    assert (earlier["op_id"], earlier["offset"], earlier["t_invoke_ns"]) == (1, 100, T + EARLIER_T)


def test_an_earlier_send_beyond_the_first_lookback_is_still_found(tmp_path):
    rows, path = history(tmp_path, gap_s=EARLIER_LOOKBACK_NS // S + 60)
    assert earlier_sends(path, rows)["offset"].iloc[0] == 100


def test_a_send_acked_below_its_earlier_send_truncated_by_an_unclean_election_before_its_ack_is_allowed(tmp_path):
    row = judged(tmp_path, model(10, 20, T + 25 * S))
    assert row["classification"] == "allowed"
    assert (row["excuse"], row["cause_id"], row["cause_t_ns"]) == \
        ("nonmonotonic_send.earlier_send_truncated", "election p0 e3", T + 25 * S)
    assert "its earlier send (op 1, acked at offset 100) lay in the loss window; allowed by" in row["reason"]


def test_an_election_after_the_later_send_was_acked_excuses_nothing(tmp_path):
    # the same window holds both sends, but the cut came after the later one was acked below the earlier one
    row = judged(tmp_path, model(10, 31, LATER_ACK + 1))
    assert row["classification"] == "violation" and pd.isna(row["excuse"])
    assert "idempotent, which forbids this" in row["reason"]


def test_a_loss_window_around_the_later_send_only_excuses_nothing(tmp_path):
    # the window holds the later send's own span, not the earlier one: the later write was appended after the cut
    assert judged(tmp_path, model(28, 31, T + 29 * S))["classification"] == "violation"


def test_a_loss_window_that_misses_the_earlier_send_excuses_nothing(tmp_path):
    assert judged(tmp_path, model(16, 31, T + 25 * S))["classification"] == "violation"


def test_a_loss_window_of_another_partition_excuses_nothing(tmp_path):
    assert judged(tmp_path, model(10, 20, T + 25 * S, partition=1))["classification"] == "violation"


@pytest.mark.parametrize("cause_t_ns, expected", [
    (LATER_ACK, "allowed"), (LATER_ACK + 1, "violation"),                      # at the later ack: still before it
    (T + EARLIER_T, "allowed"), (T + EARLIER_T - 1, "violation")])            # at the earlier send: it existed
def test_the_election_must_fall_between_the_earlier_send_and_the_later_ack(tmp_path, cause_t_ns, expected):
    assert judged(tmp_path, model(10, 20, cause_t_ns))["classification"] == expected


def test_a_producer_without_idempotence_is_allowed_by_its_setting_not_by_a_loss(tmp_path):
    row = judged(tmp_path, model(10, 20, LATER_ACK + 1), idempotent=False)
    assert row["classification"] == "allowed" and row["excuse"] == "setting"
    assert row["cause_id"] == "meta.json: no idempotence"


def test_without_the_sends_file_the_earlier_send_is_unknown_and_nothing_is_excused(tmp_path):
    rows, _ = history(tmp_path)
    meta = RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=1, kafka_version="4.1.0")
    assert judge(rows, meta, model(10, 20, T + 25 * S))["classification"].iloc[0] == "violation"


# -- end to end: `kafka-chaos check` on a cascade with an unclean election -----------------------------------------

def unclean_truncation(tmp_path, move):
    """Followers 2 and 3 die at 10/12 s, leader 1 at 14 s; 2 comes back at 30 s and is elected uncleanly (3.9.2, min
    ISR 1), lacking what 1 appended alone: p0's send acked at offset 5 at 13 s. p0's next send, at 40 s, is acked at
    offset 1 of the elected log. Moves: the cascade 100 s later (the earlier send was on every replica by then),
    the later send acked at 20 s, before the election (nothing had cut the log yet). The ablation contract of
    tests/checkers/test_excuse_ablation.py: (classifications, excuses, reasons) of the nonmonotonic sends."""
    shift = 100 * SEC if move == "cause later" else 0
    t_later = 20 * SEC if move == "later write before the cause" else 40 * SEC
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True)
    faults = [fault(shift + 10 * SEC, "start", "kill", [2], signal="SIGKILL"),
              fault(shift + 12 * SEC, "start", "kill", [3]), fault(shift + 14 * SEC, "start", "kill", [1]),
              fault(shift + 30 * SEC, "heal", "kill", [2]), fault(shift + 50 * SEC, "heal", "kill", [3]),
              fault(shift + 52 * SEC, "heal", "kill", [1])]
    sends = [send("a", offset=0, t=1 * SEC), send("b", offset=5, t=13 * SEC), send("c", offset=1, t=t_later)]
    reads = [read("a", offset=0, t=200 * SEC), read("c", offset=1, t=200 * SEC)]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * SEC), **with_times(m, 240 * SEC))
    _, _, rows = checked(run)
    found = rows[rows["kind"] == "nonmonotonic_send"]
    return list(found["classification"]), list(found["excuse"]), list(found["reason"])


def test_check_allows_a_send_acked_below_an_earlier_send_an_unclean_election_cut_and_names_the_election(tmp_path):
    classes, excuse, reasons = unclean_truncation(tmp_path, "none")
    assert classes == ["allowed"] and excuse == ["nonmonotonic_send.earlier_send_truncated"], reasons
    assert "election p0" in reasons[0]


@pytest.mark.parametrize("move", ["cause later", "later write before the cause"])
def test_check_calls_it_a_violation_when_the_election_did_not_cut_the_earlier_send_first(tmp_path, move):
    classes, excuse, reasons = unclean_truncation(tmp_path, move)
    assert classes == ["violation"] and not any(isinstance(e, str) for e in excuse), reasons


def test_an_election_in_either_timing_the_model_replays_may_be_the_one_that_cut_the_earlier_send(tmp_path):
    late = model(10, 20, LATER_ACK + 1)
    late.alternatives = [model(10, 20, T + 25 * S)]
    assert judged(tmp_path, late)["classification"] == "allowed"
    late.alternatives = [model(10, 20, LATER_ACK + 5)]
    assert judged(tmp_path, late)["classification"] == "violation"


# -- a duplicate: the loss event must come after its first copy was sent ------------------------------------------

def judged_duplicate(tmp_path, m: ModelResult) -> pd.Series:
    """p0's value d, sent at 15 s and acked at offset 3, read at offsets 3 and 9."""
    sends, reads = frames([send("d", offset=3, t=EARLIER_T // MS)],
                          [read("d", offset=3, t=16_000), read("d", offset=9, t=40_000)])
    found = find_anomalies(sends, reads)
    rows = found[found["kind"] == "duplicate"].reset_index(drop=True)
    meta = RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=1, kafka_version="4.1.0")
    return judge(rows, meta, m).iloc[0]


@pytest.mark.parametrize("cause_t_ns, expected", [
    (T + 25 * S, "allowed"), (T + EARLIER_T, "allowed"), (T + EARLIER_T - 1, "violation"), (T + 12 * S, "violation")])
def test_a_duplicate_is_excused_only_by_a_loss_event_after_its_first_copy_was_sent(tmp_path, cause_t_ns, expected):
    row = judged_duplicate(tmp_path, model(10, 20, cause_t_ns))
    assert row["classification"] == expected, row["reason"]
    if expected == "allowed":
        assert (row["excuse"], row["cause_id"], row["cause_t_ns"]) == ("loss_event", "election p0 e3", cause_t_ns)
