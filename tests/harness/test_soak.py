"""soak without a cluster: each window a synthetic run judged by the real (pandas) checker, on an injected clock."""
import json

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness import soak as soak_mod
from kafka_chaos.harness.replay import Trials
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.runner import RunResult
from kafka_chaos.nemesis import schedule_data
from tests.harness.test_replay_shrink import synthetic


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture
def windows(monkeypatch):
    """Trials.run replaced: a window takes its planned seconds of the clock; window 3 loses writes."""
    clock, seen = Clock(), []

    def fake_run(self, opts):
        seen.append(opts)
        clock.t += opts.duration_s
        run_dir = opts.results / opts.run_id
        verdict = synthetic(run_dir, lost=opts.run_id == "w0003")
        return RunResult(run_dir, 0 if verdict["valid"] else 1, verdict, None)

    monkeypatch.setattr(Trials, "run", fake_run)
    return clock, seen


def test_windows_run_until_the_duration_with_a_running_verdict(tmp_path, windows, capsys):
    clock, seen = windows
    base = RunOptions(scenario=None, seed=5, results=tmp_path, engine="pandas")
    state = soak_mod.soak(base, duration_s=600, window_s=120, keep_segments=1, clock=clock)
    assert [w.index for w in state.windows] == [1, 2, 3, 4, 5]                # windows start until 600 s have passed
    assert all(o.seed == 5 and o.duration_s == 120 for o in seen)
    # each window's plan is its own seeded schedule file, and together they draw on many fault classes
    plans = [schedule_data.read(o.schedule_file) for o in seen]
    assert plans[0].steps != plans[1].steps
    assert plans[0].steps == tuple(soak_mod.window_plan(5, 1, 120))
    assert len({s.fault.name for p in plans for s in p.steps}) >= 8
    assert all(s.heal_s <= 120 - 15 for p in plans for s in p.steps)       # each window ends fault-free
    out = capsys.readouterr().out
    assert "soak window 2: VALID so far" in out and "soak window 3: VIOLATION in window(s) 3" in out
    # the banner each run shows is the running verdict before it
    assert seen[3].banner.startswith("soak window 4: VIOLATION in window(s) 3")
    # rotation: valid windows but the last keep only verdict, meta and plan; the violating one keeps everything
    for w in state.windows[:-1]:
        assert (w.run_dir / "history").exists() == (w.index == 3)
        assert (w.run_dir / "verdict.json").exists()
    assert (state.windows[-1].run_dir / "history").exists()
    report = json.loads((state.root / "soak.json").read_text())
    assert report["done"] and report["sums"]["lost"] == 2 and report["running_verdict"].startswith("VIOLATION")
    md = (state.root / "soak.md").read_text()
    assert md.count("| VIOLATION in window(s) 3") == 3 and md.count("| VALID so far") == 2
    assert all(w.rss_mib > 0 for w in state.windows)
    page = (state.root / "soak.html").read_text()
    assert "Running verdict: VIOLATION in window(s) 3" in page and "(finished)" in page
    # the strip: window 3 red in its own band and from then on in the "so far" band
    assert page.count('fill="#c62828"') == 1 + (len(state.windows) - 2)


def test_bad_durations(tmp_path, windows):
    with pytest.raises(UsageError, match="30 s or more"):
        soak_mod.soak(RunOptions(scenario=None, results=tmp_path), duration_s=600, window_s=10)


def test_the_soak_command_reaches_every_run_option(tmp_path, windows, capsys, monkeypatch):
    import functools

    from kafka_chaos.harness.cli import main
    clock, seen = windows
    monkeypatch.setattr(soak_mod, "soak", functools.partial(soak_mod.soak, clock=clock))
    code = main(["soak", "--duration", "25m", "--window", "10m", "--results", str(tmp_path), "--seed", "4",
                 "--client", "both", "--consumers", "2", "--acks", "1", "--engine", "pandas"])
    assert code == 1                                  # windows start at 0, 10 and 20 min; window 3 loses writes
    assert len(seen) == 3 and {(o.client, o.consumers, o.acks, o.seed) for o in seen} == {("both", 2,
                                                                                               "1", 4)}
    assert "report:" in capsys.readouterr().out


def test_report_writes_a_soaks_page_from_its_directory(tmp_path, windows, capsys):
    from kafka_chaos.harness.cli import main
    clock, _ = windows
    state = soak_mod.soak(RunOptions(scenario=None, seed=2, results=tmp_path, engine="pandas"), duration_s=240,
                          window_s=120, clock=clock)
    (state.root / "soak.html").unlink()
    (state.windows[0].run_dir / "report.html").write_text("<html></html>")
    assert main(["report", str(state.root)]) == 0
    page = (state.root / "soak.html").read_text()
    assert "Running verdict: VALID so far (2 window(s)" in page and page.count('fill="#2e7d32"') == 4
    assert page.count('<a href="w0001/report.html">report</a>') == 1 and "<td>no report</td>" in page
