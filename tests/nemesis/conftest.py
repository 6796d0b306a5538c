"""Fixtures for nemesis tests: a Nemesis that records into a list and heals all at teardown."""
from __future__ import annotations

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis.control import Nemesis
from kafka_chaos.nemesis.events import EventLog


@pytest.fixture
def topic(topic, cluster):
    """The shared fresh topic, once every broker answers for it (a broker lagging on metadata says "unknown")."""
    def known_everywhere():
        try:
            for _ in range(6):      # consecutive answers, from whichever broker the client asks
                cluster.describe(topic)
        except UsageError:
            return False
        return True

    wait_until(known_everywhere, 30, f"brokers still disagree about topic {topic}")
    return topic


@pytest.fixture
def events() -> EventLog:
    return EventLog()


@pytest.fixture
def nem(cluster, events):
    """A Nemesis on the shared cluster; whatever the test did, heal-all runs and must leave nothing behind."""
    n = Nemesis(cluster, record=events)
    yield n
    problems = n.heal_all()
    assert not problems, problems
