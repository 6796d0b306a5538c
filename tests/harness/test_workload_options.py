"""`run`'s workload options (--client, --consumer-mode, --commit, --transactions): refused before any container
starts when they cannot run together, and carried into the command that reproduces the run."""
import pytest

from kafka_chaos.harness.cli import main
from kafka_chaos.harness.runner import RunOptions
from tests.harness.test_run_cli import our_containers


@pytest.mark.parametrize("argv,says", [
    (["run", "leader-kill", "--client", "java", "--acks", "1", "--transactions"], "needs acks=all"),
    (["run", "leader-kill", "--acks", "1", "--transactions"], "needs acks=all"),
    (["run", "leader-kill", "--client", "java", "--acks", "1", "--idempotence"], "refuses idempotence"),
])
def test_workload_options_that_cannot_run_exit_2_before_any_container(argv, says, capsys):
    before = our_containers()
    assert main(argv) == 2
    assert says in capsys.readouterr().err
    assert our_containers() == before


def test_the_command_reproduces_the_workload_options():
    both = RunOptions("leader-isolate", acks="1", client="both", seed=1, duration_s=20).resolved()
    assert [(p.name, p.client) for p in both.profiles()] == [("p0", "librdkafka"), ("j0", "java")]
    assert "--client both" in both.command()
    group = RunOptions("leader-kill", consumer_mode="subscribe", commit="auto", consumers=3, seed=1).resolved()
    assert "--consumer-mode subscribe --commit auto --consumers 3" in group.command()
    txn = RunOptions("leader-kill", transactions=True, seed=1).resolved()
    assert txn.profiles()[0].transactional and "--transactions" in txn.command()
    assert "--client" not in txn.command() and "--consumer-mode" not in txn.command()


def test_the_java_client_runs_in_subscribe_mode_and_with_transactions():
    group = RunOptions("leader-kill", client="both", consumer_mode="subscribe", commit="manual", seed=1).resolved()
    assert "--client both --consumer-mode subscribe --commit manual" in group.command()
    txn = RunOptions("leader-kill", client="java", transactions=True, seed=1).resolved()
    assert [(p.client, p.transactional) for p in txn.profiles()] == [("java", True)]
