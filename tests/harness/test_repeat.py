"""`run --repeat N` without a cluster: the seeds each run gets, the table of verdicts, the worst exit code, bad N.

The runs here are synthetic histories judged by the real (pandas) checker; tests/harness/test_repeat_cluster.py
runs the real thing on brokers.
"""
import json

import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers.check import VERDICTS_TABLE, check_run
from kafka_chaos.harness import repeat
from kafka_chaos.harness.cli import main
from kafka_chaos.harness.runner import RunOptions, RunResult
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.harness.test_run_cli import our_containers


class StandInCluster:
    downs = 0

    def down(self):
        self.downs += 1


@pytest.fixture
def stand_in(monkeypatch):
    """repeat's cluster and single run replaced: each run writes a synthetic history and checks it (pandas)."""
    cluster, seen = StandInCluster(), []

    def fake_run(opts, cluster=None):
        assert isinstance(cluster, StandInCluster)
        seen.append(opts)
        run_dir = write_synthetic_run(opts.results / f"run-s{opts.seed}", sends=600, seed=opts.seed,
                                      inject={"lost": 1} if opts.seed == 12 else None)
        code = check_run(run_dir, force=True, engine="pandas")
        return RunResult(run_dir, code, json.loads((run_dir / "verdict.json").read_text()), None)

    monkeypatch.setattr(repeat, "cluster_for", lambda opts, display: (cluster, True))
    monkeypatch.setattr(repeat, "run", fake_run)
    monkeypatch.setattr(repeat, "_healthy", lambda c, owned, opts: c)
    return cluster, seen


def test_the_runs_get_seeds_seed_to_seed_plus_n_minus_1_and_the_table_lists_each(stand_in, tmp_path, capsys):
    cluster, seen = stand_in
    series = repeat.run_repeated(RunOptions("leader-kill", seed=10, duration_s=10, results=tmp_path, live=False), 3)
    assert [o.seed for o in seen] == [10, 11, 12]
    assert [o.extra_meta["repeat"] for o in seen] == [{"index": i, "of": 3} for i in (1, 2, 3)]
    assert all("--seed " + str(o.seed) in o.command() for o in seen)      # each run reproducible on its own
    assert cluster.downs == 1                                             # one cluster for the series
    table = pq.read_table(tmp_path / VERDICTS_TABLE).to_pandas()
    assert series.table == tmp_path / VERDICTS_TABLE
    assert sorted(table["run_id"]) == ["run-s10", "run-s11", "run-s12"]
    assert list(table.sort_values("run_id")["valid"]) == [True, True, False]
    assert series.exit_code == 1                                          # the worst run's: a violation
    table_lines = [ln for ln in capsys.readouterr().out.split("3 run(s):\n")[1].splitlines()
                   if ln and not ln[0].isspace()]          # a run's own lines (stall seconds, disagreements) indent
    assert [ln.split()[:2] for ln in table_lines[:3]] == [["run-s10", "valid"], ["run-s11", "valid"],
                                                          ["run-s12", "INVALID"]]


def test_a_drawn_seed_is_followed_by_consecutive_ones():
    plans = repeat.seeded(RunOptions("random-mix", duration_s=30), 4)
    first = plans[0].seed
    assert [p.seed for p in plans] == [first, first + 1, first + 2, first + 3]
    assert len({p.command() for p in plans}) == 4


@pytest.mark.parametrize("n", ["0", "-2"])
def test_a_repeat_below_one_is_a_usage_error_before_any_container_starts(n, capsys):
    before = our_containers()
    assert main(["run", "leader-kill", "--repeat", n]) == 2
    err = capsys.readouterr().err
    assert f"--repeat {n}" in err and "remedy" in err
    assert our_containers() == before


def test_a_repeat_that_is_not_a_number_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "leader-kill", "--repeat", "two"])
    assert e.value.code == 2


def test_ctrl_c_in_a_run_stops_the_series_removes_the_cluster_and_tables_the_finished_runs(stand_in, monkeypatch,
                                                                                            tmp_path, capsys):
    cluster, seen = stand_in
    judged = repeat.run

    def interrupted_second(opts, cluster=None):
        if len(seen) == 1:
            seen.append(opts)
            raise KeyboardInterrupt        # as the single run re-raises it, after healing its faults
        return judged(opts, cluster)

    monkeypatch.setattr(repeat, "run", interrupted_second)
    with pytest.raises(KeyboardInterrupt):
        repeat.run_repeated(RunOptions("leader-kill", seed=20, duration_s=10, results=tmp_path, live=False), 4)
    assert [o.seed for o in seen] == [20, 21]                              # no third run
    assert cluster.downs == 1
    captured = capsys.readouterr()
    assert "interrupted after 1 of 4 runs" in captured.err and "1 run(s):" in captured.out
