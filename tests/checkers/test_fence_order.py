"""Brokers whose sessions lapse together are fenced one at a time, stalest first; the order decides the last ISR
member and so, with ELR, the last known leader. The controller's log says the order, and the model follows it."""
import pandas as pd

from kafka_chaos.checkers.model import ModelConfig, run_model
from tests.checkers.conftest import MS, T, fault

S = 1000 * MS
CFG = ModelConfig(kafka_version="4.4.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                  elr_enabled=True, controllers=(101,), brokers=(1, 2, 3), broker_session_timeout_ms=6_000)
POWER_LOSS_ALL = pd.DataFrame([fault(30_000, "start", "power_loss", [1, 2, 3]),
                               fault(43_000, "heal", "power_loss", [1, 2, 3])])
LEADER_1 = pd.DataFrame({"t_ns": [T], "partition": [0], "leader": [1], "isr": [[1, 3, 2]]})
UNFENCED = {3: [T + 69_800 * MS], 1: [T + 70_400 * MS], 2: [T + 70_900 * MS]}


def last_leader(fences):
    model = run_model(CFG, POWER_LOSS_ALL, LEADER_1, t_begin=T, t_end=T + 90 * S, unfences=UNFENCED, fences=fences)
    return [(e["leader"], e["how"]) for e in model.events if e["event"] == "leader" and not e.get("transient")][-1]


def test_the_logged_fencing_order_makes_the_last_isr_member_fenced_the_last_known_leader():
    # as the controller logged it on 2026-11-27: 1 and 3 at 36.5 s, 2 at 36.6 s
    fences = {1: [T + 36_500 * MS], 3: [T + 36_510 * MS], 2: [T + 36_600 * MS]}
    assert last_leader(fences) == (2, "as the last known leader (ISR and ELR empty)")


def test_another_logged_order_elects_another_broker():
    fences = {1: [T + 36_500 * MS], 2: [T + 36_510 * MS], 3: [T + 36_600 * MS]}
    assert last_leader(fences) == (3, "as the last known leader (ISR and ELR empty)")
