"""Excuse timings at the model's own edges (found by an adversarial review of issue 48's excuses): the two replays'
windows of one event keep their own causes, and a zombie leader's writes after the election are blamed on its
truncation, not on the election before them. Each beside a counter-case where the same event cannot be the cause."""
import pandas as pd
import pytest

from kafka_chaos.checkers import instances
from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.judge import rules
from kafka_chaos.checkers.model import FaultEffect
from kafka_chaos.history.meta import RunMeta
from tests.checkers.adversarial.scenarios import CONTROLLER, T0, at, cut, kraft, proc, replay


def _meta():
    return RunMeta(run_id="r", partitions=1, replication_factor=3, min_insync_replicas=1, kafka_version="4.4.0",
                   producers=({"name": "p0", "acks": "all", "idempotent": True},), start_ns=T0)


def lost_after_read(sent_s: float, read_s: float):
    rows = instances.typed(pd.DataFrame({
        "kind": ["lost_after_read"], "partition": [0], "offset": [500], "value": ["0-1"], "producer": ["p0"],
        "acks": ["all"], "idempotent": [True], "t_invoke_ns": [at(sent_s)], "t_complete_ns": [at(sent_s) + 2_000_000],
        "t_read_ns": [at(read_s)], "multiplicity": [1]}))
    return rows


def judged(model, rows):
    cls, why, claims = rules.Judge(_meta(), model, Completeness(1)).committed_lost(rows, "committed")
    return cls[0], why[0], claims[0]


@pytest.fixture(scope="module")
def late_power_loss():
    """All three brokers lose power; the fault took effect somewhere in [50 s, 53 s] (applied_ns): the recorded
    replay cuts the page caches at 50 s, the late one at 53 s (KIP-966's last replica standing)."""
    pl = FaultEffect(t_ns=at(50), action="start", effect="power_loss", nodes=(1, 2, 3), fault="power_loss",
                     applied_ns=at(53))
    heal = FaultEffect(t_ns=at(60), action="heal", effect="power_loss", nodes=(1, 2, 3), fault="power_loss")
    return replay(kraft(acks=("all",)), [pl, heal], until=200)


@pytest.mark.parametrize("sent_s, expected", [(49, "allowed"), (51, "allowed"), (52.9, "allowed"),
                                              (54, "violation")])
def test_a_committed_write_is_lost_to_a_late_applied_power_loss_only_if_written_before_it_took_effect(
        late_power_loss, sent_s, expected):
    cls, why, claim = judged(late_power_loss, lost_after_read(sent_s, sent_s + 0.5))
    assert cls == expected, why
    assert (claim is not None) == (expected == "allowed")


@pytest.fixture(scope="module")
def zombie():
    """KRaft, unclean election on, min ISR 1. Broker 3 dies, broker 2 is cut from leader 1 and leaves the ISR. At 60 s
    leader 1 is cut from the controller and broker 2 but still reaches the clients: fenced at ~69 s, broker 2
    elected uncleanly. Leader 1, alone in its ISR view, keeps acking acks=all and advancing its high watermark
    (Partition.appendRecordsToLeader checks its local ISR), consumers read those writes, and at the heal (120 s) it
    truncates them to broker 2's log (AbstractFetcherThread.truncateToEpochEndOffsets, KIP-101)."""
    cfg = kraft(acks=("all",), min_isr=1, unclean=True, elr=False)
    faults = [proc("kill", 3, 1), cut([(1, 2)], 2), cut([(1, CONTROLLER), (1, 2)], 60, name="iso"),
              cut([(1, CONTROLLER), (1, 2)], 120, action="heal", name="iso")]
    return replay(cfg, faults, until=200)


def test_a_zombie_leaders_committed_write_after_the_election_is_blamed_on_its_truncation(zombie):
    cls, why, claim = judged(zombie, lost_after_read(100, 101))
    assert cls == "allowed", why
    assert claim.cause.id.startswith("zombie p0") and claim.cause.t_ns >= at(100)


def test_a_write_before_the_election_is_still_blamed_on_the_election(zombie):
    cls, why, claim = judged(zombie, lost_after_read(30, 31))
    assert cls == "allowed", why
    assert claim.cause.id.startswith("election p0")


def test_a_write_after_the_heal_is_not_excused_by_the_zombie_or_the_election(zombie):
    cls, why, claim = judged(zombie, lost_after_read(180, 181))
    assert cls == "violation" and claim is None, why
