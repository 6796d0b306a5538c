"""The chaos tests' oracle table itself, pinned at the cells whose rule is sharpest (no Docker)."""
from tests.chaos.expected_cells import NEVER, POSSIBLE, SCENARIOS, Profile, expected_cell

SAFE, LEADER_ONLY, UNCLEAN = Profile("all", 2, False), Profile("1", 2, False), Profile("1", 1, True)


def test_acks_all_min_isr_2_without_unclean_election_loses_nothing_under_any_fault_but_power_loss():
    for name, facts in SCENARIOS.items():
        if facts.power is None:
            assert expected_cell(name, SAFE).loss == NEVER, name


def test_acks_1_under_a_leader_fault_may_lose_writes_but_never_a_record_a_consumer_read_without_unclean_election():
    cell = expected_cell("leader-kill", LEADER_ONLY)
    assert (cell.loss, cell.read_loss) == (POSSIBLE, NEVER)
    assert expected_cell("leader-kill", UNCLEAN).read_loss == POSSIBLE


def test_a_restarted_kraft_controller_fences_nobody_while_a_zookeeper_controller_is_a_leading_broker():
    assert expected_cell("controller-kill", LEADER_ONLY, "4.4.0", "kraft").loss == NEVER
    assert expected_cell("controller-kill", LEADER_ONLY, "3.9.2", "zookeeper").loss == POSSIBLE


def test_a_power_loss_of_every_replica_may_lose_committed_records_at_any_setting():
    assert expected_cell("power-loss-all", SAFE).loss == POSSIBLE
    assert expected_cell("power-loss-all", SAFE).read_loss == POSSIBLE
    assert expected_cell("leader-power-loss", SAFE, "4.1.0").loss == NEVER
    assert expected_cell("leader-power-loss", SAFE, "4.0.0").loss == POSSIBLE
