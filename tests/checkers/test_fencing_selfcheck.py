"""The self-check's look at broker sessions (checkers/model/fencings.py): every fencing the controller logged must be
one the model's replays made; one no fault explains is an `unpredicted_fencing`, with the broker's own fatal error."""
import json

from kafka_chaos.harness.cli import main
from kafka_chaos.history.synthetic.node_log import fatal_fault_lines, fencing_line
from tests.checkers.conftest import MS, T, fault, read, sample, send, write_run
from tests.schemas import validate_run

S = 1000


def run_with_fencing(tmp_path, faults, halt: bool):
    """Broker 3 fenced by the controller at 17 s; its log shows a halt at 11 s when `halt`."""
    sends = [send(v, offset=i, t=i * 100) for i, v in enumerate("abc")]
    reads = [read(v, offset=i, t=60 * S) for i, v in enumerate("abc")]
    cluster = [sample(t, 1, (1, 2, 3)) for t in range(0, 60 * S, 500)]
    run = write_run(tmp_path / "run", sends, reads, faults=faults, cluster=cluster, partitions=1,
                    kafka_version="4.4.0", brokers=[1, 2, 3], controllers=[101], start_ns=T, end_ns=T + 60 * S * MS)
    (run / "logs").mkdir()
    (run / "logs" / "kc-run1-c101.log").write_text(fencing_line(T + 17 * S * MS, 3, "fenced"))
    (run / "logs" / "kc-run1-b3.log").write_text(fatal_fault_lines(
        T + 11 * S * MS, "Unexpected error in raft IO thread",
        "org.apache.kafka.common.errors.CorruptRecordException: Unexpected EOF") if halt else "")
    return run


def disagreements(run):
    assert main(["check", str(run), "--engine", "pandas"]) == 0           # a finding about the model, no violation
    validate_run(run)
    return json.loads((run / "verdict.json").read_text())["model_disagreements"]


def test_a_fencing_no_fault_explains_is_an_unpredicted_fencing_naming_the_brokers_fatal_error(tmp_path, capsys):
    (d,) = disagreements(run_with_fencing(tmp_path, [], halt=True))
    assert (d["kind"], d["broker"], d["partition"], d["t_ns"]) == ("unpredicted_fencing", 3, None, T + 17 * S * MS)
    assert "halted 6.0 s before: Unexpected error in raft IO thread: " \
           "org.apache.kafka.common.errors.CorruptRecordException: Unexpected EOF" in d["detail"]
    assert "model disagreement: unpredicted_fencing, broker 3 at 17.0 s" in capsys.readouterr().out


def test_without_a_fatal_error_it_says_the_log_shows_none(tmp_path):
    (d,) = disagreements(run_with_fencing(tmp_path, [], halt=False))
    assert "its log shows no fatal error" in d["detail"]


def test_the_fencing_of_a_killed_broker_is_the_models_own(tmp_path):
    kill = [fault(10 * S, "start", "kill", [3]), fault(40 * S, "heal", "kill", [3])]
    assert disagreements(run_with_fencing(tmp_path, kill, halt=False)) == []   # session 9 s: fenced at ~19 s


def test_a_fencing_of_a_broker_still_fenced_since_it_registered_changes_nothing(tmp_path):
    """A slow restart: registered (fenced) at 30 s, its new session lapsed before it was ready, fenced again at 37 s
    ("Ignoring no-op registration change"): not a fencing the model has to make."""
    kill = [fault(10 * S, "start", "kill", [3]), fault(25 * S, "heal", "kill", [3])]
    run = run_with_fencing(tmp_path, kill, halt=False)
    (run / "logs" / "kc-run1-c101.log").write_text("".join(fencing_line(T + t * S * MS, 3, e) for t, e in (
        (19, "fenced"), (30, "registered"), (37, "fenced"), (45, "unfenced"))))
    assert disagreements(run) == []


def test_the_session_lapse_of_a_cleanly_stopped_broker_is_the_models_own(tmp_path):
    """A rolling restart: broker 3 stopped cleanly at 10 s (the model takes it out at its controlled shutdown),
    the controller logs its session lapsing at 25 s, while it is still down."""
    stop = [fault(10 * S, "start", "stop", [3]), fault(26 * S, "heal", "stop", [3])]
    run = run_with_fencing(tmp_path, stop, halt=False)
    (run / "logs" / "kc-run1-c101.log").write_text(fencing_line(T + 25 * S * MS, 3, "fenced"))
    assert disagreements(run) == []


def test_the_session_lapse_of_a_cleanly_stopped_broker_after_its_restart_began_is_the_models_own(tmp_path):
    """The restart row comes first (docker start returned), the old session lapses a second later, and the new
    process registers only 30 s after that: the model has it fenced since its controlled shutdown."""
    stop = [fault(10 * S, "start", "stop", [3]), fault(20 * S, "heal", "stop", [3])]
    run = run_with_fencing(tmp_path, stop, halt=False)
    (run / "logs" / "kc-run1-c101.log").write_text(fencing_line(T + 21 * S * MS, 3, "fenced"))
    assert disagreements(run) == []
