"""A power loss of each role (leader, ISR follower, out-of-ISR follower, controller), and the one that voids
Kafka's promise: the last replica standing, elected again with its own page cache gone. Only where a power cut
removed writes from the log that became the partition's truth are acks=all writes at risk, and only then are a
rewrite and an idempotent duplicate excused (sim._blame, ModelResult.rewrite_cause / idempotence_voided)."""
import pytest

from tests.checkers.adversarial.scenarios import CONTROLLER, at, cut, durability, elected, kraft, proc, replay


def _excuses(model, t: float):
    return model.rewrite_cause(0, 5, at(t + 0.5)), model.idempotence_voided(0, at(t), at(t))


@pytest.mark.parametrize("role, faults", [
    ("leader", [proc("power_loss", 1, 100), proc("power_loss", 1, 120, "heal")]),
    ("ISR follower", [proc("power_loss", 3, 100), proc("power_loss", 3, 120, "heal")]),
    ("out-of-ISR follower", [cut([(1, 3)], 10), proc("power_loss", 3, 100), proc("power_loss", 3, 120, "heal")]),
    ("controller", [proc("power_loss", CONTROLLER, 100), proc("power_loss", CONTROLLER, 120, "heal")]),
])
def test_a_power_loss_of_any_one_role_loses_no_acks_all_write_and_excuses_nothing(role, faults):
    model = replay(kraft(), faults, until=300)
    for t in (70, 90, 99):
        assert durability(model, t, "all") == "guaranteed", (role, t)
        assert _excuses(model, t) == (None, None), (role, t)
    assert not any("power loss" in w.reason for w in model.risk), role
    if role == "leader":
        assert elected(model)[0] == (2, "from the ISR")
        assert durability(model, 99.5, "1") == "at_risk"         # the acks=1 tail 2 may not have fetched
    if role == "controller":
        assert elected(model) == [] and durability(model, 99.5, "1") == "guaranteed"


def _last_standing(effect):
    # 3.9, no ELR, min ISR 1: the followers die at 10 s and leave the ISR; broker 1 is its last member, and stays
    # in it when it goes too (PartitionChangeBuilder keeps the last replica standing). Back at 110 s it is elected
    # from the ISR with the log it recovered: after a power loss, without its last 35 s.
    return [proc("kill", 2, 10), proc("kill", 3, 10), proc(effect, 1, 100), proc(effect, 1, 110, "heal")]


def test_the_last_replica_standing_elected_after_its_own_power_loss_loses_acks_all_writes():
    model = replay(kraft(version="3.9.2", min_isr=1, elr=False), _last_standing("power_loss"), until=300)
    assert (1, "from the ISR") in elected(model)
    assert durability(model, 90, "all") == "at_risk"
    rewrite, voided = _excuses(model, 90)
    assert "power loss of broker 1" in rewrite and "power loss of broker 1" in voided
    assert durability(model, 50, "all") == "guaranteed"          # older than dirty_expire: on disk
    assert _excuses(model, 50) == (None, None)


def test_the_same_last_replica_standing_killed_instead_keeps_every_write_and_excuses_nothing():
    model = replay(kraft(version="3.9.2", min_isr=1, elr=False), _last_standing("kill"), until=300)
    assert (1, "from the ISR") in elected(model)
    assert durability(model, 90, "all") == "guaranteed"
    assert _excuses(model, 90) == (None, None)


def test_with_elr_the_last_member_back_from_a_power_loss_is_elected_as_the_last_known_leader_and_loses_them_too():
    # 4.1+: its unclean shutdown takes it out of ISR and ELR when it registers, but it is still the last known leader
    # (PartitionChangeBuilder.canElectLastKnownLeader), elected with its recovered log: an unclean election in all
    # but name, so its own power cut puts the acks=all writes it held only in its page cache at risk.
    faults = [proc("kill", 2, 10), proc("kill", 3, 10), proc("power_loss", 1, 100), proc("power_loss", 1, 110, "heal")]
    model = replay(kraft(version="4.4.0", min_isr=1), faults, until=400)
    assert any("last known leader" in how and leader == 1 for leader, how in elected(model))
    assert durability(model, 90, "all") == "at_risk"
    assert durability(model, 50, "all") == "guaranteed"
