"""`kafka-chaos run` and `scenarios`: bad input fails with exit 2 before any container starts."""
import os

import pytest

import docker
from kafka_chaos.cluster.kafka_cluster import LABEL_OWNER
from kafka_chaos.harness.cli import main
from kafka_chaos.harness.runner import RunOptions
from kafka_chaos.harness.scenarios import CATALOG


def our_containers() -> int:
    """Containers this process's runs own (`main` runs in it): other runs on the machine do not count."""
    mine = {"label": f"{LABEL_OWNER}={os.getpid()}"}
    try:
        return len(docker.from_env().containers.list(all=True, ignore_removed=True, filters=mine))
    except docker.errors.DockerException:
        return 0


def test_scenarios_lists_every_scenario_with_a_line_each(capsys):
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == list(CATALOG)
    assert all(len(ln.split()) > 3 for ln in lines)


@pytest.mark.parametrize("argv,says", [
    (["run", "no-such-scenario"], "leader-kill"),                                   # lists the valid ones
    (["run", "leader-kill", "--acks", "2"], "0, 1 or all"),
    (["run", "leader-kill", "--acks", "1", "--idempotence"], "rejects this profile"),
    (["run", "leader-kill", "--min-isr", "4"], "between 1 and"),
    (["run", "leader-kill", "--duration", "-5"], "positive"),
])
def test_bad_input_exits_2_naming_the_remedy_before_any_container_starts(argv, says, capsys):
    before = our_containers()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "remedy" in err
    assert our_containers() == before


def test_the_recorded_command_reproduces_the_options():
    opts = RunOptions("leader-isolate", acks="1", min_isr=2, seed=42, duration_s=30).resolved()
    assert opts.idempotence is False          # acks=1 cannot be idempotent: off by default
    cmd = opts.command()
    assert cmd.startswith("kafka-chaos run leader-isolate --acks 1 --min-isr 2 --no-idempotence")
    assert "--seed 42" in cmd and "--duration 30" in cmd


def test_acks_all_is_idempotent_by_default_like_the_java_client():
    assert RunOptions("leader-kill", acks="all", seed=1).resolved().idempotence is True


@pytest.mark.parametrize("name", list(CATALOG))
def test_every_scenario_plans_the_same_schedule_for_the_same_seed(name):
    sc = CATALOG[name]
    for duration in (20, 60, 600):
        plan = sc.plan(7, duration)
        assert plan, f"{name} plans no fault in {duration} s"
        assert plan == sc.plan(7, duration)
        assert all(0 <= s.start_s < s.heal_s <= duration for s in plan)


def test_a_different_seed_gives_a_different_random_mix():
    assert CATALOG["random-mix"].plan(1, 300) != CATALOG["random-mix"].plan(2, 300)
