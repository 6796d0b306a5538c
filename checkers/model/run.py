"""run_model: replay a run's faults on the replication state machine, in each timing Kafka allows."""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd

from kafka_chaos.checkers.model.config import (
    METADATA_CATCHUP_LATE_NS,
    RESTART_UNFENCE_NS,
    TICK_NS,
    FaultEffect,
    ModelConfig,
    worst_case_onsets,
)
from kafka_chaos.checkers.model.elections import planned_move_risk
from kafka_chaos.checkers.model.result import ModelResult
from kafka_chaos.checkers.model.sim import _Sim
from kafka_chaos.checkers.model.state import Timing
from kafka_chaos.checkers.model.windows import _merge


def run_model(cfg: ModelConfig, faults: pd.DataFrame | list[FaultEffect] | None = None,
              samples: pd.DataFrame | None = None, t_begin: int | None = None, t_end: int | None = None,
              unfences: dict[int, list[int]] | None = None, fences: dict[int, list[int]] | None = None) -> ModelResult:
    """Replay the faults on the replication state machine and return its predictions.

    Two timings are replayed, both within what Kafka allows, and the judgement takes whichever does not invent a
    violation: as recorded (each fault at the start of its row, the ISR shrinking at replica.lag.time.max.ms),
    and late (each fault once applying it ended, `applied_ns`, and the ISR shrinking at 1.5x the lag time, the
    latest ReplicaManager.maybeShrinkIsr, scheduled every lag/2, gets to it; brokers whose sessions lapse
    together fenced leader first, see _Sim._fence). Risk is the union of both;
    a certain prediction must hold in both. Where brokers' sessions lapsed together and the controller's log does
    not give the order it fenced them in, each of those two is replayed again in every other order that leaves
    another broker fenced last (_Controller._guessed_fence_order), and those replays count as alternatives too.

    A slowed broker (effect `slow`, a CPU quota) does one of three things, and how much CPU it takes decides which
    (seen here: at 2% of a core a follower kept up with 2000 acks=all writes/s and only slowed them; at 1% it
    left the ISR after 12 s, then missed heartbeats and was fenced): it fetches too slowly to stay caught up and
    leaves the ISR (the recorded replay), its heartbeats lapse and the controller fences it, like a pause (the
    late replay, lagging as well), or it keeps up and nothing changes but speed (a third replay, only for runs
    with a slowed node). Risk is the union of all three; a certain prediction must hold in each. A slowed replication
    link (effect `link`) is replayed the same way, without fencing: its follower lags in the recorded and late
    replays and keeps up in the third (see _State.link_lagging).

    When a restarted or thawed broker is usable again is timed too (state.Timing): the recorded replay lets the
    controller unfence a restarted broker at its restart and a reconnected broker act on the metadata log after
    METADATA_CATCHUP_NS; the late one after RESTART_UNFENCE_NS and METADATA_CATCHUP_LATE_NS. A healed follower
    fetches again at the heal in the recorded replay, and only once its stuck fetch gives way in the late one
    (_Sim._stuck_fetchers). `unfences`, the controller's logged unfence grants per broker
    (history/controller_log.py), replace the restart bound in both, and its logged fencings (`fences`) the order in
    which brokers whose sessions lapse together are fenced."""
    if isinstance(faults, pd.DataFrame):
        events = [FaultEffect.from_row(*r[1:], row=int(r[0])) for r in
                  faults[["t_ns", "action", "fault", "nodes", "details"]].reset_index(drop=True).itertuples()]
    else:
        events = list(faults or [])
    samples = samples if samples is not None else pd.DataFrame(columns=["t_ns", "partition", "leader", "isr"])
    times = [e.t_ns for e in events] + [int(x) for x in samples["t_ns"]][:1] + [int(x) for x in samples["t_ns"]][-1:]
    t_begin = t_begin if t_begin is not None else (min(times) if times else 0)
    t_end = t_end if t_end is not None else (max(times) if times else t_begin)
    hw = {}
    if len(samples) and "high_watermark" in samples.columns:
        for p, g in samples.sort_values("t_ns").groupby("partition"):
            hw[int(p)] = (g["t_ns"].to_numpy(dtype=np.int64),
                          g["high_watermark"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64))
    if not events:
        return ModelResult(cfg, _merge(planned_move_risk(samples)), [], [], [], hw)
    grants = tuple(sorted((int(b), tuple(sorted(int(t) for t in ts))) for b, ts in (unfences or {}).items()))
    fenced = tuple(sorted((int(b), tuple(sorted(int(t) for t in ts))) for b, ts in (fences or {}).items()))
    early = Timing(unfences=grants, fences=fenced)
    replay_recorded = partial(_simulate, cfg, worst_case_onsets(events), samples, t_begin, t_end, timing=early)
    slow = replace(cfg, replica_lag_time_max_ms=cfg.replica_lag_time_max_ms * 3 // 2)
    replay_late = partial(_simulate, slow, [replace(e, t_ns=e.applied_ns) if e.applied_ns else e for e in events],
                          samples, t_begin, t_end, leader_fenced_first=True,
                          timing=Timing(METADATA_CATCHUP_LATE_NS, RESTART_UNFENCE_NS, grants, fenced,
                                        stuck_fetchers=True))
    recorded, late = replay_recorded(), replay_late()
    sims, alternatives = [recorded, late], [ModelResult(slow, late.risk, late.unavailable, late.truncs, late.events,
                                                        hw, shrink_slack_ns=0)]
    if any(e.effect == "slow" or e.effect == "link" and any(a != "client" for a, _ in e.links) for e in events):
        keeping_up = _simulate(cfg, worst_case_onsets(events), samples, t_begin, t_end, slow_mode="keeping up",
                               timing=early)
        sims.append(keeping_up)
        alternatives.append(ModelResult(cfg, keeping_up.risk, keeping_up.unavailable, keeping_up.truncs,
                                        keeping_up.events, hw))
    for base, replay, c, slack in ((recorded, replay_recorded, cfg, None), (late, replay_late, slow, 0)):
        for k in range(1, base.unordered_fencing):      # each other broker fenced last (_Controller._fence)
            sims.append(replay(fence_rotation=k))
            alternatives.append(ModelResult(c, sims[-1].risk, sims[-1].unavailable, sims[-1].truncs, sims[-1].events,
                                            hw, shrink_slack_ns=slack))
    unavailable = sorted(_merge([w for s in sims for w in s.unavailable]), key=lambda w: (w.start_ns, w.partition))
    planned = planned_move_risk(samples)         # leader moves Kafka's controller makes by itself, seen in samples
    return ModelResult(cfg, _merge([w for s in sims for w in s.risk] + planned), unavailable,
                       _merge([w for s in sims for w in s.truncs]), recorded.events, hw, alternatives=alternatives)



def _simulate(cfg: ModelConfig, events: list[FaultEffect], samples: pd.DataFrame, t_begin: int, t_end: int,
              leader_fenced_first: bool = False, slow_mode: str | None = None, timing: Timing | None = None,
              fence_rotation: int = 0) -> "_Sim":
    events = sorted(events, key=lambda e: e.t_ns)
    mode = slow_mode or ("fenced" if leader_fenced_first else "lagging")
    sim = _Sim(cfg, events, samples, t_begin, t_end, leader_fenced_first, mode, timing, fence_rotation=fence_rotation)
    settle = 2 * cfg.replica_lag_time_max_ms * 1_000_000 + 2 * cfg.broker_session_timeout_ms * 1_000_000
    t = min(t_begin, events[0].t_ns) - TICK_NS
    queue = list(enumerate(sim.faults))
    qi = 0
    stop = max(t_end, events[-1].t_ns + TICK_NS)
    quiet_since, marks = t, None
    while t <= stop:
        while qi < len(queue) and queue[qi][1].t_ns <= t:
            sim.apply(queue[qi][0], queue[qi][1], t)
            qi += 1
        sim.tick(t)
        now = _marks(sim)
        if now != marks:
            marks, quiet_since = now, t
        elif t - quiet_since > settle:
            # Steady state: nothing changed for longer than any timer the model has (lag, session), so nothing
            # will until the next fault row. Skip there (or to the end), carrying on whatever goes on now.
            # A broker starting up or catching up (Timing) is a timer too: stop short of when it is ready.
            waits = [r for n, r in sim.ready_at.items() if r > t and sim.fenced.get(n) and sim.alive.get(n)] + [
                c + sim.catchup_ns for c in sim.connected_since.values() if c is not None and c + sim.catchup_ns > t] \
                + [u for u in sim.fetch_stuck_until.values() if u > t]
            t_next = min([queue[qi][1].t_ns if qi < len(queue) else stop + TICK_NS] + waits) - TICK_NS
            if t_next > t:
                sim.advance_steady(t, t_next)
                t = quiet_since = t_next
            if qi >= len(queue) and not waits:
                break
        t += TICK_NS
    sim.finish(min(t, stop))
    return sim



def _marks(sim: _Sim) -> tuple:
    """What changes when anything in the simulation does: events, risk and availability windows, views."""
    return (len(sim.events), len(sim.risk), len(sim.unavailable),
            hash(tuple((len(part.down_since), *part.view.values()) for part in sim.parts.values())))

