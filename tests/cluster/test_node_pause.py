"""A pause runc could not complete ("unable to freeze", seen on this machine under load) is asked for again; any
other Docker error is not. The engine is a stand-in here: the freezer's timeout cannot be provoked on demand."""
import docker.errors
import pytest

from kafka_chaos.cluster.node import Node


class Engine:
    """containers.get(name) -> a container whose first `failures` pauses fail with `message`."""

    def __init__(self, failures: int, message: str):
        self.containers, self.calls, self.failures, self.message, self.status = self, 0, failures, message, "running"

    def get(self, name):
        return self

    def pause(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise docker.errors.APIError(f"Cannot pause container x: {self.message}")
        self.status = "paused"


def node(engine: Engine) -> Node:
    return Node(id=1, role="broker", name="kafka-chaos-test-1", ip="172.30.0.11", client=engine)


def test_a_freeze_that_timed_out_is_asked_for_again():
    engine = Engine(failures=2, message="OCI runtime pause failed: unable to freeze: unknown")
    node(engine).pause()
    assert engine.calls == 3 and engine.status == "paused"


def test_other_pause_errors_are_raised_at_once():
    engine = Engine(failures=5, message="container is not running")
    with pytest.raises(docker.errors.APIError, match="not running"):
        node(engine).pause()
    assert engine.calls == 1
