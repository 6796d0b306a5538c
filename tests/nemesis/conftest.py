"""Fixtures for nemesis tests: a Nemesis that records into a list and heals all at teardown."""
from __future__ import annotations

import pytest

from nemesis.control import Nemesis
from nemesis.events import EventLog


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
