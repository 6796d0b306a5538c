"""Excuses name their cause: an allowed instance in anomalies.parquet carries the excuse rule, the cause's id and
its time (checkers.excuses), and an excuse whose cause came before the record existed is refused."""
import numpy as np
import pytest

from kafka_chaos.checkers import excuses
from kafka_chaos.checkers.judge.claims import claim_columns, window_claims
from kafka_chaos.checkers.model.windows import Cause, Window
from tests.checkers.conftest import MS, T, fault, read, send, write_run
from tests.checkers.test_verdict_truth import S, checked, meta, steady_samples, with_times


def cascade_run(tmp_path, **kw):
    """Followers 2 and 3 die, then leader 1; out-of-sync 2 comes back first and is elected uncleanly."""
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True, **kw)
    faults = [fault(10 * S, "start", "kill", [2], signal="SIGKILL"), fault(12 * S, "start", "kill", [3]),
              fault(14 * S, "start", "kill", [1]), fault(30 * S, "heal", "kill", [2]),
              fault(50 * S, "heal", "kill", [3]), fault(52 * S, "heal", "kill", [1])]
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=13 * S)]
    reads = [read("a", offset=0, consumer="c0", t=2 * S), read("b", offset=1, consumer="c0", t=13 * S + 100),
             read("a", offset=0, t=100 * S)]
    return write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m))


def test_a_write_lost_to_an_unclean_election_names_the_election_by_id_and_time(tmp_path):
    code, verdict, rows = checked(cascade_run(tmp_path))
    lost = rows[rows["kind"].isin(["lost", "lost_after_read"])]
    assert set(lost["classification"]) == {"allowed"}
    assert set(lost["excuse"]) == {"loss_event"}
    assert all(cid.startswith("election p0 e") for cid in lost["cause_id"])
    # the unclean election comes once broker 2 is back (30 s), after the write it lost (13 s)
    assert (lost["cause_t_ns"] >= T + 13 * S * MS).all() and (lost["cause_t_ns"] <= T + 40 * S * MS).all()
    assert verdict["model"]["events"] and code == 0


def test_a_violation_names_no_cause(tmp_path):
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=2 * S)]
    reads = [read("a", offset=0, consumer="c0", t=3 * S), read("b", offset=1, consumer="c0", t=3 * S),
             read("a", offset=0, t=100 * S)]
    faults = [fault(10 * S, "start", "kill", [1], signal="SIGKILL"), fault(40 * S, "heal", "kill", [1])]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(120 * S), **with_times(meta()))
    _, _, rows = checked(run)
    bad = rows[rows["classification"] == "violation"]
    assert len(bad) and bad["excuse"].isna().all() and bad["cause_id"].isna().all() and bad["cause_t_ns"].isna().all()


ELECTION = Cause("election p0 e2", 30_000, "the election of broker 2 uncleanly, epoch 2")


@pytest.mark.parametrize("sent, holds", [(29_999, True), (30_000, True), (30_001, False), (None, True)])
def test_a_loss_event_excuses_only_records_that_existed_before_it(sent, holds):
    w = Window(0, 0, 40_000, ("all",), "unclean election", ELECTION)
    claims = window_claims(excuses.LOSS_EVENT, np.array([w], dtype=object), [sent])
    assert (claims[0] is not None) == holds
    assert (excuses.claim(excuses.LOSS_EVENT, ELECTION, excuses.Times(sent=sent)) is not None) == holds


def test_rows_one_window_excuses_share_its_claim_and_get_its_columns():
    w = Window(0, 0, 40_000, ("all",), "unclean election", ELECTION)
    claims = window_claims(excuses.LOSS_EVENT, np.array([w, None, w], dtype=object), [1, 2, 3])
    assert claims[0] is claims[2] and claims[1] is None
    excuse, cause_id, t = claim_columns(claims)
    assert list(excuse) == ["loss_event", None, "loss_event"]
    assert list(cause_id) == ["election p0 e2", None, "election p0 e2"]
    assert t.tolist()[0] == 30_000 and t.isna().tolist() == [False, True, False]


def test_every_excuse_rule_is_declared_once_with_its_mechanism_and_timing():
    assert {"loss_event", "model_risk"} <= set(excuses.RULES)
    for r in excuses.RULES.values():
        assert r.kinds and r.mechanism and r.timing
    with pytest.raises(ValueError):
        excuses.rule("loss_event", ("lost",), "again", "again", lambda c, t: True)


def test_the_report_shows_each_allowed_example_s_excuse_and_cause(tmp_path):
    from kafka_chaos.harness.cli import main
    run = cascade_run(tmp_path)
    checked(run)
    assert main(["report", str(run)]) == 0
    html = (run / "report.html").read_text()
    assert "excuse: cause" in html and "loss_event: election p0 e" in html
