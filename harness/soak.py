"""`kafka-chaos soak --duration 11h`: hours of a seeded mix of every fault class, judged window by window.

A soak is a chain of windows on one cluster. Each window is a whole run (fresh topic, workload, a seeded stagger of
faults drawn from every class, heal, drain, check) with its own results directory: the history rotates by window,
so no process ever holds more than one window's history, and a window that broke something can be replayed or
shrunk by itself (its plan is a schedule file). After each window the running verdict (the worst so far, the sums
of each anomaly kind, memory and disk) is printed, shown in the live display, and written to the partial report
<results>/<soak_id>/soak.html (report/soak.py: the running verdict over time), soak.md and soak.json.
`--keep-segments N` deletes the history of valid windows older than the last N (their verdict, meta and plan
stay), so the disk is bounded too. What this does not see: an anomaly that
spans two windows (each window's topic is new).
"""
from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.replay import Trials, signature
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.scenarios import TOPIC
from kafka_chaos.nemesis import schedule_data
from kafka_chaos.nemesis.schedule import _sub_seed, spec, stagger
from kafka_chaos.report.soak import write_soak_page

log = logging.getLogger(__name__)
MIN_TAIL_S = 15.0           # each window ends fault-free for this long (at least), so its drain sees a settled cluster

# Every fault class that runs on the default chaos cluster: process (kill, pause, clean stop, cascades, restarts),
# CPU starvation (slow), network (isolation, partitions, bridges, one-way, loss, client cuts). Left out: `latency`
# (needs netem in the broker image), the storage faults (power loss, disk full, damage: they need the cluster's
# --power-loss-fs layer or wreck a log dir on purpose) and `partition-reassign` (needs more brokers than replicas).
SOAK_FAULTS = (
    spec("slow"), spec("follower-slow", topic=TOPIC),
    spec("leader-kill", topic=TOPIC), spec("follower-kill", topic=TOPIC), spec("leader-pause", topic=TOPIC),
    spec("leader-stop", topic=TOPIC), spec("controller-kill"), spec("minority-kill"), spec("all-kill"),
    spec("cascade-kill", topic=TOPIC, interval_s=6.0), spec("rolling-restart"),
    spec("leader-isolate", topic=TOPIC), spec("controller-isolate"), spec("split"), spec("bridge"),
    spec("one-way"), spec("leader-cut", topic=TOPIC), spec("client-isolate"), spec("loss", probability=0.3),
)


@dataclass
class Window:
    index: int
    run_dir: Path
    exit_code: int
    valid: bool | None
    kinds: list[str]
    anomalies: dict
    violations: dict
    disagreements: int
    faults: list[str]
    started: str
    seconds: float
    rss_mib: float                   # this process now
    children_max_rss_mib: float      # the largest workload process so far
    disk_mib: float                  # this window's results directory after rotation


@dataclass
class Soak:
    soak_id: str
    root: Path
    duration_s: float
    window_s: float
    seed: int
    windows: list[Window] = field(default_factory=list)

    def running(self) -> str:
        """The running verdict: the worst window so far, and the sums."""
        if not self.windows:
            return "no window judged yet"
        if any(w.valid is False for w in self.windows):
            state = "VIOLATION in window(s) " + ", ".join(str(w.index) for w in self.windows if w.valid is False)
        elif any(w.valid is None for w in self.windows):
            state = "VALID so far, but window(s) " + ", ".join(str(w.index) for w in self.windows
                                                              if w.valid is None) + " could not be judged"
        else:
            state = "VALID so far"
        sums = self.sums()
        shown = ", ".join(f"{k} {n}" for k, n in sums.items() if n) or "no anomaly"
        return f"{state} ({len(self.windows)} window(s); {shown})"

    def sums(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for w in self.windows:
            for k, n in w.anomalies.items():
                out[k] = out.get(k, 0) + int(n or 0)
        return out

    def write(self, done: bool) -> None:
        """soak.json, soak.md and soak.html: the partial report, rewritten after every window."""
        self.root.mkdir(parents=True, exist_ok=True)
        data = {"soak_id": self.soak_id, "duration_s": self.duration_s, "window_s": self.window_s,
                "seed": self.seed, "done": done, "running_verdict": self.running(), "sums": self.sums(),
                "windows": [{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(w).items()}
                            for w in self.windows]}
        (self.root / "soak.json").write_text(json.dumps(data, indent=2) + "\n")
        lines = [f"# Soak {self.soak_id} ({'finished' if done else 'running'})", "",
                 f"Planned {self.duration_s / 3600:.2f} h in windows of {self.window_s:.0f} s, seed {self.seed}.",
                 "", f"**Running verdict: {self.running()}**", "",
                 "| window | started (UTC) | s | verdict | anomaly kinds | disagreements | faults | RSS MiB | "
                 "workers' max RSS MiB | disk MiB | verdict so far |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for i, w in enumerate(self.windows):
            so_far = Soak(self.soak_id, self.root, self.duration_s, self.window_s, self.seed, self.windows[:i + 1])
            verdict = {True: "valid", False: "VIOLATION", None: "no verdict"}[w.valid]
            lines.append(f"| {w.index} | {w.started} | {w.seconds:.0f} | {verdict} | {', '.join(w.kinds) or '-'} | "
                         f"{w.disagreements} | {', '.join(w.faults) or '-'} | {w.rss_mib:.0f} | "
                         f"{w.children_max_rss_mib:.0f} | {w.disk_mib:.1f} | {so_far.running()} |")
        (self.root / "soak.md").write_text("\n".join(lines) + "\n")
        write_soak_page(self.root)


def window_plan(seed: int, index: int, window_s: float):
    """Window `index`'s steps: a stagger over every fault class, seeded by (seed, index), ending MIN_TAIL_S early."""
    active = max(window_s - max(MIN_TAIL_S, window_s / 6), 1.0)
    plan = stagger(SOAK_FAULTS, mean_interval_s=max(window_s / 10, 6.0),
                   mean_duration_s=max(window_s / 10, 10.0)).plan(_sub_seed(seed, "soak", index), active)
    return plan


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _disk_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def rotate(soak: Soak, keep: int | None) -> None:
    """Delete the history and logs of valid windows older than the last `keep` (verdict, meta, plan stay)."""
    if keep is None:
        return
    for w in soak.windows[:-keep] if keep else soak.windows:
        if w.valid is True and (w.run_dir / "history").exists():
            for sub in ("history", "logs", "anomalies.parquet", "report.html"):
                p = w.run_dir / sub
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            w.disk_mib = round(_disk_mib(w.run_dir), 2)


def soak(base: RunOptions, duration_s: float, window_s: float = 600.0, keep_segments: int | None = None,
         clock=time.monotonic) -> Soak:
    """Windows until `duration_s` has passed: a window starts while the soak is younger than `duration_s`, so a
    soak lasts at least its duration (as Jepsen's time limit stops new operations, not the ones under way) and at
    most one window more. Each window also pays its heal, drain and check on top of `window_s`."""
    if duration_s <= 0 or window_s < 30:
        raise UsageError(f"--duration {duration_s:g} s / --window {window_s:g} s: need a positive duration and "
                         "windows of 30 s or more", "use e.g. --duration 11h --window 10m")
    base = replace(base, scenario=base.scenario or "random-mix", live=base.live).resolved()
    soak_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-soak-s{base.seed}"
    state = Soak(soak_id, base.results / soak_id, duration_s, window_s, base.seed)
    plans = state.root / "plans"
    t0 = clock()
    with Trials() as trials:
        index = 0
        while index == 0 or clock() - t0 < duration_s:
            index += 1
            steps = window_plan(base.seed, index, window_s)
            plan = schedule_data.write(plans / f"w{index:04d}.json", steps, base.scenario, base.seed, window_s)
            started, w0 = time.strftime("%H:%M:%S", time.gmtime()), clock()
            log.info("soak %s: window %d, %s of %s; running verdict: %s", soak_id, index,
                     _hms(clock() - t0), _hms(duration_s), state.running())
            opts = replace(base, schedule_file=plan, duration_s=window_s, results=state.root,
                           run_id=f"w{index:04d}", banner=f"soak window {index}: {state.running()}")
            r = trials.run(opts)
            v = r.verdict or {}
            state.windows.append(Window(
                index, r.run_dir, r.exit_code, v.get("valid"), sorted(signature(v)), v.get("anomalies") or {},
                v.get("violations") or {}, len(v.get("model_disagreements") or []),
                sorted({s.fault.name for s in steps}), started, round(clock() - w0, 1), round(_rss_mib(), 1),
                round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
                round(_disk_mib(r.run_dir), 2)))
            rotate(state, keep_segments)
            state.write(done=False)
            print(f"soak window {index}: {state.running()}", flush=True)
    state.write(done=True)
    return state


def _hms(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def register(sub) -> None:
    from kafka_chaos.harness.cluster_options import add_cluster_options
    from kafka_chaos.harness.run_cli import add_workload_options
    from kafka_chaos.harness.run_options import chaos_cluster_config

    p = sub.add_parser("soak", help="hours of a seeded mix of every fault class on one cluster, judged window by "
                                    "window, with a running verdict and a partial report",
                       description="Exit: the worst window's, as `run --repeat` (1 if any window broke a guarantee).")
    p.add_argument("--duration", default="1h", help="how long, e.g. 11h, 90m (default 1h)")
    p.add_argument("--window", default="10m", help="each window's length: one run, one history segment (default 10m)")
    p.add_argument("--keep-segments", type=int, metavar="N",
                   help="keep the history of only the last N valid windows (default: keep all)")
    add_workload_options(p)
    add_cluster_options(p, chaos_cluster_config("run"))
    from kafka_chaos.checkers.cli import add_engine_option, add_judgement_options
    add_engine_option(p)
    add_judgement_options(p)
    p.set_defaults(func=_cmd_soak, scenario="random-mix", schedule=None, reuse_cluster=False, keep_cluster=False,
                   name="kafka-chaos", check=True)


def _cmd_soak(args) -> int:
    from kafka_chaos.harness.run_cli import options_from_args
    from kafka_chaos.harness.shrink import parse_budget

    duration, window = parse_budget(args.duration), parse_budget(args.window)
    args.duration = None
    state = soak(options_from_args(args), duration, window, args.keep_segments)
    print(f"report: {state.root / 'soak.md'}")
    codes = [w.exit_code for w in state.windows]
    return 1 if 1 in codes else 3 if 3 in codes else max(codes, default=0)
