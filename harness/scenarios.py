"""The scenario catalog: data, not code paths scattered in tests.

A scenario names a fault schedule (built for a run's duration, so the same seed and duration give the same plan),
the topic's shape and a default duration. Any producer profile runs with any scenario. Fault windows scale with
the duration but never drop below the cluster's detection times, so a short run still sees the fault take effect.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis.schedule import Schedule, mix, once, sequence, spec, stagger

TOPIC = "chaos"


def _window(duration_s: float) -> tuple[float, float]:
    """(fault on, fault off) seconds for a cycle: long enough for fencing (6 s) and ISR shrink (5 s) to happen."""
    on = min(max(duration_s / 4, 10.0), 20.0)
    off = min(max(duration_s / 6, 6.0), 15.0)
    return on, off


def cycles(fault: str, **args) -> Callable[[float], Schedule]:
    """The fault on for a window, then off, repeated; the run's last stretch is always fault-free."""
    def build(duration_s: float) -> Schedule:
        on, off = _window(duration_s)
        n = max(1, int((duration_s - off) // (on + off)))
        return sequence([once(off, spec(fault, **args), on) for _ in range(n)])
    return build


def single(fault: str, start_share: float = 0.15, length_share: float = 0.6, **args) -> Callable[[float], Schedule]:
    """One long fault, for faults that unfold over time (rolling restart, cascade kill)."""
    def build(duration_s: float) -> Schedule:
        return once(round(duration_s * start_share, 3), spec(fault, **args), max(duration_s * length_share, 10.0))
    return build


def isolate_then_kill(duration_s: float) -> Schedule:
    """Cut the leader from its followers until the ISR is the leader alone (replica.lag.time.max.ms plus
    margin), then kill it; it stays dead for a while and restarts, as in Jepsen's classic Kafka loss."""
    start = max(duration_s * 0.1, 3.0)
    alone_after = 12.0                     # 5 s lag time in the chaos cluster, checked every lag/2, plus margin
    dead_for = max(duration_s * 0.25, 10.0)
    return mix(once(start, spec("leader-cut", topic=TOPIC), alone_after + dead_for),
               once(start + alone_after, spec("leader-kill", topic=TOPIC), dead_for))


def slow_then_kill(duration_s: float) -> Schedule:
    """Starve chaos/0's follower of CPU (1% of a core) until it has left the ISR, then kill the leader; the leader
    stays dead for a while and restarts, and only then is the follower given its CPU back. With the topic's
    replication factor 2 the leader is then alone in the ISR: min.insync.replicas=1 lets it acknowledge acks=all
    writes alone, 2 makes producers see NOT_ENOUGH_REPLICAS.

    Seen here (2 cores, load 5-14): under acks=all traffic the starved follower keeps reaching the leader's log end
    (the leader takes one request per connection at a time, so its log end never runs far ahead) and slows the
    producers instead; it leaves the ISR 12-19 s after the quota, when its heartbeats lapse and the controller
    fences it. Hence 25 s before the kill."""
    start = max(duration_s * 0.1, 3.0)
    behind_after = 25.0
    dead_for = max(duration_s * 0.25, 10.0)
    return mix(once(start, spec("follower-slow", topic=TOPIC, cpus=0.01), behind_after + dead_for),
               once(start + behind_after, spec("leader-kill", topic=TOPIC), dead_for))


def slow_link_then_kill(duration_s: float) -> Schedule:
    """Delay chaos/0's follower's fetch responses by 8 s (through the link proxy) until it has fallen out of the
    ISR, then kill the leader; the leader stays dead for a while and restarts, and only then is the delay lifted.
    The network twin of slow-follower-then-leader-kill: with replication factor 2 the leader is alone in the ISR, so
    min.insync.replicas=1 acknowledges acks=all writes the follower never fetched and 2 refuses them.

    A delay longer than replica.lag.time.max.ms (5 s in a chaos cluster) drives the follower out whatever the
    load: its fetches reach the leader at most every 8 s, so its last caught-up time is always older than the lag
    time before the next one arrives (Replica.updateFetchStateOrThrow). A bandwidth cap does so only while the
    producers write faster than the cap, which acks=all producers, waiting on that very follower, may not (seen
    here: a follower capped at 16 KB/s rejoined the ISR under acks=all load). Hence latency, and 20 s before the
    kill (lag, plus lag/2 for the expiry check, plus one delayed fetch, plus margin). With min.insync.replicas=2
    the follower flaps (seen here): once it is out the leader refuses acks=all writes, its log end stops, the
    delayed fetch reaches it and the follower is back in, until writes resume."""
    start = max(duration_s * 0.1, 3.0)
    behind_after = 20.0
    dead_for = max(duration_s * 0.25, 10.0)
    return mix(once(start, spec("follower-link-slow", topic=TOPIC, delay_ms=8000, jitter_ms=0),
                    behind_after + dead_for),
               once(start + behind_after, spec("leader-kill", topic=TOPIC), dead_for))


def reassign_under_fire(duration_s: float) -> Schedule:
    """A random broker is killed first; while it is down, chaos/0's replicas are moved (heal moves them back late
    in the run), and halfway through chaos/0's leader is killed too: the new replica may have to catch up from a
    leader that dies, and the move may wait for a dead broker. The kill comes first because the schedule plays its
    steps in order and asking for the move takes seconds (a JVM in a broker's container; 87 s seen at load 70)."""
    return mix(once(max(duration_s * 0.1, 3.0), spec("kill"), duration_s * 0.35),
               once(duration_s * 0.15, spec("partition-reassign", topic=TOPIC), duration_s * 0.6),
               once(duration_s * 0.5, spec("leader-kill", topic=TOPIC), max(duration_s * 0.2, 10.0)))


def with_consumer_kill(fault: str, **args) -> Callable[[float], Schedule]:
    """In each cycle one consumer-group member's process killed first, while the group is settled and it holds
    partitions, then `fault` a third of the way in (at most 3 s later); both healed when the cycle ends. The group
    loses a member without a LeaveGroup, and its session expires (a rebalance) while the broker fault runs."""
    def build(duration_s: float) -> Schedule:
        on, off = _window(duration_s)
        n = max(1, int((duration_s - off) // (on + off)))
        shift = min(3.0, on / 3)
        kills = sequence([once(off, spec("consumer-kill"), on) for _ in range(n)])
        return mix(sequence([once(off + shift, spec(fault, **args), on - shift) for _ in range(n)]), kills)
    return build


def leader_churn(duration_s: float) -> Schedule:
    """One churn of chaos/0's leadership from 15% of the run: one change every 5 s or so over 40% of it (at least
    3 changes), each a kill -9, a controlled shutdown or a preferred-leader election of/away from whoever leads.
    A killed leader is replaced only when its session lapses (6 s in a chaos cluster) and a change waits for an ISR
    member besides the leader, so a change may take longer than its slot (none begins later than 10 s after the
    window); the heal (every broker running, chaos/0's ISR whole again) comes at 75% of the run at the earliest."""
    within = round(duration_s * 0.4, 3)
    changes = max(3, int(within // 5))
    return once(round(duration_s * 0.15, 3), spec("leader-churn", topic=TOPIC, changes=changes, within_s=within),
                duration_s * 0.6)


def two_brokers_pause(duration_s: float) -> Schedule:
    """librdkafka#4134's loop: brokers 1 and 2 of 3 frozen (docker pause) for 45 s, longer than the producers'
    30 s delivery timeout, then thawed for 20 s; repeated. The first pause starts at 10 s."""
    n = max(1, int((duration_s - 10.0) // 65.0))
    return sequence([once(10.0 if i == 0 else 20.0, spec("pause", targets=(1, 2)), 45.0) for i in range(n)])


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    schedule: Callable[[float], Schedule]
    partitions: int = 3
    replication_factor: int = 3
    duration_s: float = 60.0
    cluster_overrides: dict = field(default_factory=dict)
    consumer_group: bool = False         # its faults act on a consumer group: runs need --consumer-mode subscribe

    def plan(self, seed: int, duration_s: float):
        return self.schedule(duration_s).plan(seed, duration_s)


CATALOG: dict[str, Scenario] = {s.name: s for s in [
    Scenario("leader-kill", "kill -9 the leader of chaos/0, restart it; repeated",
             cycles("leader-kill", topic=TOPIC)),
    Scenario("consumer-and-leader-kill", "kill -9 a consumer-group member's process and, 3 s later, the leader of "
             "chaos/0 (needs --consumer-mode subscribe); start a new member, restart the leader; repeated",
             with_consumer_kill("leader-kill", topic=TOPIC), consumer_group=True),
    Scenario("follower-kill", "kill -9 a follower of chaos/0, restart it; repeated",
             cycles("follower-kill", topic=TOPIC)),
    Scenario("leader-pause", "freeze the leader of chaos/0 (docker pause) until it is fenced, resume it; repeated",
             cycles("leader-pause", topic=TOPIC)),
    Scenario("leader-isolate", "cut the leader of chaos/0 from every node and the clients, heal; repeated",
             cycles("leader-isolate", topic=TOPIC)),
    Scenario("leader-isolate-then-kill", "cut the leader of chaos/0 from its followers until its ISR is itself "
             "alone, then kill it and restart it later", isolate_then_kill),
    Scenario("slow-follower-then-leader-kill", "starve chaos/0's follower of CPU until it leaves the ISR, then "
             "kill the leader and restart it later (replication factor 2: the leader is alone in the ISR)",
             slow_then_kill, replication_factor=2, duration_s=50.0),
    Scenario("slow-link-then-leader-kill", "delay chaos/0's follower's fetch links by 8 s (Toxiproxy) until it "
             "leaves the ISR, then kill the leader and restart it later (replication factor 2: the leader is alone "
             "in the ISR)",
             slow_link_then_kill, replication_factor=2, duration_s=50.0, cluster_overrides={"link_proxy": True}),
    Scenario("link-slow", "add 200 ms ± 20 ms to a broker's client and replication links (Toxiproxy), heal; "
             "repeated", cycles("link-slow", delay_ms=200, jitter_ms=20), cluster_overrides={"link_proxy": True}),
    Scenario("reassign-under-fire", "move chaos/0's replicas to another set of brokers (one swapped for the fourth "
             "broker) and back, while a random broker, then chaos/0's leader, are killed and restarted; 4 brokers",
             reassign_under_fire, duration_s=60.0, cluster_overrides={"brokers": 4}),
    Scenario("two-brokers-pause", "freeze brokers 1 and 2 of 3 (docker pause) for 45 s, past the producers' 30 s "
             "delivery timeout, thaw them for 20 s; repeated (librdkafka#4134)", two_brokers_pause, duration_s=150.0),
    Scenario("leader-churn", "several leader changes of chaos/0 in quick succession: a seeded mix of kill -9 and "
             "restart of whoever leads, controlled shutdown and start, and preferred-leader elections; then every "
             "broker back in the ISR", leader_churn),
    Scenario("controller-isolate", "cut the active controller from every node, heal; repeated",
             cycles("controller-isolate")),
    Scenario("controller-kill", "kill -9 the active controller (ZooKeeper mode: the controller broker), restart "
             "it; repeated", cycles("controller-kill")),
    Scenario("zookeeper-isolate", "cut the ZooKeeper node from every broker and the clients, heal; repeated "
             "(ZooKeeper mode)", cycles("zookeeper-isolate")),
    Scenario("majority-minority", "split the nodes into a majority and a minority, heal; repeated",
             cycles("split")),
    Scenario("bridge", "two halves that cannot see each other, joined through one node; repeated",
             cycles("bridge")),
    Scenario("packet-loss", "drop 30% of a broker's packets to and from its peers, heal; repeated",
             cycles("loss", probability=0.3)),
    Scenario("rolling-restart", "clean restart of every broker in turn, waiting for a full ISR in between",
             single("rolling-restart", length_share=0.7)),
    Scenario("all-kill", "kill -9 every broker at once, restart them all; repeated",
             cycles("all-kill")),
    Scenario("cascade-kill", "kill chaos/0's followers one by one, then its leader; restart an out-of-sync "
             "follower first", single("cascade-kill", topic=TOPIC, interval_s=6.0)),
    Scenario("cascade-kill-serial", "cascade-kill whose heal restarts each broker only once the one before has "
             "registered, so chaos/0's last leader registers last: with ELR on, 4.0.x elects it while it is still "
             "fenced (KAFKA-19522, fixed in 4.1.0; docs/findings.md, 'Historical bugs')",
             single("cascade-kill-serial", topic=TOPIC, interval_s=8.0)),
    Scenario("client-isolate", "the workload cannot reach one broker, heal; repeated",
             cycles("client-isolate")),
    Scenario("power-loss-all", "power off every broker at once (each keeps only what it fsync'ed), power them on; "
             "once, mid-run", single("power-loss-all", start_share=0.5, length_share=0.2),
             cluster_overrides={"power_loss_fs": True}),
    Scenario("leader-power-loss", "power off the leader of chaos/0 (its unsynced data gone), power it on; repeated",
             cycles("leader-power-loss", topic=TOPIC), cluster_overrides={"power_loss_fs": True}),
    Scenario("leader-disk-full", "fill the disk of chaos/0's leader until Kafka takes its log dir offline and the "
             "broker halts; free it and start the broker; repeated", cycles("leader-disk-full", topic=TOPIC),
             cluster_overrides={"power_loss_fs": True}),
    Scenario("follower-damage", "kill a follower of chaos/0, flip bits in its newest segment while it is down, "
             "restart it: Kafka's recovery and replication should repair it",
             single("damage", start_share=0.5, length_share=0.25, topic=TOPIC, damage_file="segment",
                    damage_mode="flip"), cluster_overrides={"power_loss_fs": True}),
    Scenario("random-mix", "a seeded Jepsen-style stagger of leader kills, pauses, isolations, splits, loss and "
             "controller kills",
             lambda d: stagger([spec("leader-kill", topic=TOPIC), spec("leader-pause", topic=TOPIC),
                                spec("leader-isolate", topic=TOPIC), spec("split"), spec("loss", probability=0.3),
                                spec("client-isolate"), spec("controller-kill"), spec("leader-cut", topic=TOPIC)],
                               mean_interval_s=max(d / 8, 6.0), mean_duration_s=max(d / 8, 10.0))),
]}


def scenario(name: str) -> Scenario:
    try:
        return CATALOG[name]
    except KeyError:
        raise UsageError(f"unknown scenario '{name}'", f"pick one of: {', '.join(CATALOG)}") from None
