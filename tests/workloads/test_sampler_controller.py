"""The sampler reads the active controller through `docker exec`, which a busy engine sometimes fails once: it is
read again (base.waiting, not a hand-written loop), and a controller that cannot be read is null, not an error."""
from dataclasses import dataclass

from kafka_chaos.workloads.sampler import sample_rows


@dataclass
class State:
    partition: int
    leader: int
    isr: tuple


class Cluster:
    def __init__(self, answers):
        self.answers, self.asked = list(answers), 0

    def describe(self, topic, timeout):
        return [State(0, 1, (1, 2))]

    def high_watermarks(self, topic, timeout):
        return {0: 42}

    def active_controller(self):
        self.asked += 1
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_a_failed_read_is_read_again():
    cluster = Cluster([RuntimeError("exec failed"), None, 101])
    rows = sample_rows(cluster, "chaos")
    assert rows[0]["controller"] == 101 and cluster.asked == 3
    assert rows[0]["high_watermark"] == 42 and rows[0]["isr"] == [1, 2]


def test_a_controller_that_cannot_be_read_is_null():
    cluster = Cluster([RuntimeError("exec failed")] * 100)
    assert sample_rows(cluster, "chaos")[0]["controller"] is None and cluster.asked >= 2
