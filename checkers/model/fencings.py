"""Who the controller fenced against who the model fenced: the self-check's look at broker sessions.

The controller logs every fencing for a lapsed session ("Fencing broker N at epoch E because its session has timed
out", ReplicationControlManager.maybeFenceOneStaleBroker; history/controller_log.py reads it back). Every such
fencing must be one some replay of the model also made, the same broker within TOLERANCE_NS: a kill, a pause, an
isolation or a quick restart all lapse a session, and the model fences for each; a broker the fault history had down
(a clean stop too: the model takes it out at the controlled shutdown, the controller logs the lapse seconds later)
is the model's already. A fencing no replay made means a
broker stopped heartbeating for a reason the fault history does not hold (a crash of its own, a stall of the
machine), so the model believed it up and every prediction after it may be wrong: an `unpredicted_fencing`
disagreement, naming the broker's own fatal error when its log has one. Like every disagreement it is a finding
about the model (or the harness), not a Kafka violation.

Seen on 2026-11-27 (leader-power-loss, acks=all): broker 3, which no fault touched, halted on an unexpected end of
its metadata log, read through the power-loss layer (a race in cluster/lazyfs.py's getattr, since fixed); the
controller fenced it 5 s later, every partition went leaderless for 37 s, and the verdict said nothing of it.
"""
from __future__ import annotations

from kafka_chaos.checkers.model.elections import down_then
from kafka_chaos.checkers.model.observed import TOLERANCE_NS

HALT_BEFORE_NS = 60_000_000_000       # a fatal error this long before a fencing is named as its likely cause


def unpredicted_fencings(model) -> list[dict]:
    """An `unpredicted_fencing` disagreement for each logged fencing no replay made (model.logged_fencings, set by
    checkers.check.model_for from the node logs; none logged, none found)."""
    replays = [model, *getattr(model, "alternatives", ())]
    fenced = [(int(e["node"]), int(e["t_ns"])) for r in replays for e in r.events if e.get("event") == "fenced"]
    spans = [s for r in replays for s in _fenced_spans(r.events)]
    out = []
    for broker, times in sorted((getattr(model, "logged_fencings", None) or {}).items()):
        for t in times:
            if any(n == broker and abs(tm - t) <= TOLERANCE_NS for n, tm in fenced) or down_then(model, broker, t) \
                    or any(n == broker and a <= t <= b for n, a, b in spans):
                continue
            halts = [(th, why) for th, n, why in getattr(model, "halts", ()) or ()
                     if n == broker and t - HALT_BEFORE_NS <= th <= t]
            cause = f"; its log shows it halted {(t - halts[-1][0]) / 1e9:.1f} s before: {halts[-1][1]}" \
                if halts else "; its log shows no fatal error (a stall of the machine or the process?)"
            out.append({"kind": "unpredicted_fencing", "partition": None, "t_ns": t, "broker": broker,
                        "detail": f"the controller fenced broker {broker} (its session timed out) and no replay "
                                  f"of the model fenced it within {TOLERANCE_NS / 1e9:g} s: nothing in the fault "
                                  f"history stopped its heartbeats, so the model kept it up{cause}"})
    return out


def _fenced_spans(events: list[dict]) -> list[tuple[int, int, int]]:
    """(broker, from, to) while a replay had the broker fenced: a logged fencing then is the model's already (a
    clean stop's session lapsing after the restart began, seen in a real rolling restart on 2026-11-27)."""
    since: dict[int, int] = {}
    out = []
    for e in events:
        if e.get("event") == "fenced":
            since.setdefault(int(e["node"]), int(e["t_ns"]))
        elif e.get("event") == "unfenced" and int(e["node"]) in since:
            out.append((int(e["node"]), since.pop(int(e["node"])), int(e["t_ns"])))
    return out + [(n, a, 2 ** 62) for n, a in since.items()]
