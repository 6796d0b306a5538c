"""The ISR model's storage effects on hand-written timelines: a power loss cuts what the kernel had not written back
(expire plus the flusher's interval), a damaged minority replica loses nothing acked, a damaged quorum-state no data."""
import json

from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model

S = 1_000_000_000
T0 = 1_000 * S


def cfg(**kw):
    return ModelConfig(kafka_version="4.4.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                       elr_enabled=True, acks=("all",), **kw)


def test_a_power_loss_of_every_broker_puts_the_last_35_seconds_of_acked_writes_at_risk():
    rows = [FaultEffect(T0 + 100 * S, "start", "power_loss", (1, 2, 3), fault="power-loss-all"),
            FaultEffect(T0 + 110 * S, "heal", "power_loss", (1, 2, 3), fault="power-loss-all")]
    model = run_model(cfg(), rows, t_begin=T0, t_end=T0 + 200 * S)
    assert cfg().unflushed_ns == 35 * S                 # dirty_expire 30 s + the flusher's 5 s
    assert model.durability(0, T0 + 99 * S, "all")[0] == "at_risk"
    assert model.durability(0, T0 + 67 * S, "all")[0] == "at_risk"   # 33 s old: maybe not written back yet
    assert model.durability(0, T0 + 60 * S, "all")[0] == "guaranteed"
    assert model.predictions()["lost"] != "never"
    flushed = run_model(cfg(flush_interval_messages=1), rows, t_begin=T0, t_end=T0 + 200 * S)
    assert all(flushed.durability(0, T0 + t * S, "all")[0] == "guaranteed" for t in range(0, 200, 2))


def damage_rows(file: str):
    details = {"effect": "damage", "signal": "SIGKILL", "file": file, "mode": "flip", "topic": "chaos",
               "partition": 0}
    return [FaultEffect.from_row(T0 + 50 * S, "start", "damage", [2], json.dumps(details)),
            FaultEffect.from_row(T0 + 70 * S, "heal", "damage", [2], json.dumps(details))]


def test_a_damaged_segment_on_one_follower_loses_its_replica_but_no_acked_write():
    rows = damage_rows("segment")
    assert rows[0].damaged == (0,) and rows[0].effect == "damage"
    model = run_model(cfg(), rows, t_begin=T0, t_end=T0 + 200 * S)
    assert any(e["event"] == "damage: replica log lost" and e["node"] == 2 for e in model.events)
    assert all(model.durability(0, T0 + t * S, "all")[0] == "guaranteed" for t in range(0, 200, 2))
    assert model.predictions()["lost"] == "never"


def test_a_damaged_quorum_state_is_a_kill_and_loses_no_data():
    rows = damage_rows("quorum-state")
    assert rows[0].damaged == ()
    model = run_model(cfg(), rows, t_begin=T0, t_end=T0 + 200 * S)
    assert not any(e["event"].startswith("damage") for e in model.events)
    assert model.predictions()["lost"] == "never"
