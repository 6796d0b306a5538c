"""Which broker is the ZooKeeper-mode controller, read from ZooKeeper's `dump` answer (the format ZooKeeper 3.4 to
3.8 print), without a cluster."""
from kafka_chaos.cluster.zookeeper import controller_from_dump, ephemerals, registered_brokers

DUMP = """SessionTracker dump:
Session Sets (3)/(3):
0 expire at Mon Nov 23 13:50:12 UTC 2026:
3 expire at Mon Nov 23 13:50:18 UTC 2026:
\t0x1000022f0b90000
\t0x1000022f0b90001
\t0x1000022f0b90002
ephemeral nodes dump:
Sessions with Ephemerals (3):
0x1000022f0b90001:
\t/brokers/ids/2
0x1000022f0b90000:
\t/brokers/ids/1
0x1000022f0b90002:
\t/controller
\t/brokers/ids/3
Connections dump:
Connections Sets (1)/(1):
"""


def test_the_controller_is_the_broker_whose_session_holds_the_controller_znode():
    assert ephemerals(DUMP)["0x1000022f0b90002"] == ["/controller", "/brokers/ids/3"]
    assert controller_from_dump(DUMP) == 3
    assert registered_brokers(DUMP) == [1, 2, 3]


def test_no_controller_while_an_election_is_on():
    no_controller = DUMP.replace("\t/controller\n", "")
    assert controller_from_dump(no_controller) is None
    assert registered_brokers(no_controller) == [1, 2, 3]
    assert controller_from_dump("ephemeral nodes dump:\nSessions with Ephemerals (0):\n") is None
