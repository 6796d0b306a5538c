"""The live display (rich): on a terminal, progress with elapsed and remaining time, rates, faults and each
partition's leader/ISR; elsewhere plain log lines. Set-up steps: a spinner on a terminal, two log lines otherwise."""
import io
import logging
import re
import time
from dataclasses import dataclass

from rich.console import Console

from kafka_chaos.base import progress
from kafka_chaos.harness.live import LiveDisplay, Snapshot, plain_line, setup_progress


@dataclass
class Stats:
    ok: int
    fail: int
    info: int
    reads: int = 0
    sends_per_s: float = 0.0


class FakeWorkload:
    """Counters that grow like a workload's: 100 ok, 3 failed, 1 indeterminate per call."""
    def __init__(self):
        self.n = 0

    def stats(self):
        self.n += 1
        return Stats(100 * self.n, 3 * self.n, self.n, reads=50 * self.n, sends_per_s=1234)


@dataclass
class Partition:
    partition: int
    leader: int | None
    isr: list


class FakeCluster:
    def describe(self, topic, timeout):
        return [Partition(0, 2, [2, 3]), Partition(1, None, [1])]


@dataclass
class Fault:
    name: str


class FakeNemesis:
    active = [Fault("leader-isolate")]


def snapshot(**kw):
    base = dict(elapsed_s=12.4, duration_s=60, ok=900, fail=2, info=1, reads=400, sends_per_s=80.0,
                rates=(75.0, 0.5, 0.0), faults=("leader-kill",), partitions=((0, 1, (1, 2)), (1, None, (3,))))
    return Snapshot(**(base | kw))


def test_plain_line_says_elapsed_and_left_without_a_negative_sign():
    line = plain_line("workload", snapshot())
    assert line.startswith("[workload] 12s of 60s, 48s left")
    assert "ok 900 fail 2 info 1 (75/0/0 per s)" in line and "faults: leader-kill" in line
    assert "leader/ISR p0:1/1,2 p1:-/3" in line
    assert ", 0s left" in plain_line("drain", snapshot(elapsed_s=70))
    assert "leader/ISR unavailable" in plain_line("workload", snapshot(partitions=None, faults=()))


def test_on_a_terminal_the_display_draws_progress_rates_faults_and_isr():
    out = io.StringIO()
    display = LiveDisplay(enabled=True, out=out)
    display.console = Console(file=out, force_terminal=True, width=120, color_system=None)
    display.phase("workload")
    t0 = time.monotonic()
    display.watch(FakeCluster(), "chaos", FakeWorkload(), FakeNemesis(), duration_s=2.5)
    assert 2.4 < time.monotonic() - t0 < 5
    text = out.getvalue()
    assert "workload" in text and "0:00:02" in text and "0:00:00 left" in text and "0:00:02 left" in text
    assert "sends/s" in text and "indeterminate" in text
    # rates over windows of >= 0.5 s: about 100 ok, 3 failed, 1 indeterminate per second (one stats() a second)
    last = text.rsplit("sends/s", 1)[1]
    rates = [float(r.replace(",", "")) for r in re.findall(r"\(([\d,.]+)/s\)", last)]
    assert len(rates) == 3 and all(r <= 250 for r in rates) and rates[0] > 40, rates
    assert "faults: leader-isolate" in text
    assert "partition" in text and "2,3" in text and "none" in text           # p1 has no leader


def test_off_a_terminal_the_display_logs_plain_lines(caplog):
    caplog.set_level(logging.INFO, logger="kafka-chaos")
    display = LiveDisplay(enabled=False)
    display.phase("workload")
    display.watch(FakeCluster(), "chaos", FakeWorkload(), FakeNemesis(), duration_s=0.3)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[workload]")]
    assert len(lines) == 1 and "0s left" in lines[0] and "faults: leader-isolate" in lines[0]


def test_set_up_steps_spin_on_a_terminal_and_log_elsewhere(caplog):
    caplog.set_level(logging.INFO, logger="kafka-chaos")
    with progress.step("resolving jars") as s:
        s.update("kafka-clients-4.4.0.jar")
    assert [r.getMessage() for r in caplog.records][:1] == ["resolving jars ..."]
    assert "resolving jars: done in" in caplog.records[1].getMessage()

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with setup_progress(console):
        with progress.step("building kafka-chaos-broker:x") as s:
            s.update("Step 3/9 : COPY libs/ /opt/kafka/libs/")
            time.sleep(0.3)
    assert "✓ building kafka-chaos-broker:x" in out.getvalue()
    with progress.step("after"):                     # the hook is put back when the block ends
        pass
    assert caplog.records[-1].getMessage().startswith("after: done in")


def test_setup_progress_draws_nothing_off_a_terminal():
    out = io.StringIO()
    with setup_progress(Console(file=out, force_terminal=False)):
        with progress.step("quiet"):
            pass
    assert out.getvalue() == ""


class FlakyCluster(FakeCluster):
    """Answers once, then is cut off (an isolated broker): the display keeps the last answer and says its age."""
    def __init__(self):
        self.calls = 0

    def describe(self, topic, timeout):
        self.calls += 1
        if self.calls > 1:
            raise TimeoutError("no answer")
        return super().describe(topic, timeout)


def test_the_last_leader_and_isr_stay_with_their_age_when_metadata_stops_answering():
    out = io.StringIO()
    display = LiveDisplay(enabled=True, out=out)
    display.console = Console(file=out, force_terminal=True, width=120, color_system=None)
    display.watch(FlakyCluster(), "chaos", FakeWorkload(), FakeNemesis(), duration_s=2.2)
    text = out.getvalue()
    assert "no metadata answer since" in text and "as of 2 s ago" in text and "2,3" in text
    assert "(as of 3s ago)" in plain_line("workload", snapshot(partitions_age_s=3.2))
