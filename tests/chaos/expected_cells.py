"""The chaos tests' own oracle: what Kafka's rules give each scenario x producer profile, written from the rules,
not from runs, so a run is judged against something other than the model under test.

The rules (/work/shared/notes/isr-model.md §3, and the Kafka documentation's replication design in
/work/shared/seeds/001_*.txt: "a committed message will not be lost, as long as there is at least one in sync
replica alive, at all times"):
- COMMITTED: acks=all success means committed, in the page cache of every ISR member (Partition.appendRecordsToLeader
  refuses below min.insync.replicas; the high watermark waits for the whole ISR, Partition.maybeIncrementLeaderHW).
  A clean election picks from the ISR (KRaft PartitionChangeBuilder.electLeader; with ELR, from ISR then ELR), every
  member of which holds every committed record: a kill -9 (the page cache survives), pause, cut or controlled
  shutdown loses nothing acknowledged.
- LEADER_ONLY: acks=1 success means in the leader's page cache only; the leader losing leadership before a follower
  fetched it loses it (the new leader's log wins, the old leader truncates: Partition.makeFollower,
  AbstractFetcherThread.truncateToEpochEndOffsets).
- UNCLEAN: with unclean.leader.election.enable an out-of-sync replica may be elected when no ISR member is alive
  (PartitionChangeBuilder.electLeader's unclean branch; honoured by KRaft from 3.9): what the ISR held is lost.
- POWER: void where the replicas lose their page cache (isr-model.md §3 (b), (c)): all replicas powered off keep
  only what they fsync'ed (Kafka's default never fsyncs by count or time); one replica's power loss matters where it
  was the last ISR member (min ISR 1), or, before 4.1, where it re-registers still in the ISR (4.1 removes an
  unclean-shutdown replica from ISR and ELR at re-registration: isr-model.md §5).

`loss="never"` cells assert that no acknowledged write was lost or lost after read, and that the model predicted
`never` too (the model agreeing with the rule). `loss="possible"` cells allow losses, each of which must be judged
allowed and name its cause. Every cell expects a valid verdict and exit 0: Kafka's rules produce no anomaly the
model may call a violation in these releases.
"""
from __future__ import annotations

from dataclasses import dataclass

NEVER, POSSIBLE = "never", "possible"


@dataclass(frozen=True)
class Profile:
    acks: str
    min_isr: int
    unclean: bool


@dataclass(frozen=True)
class KnownDisagreement:
    """A model disagreement a cell tolerates: its kind, why it is not a finding, and the run that showed it."""
    kind: str
    reason: str
    run: str


@dataclass(frozen=True)
class Cell:
    loss: str                    # NEVER or POSSIBLE (acknowledged writes)
    why: str                     # the rule, in one line
    # A record a consumer read was below the high watermark, on every ISR member: only an unclean election or a
    # page-cache loss can remove it (PartitionChangeBuilder.isValidNewLeader elects from the ISR/ELR otherwise).
    read_loss: str = NEVER
    valid: bool = True
    exit_code: int = 0
    known_disagreements: tuple[KnownDisagreement, ...] = ()


@dataclass(frozen=True)
class ScenarioFacts:
    """What a scenario's faults do, in the terms the rules need."""
    faults: frozenset[str]       # the fault names its plan may hold (faults.parquet's `fault`)
    moves_leaders: str | None    # why its faults can move a partition's leadership, None: they cannot
    modes: tuple[str, ...] = ("kraft", "zookeeper")
    power: str | None = None     # "all": every replica loses its page cache; "one": one replica at a time
    still_in: tuple[str, ...] = ()   # metadata modes in which its faults move no leader after all


def _facts(faults: str, moves: str | None, **kw) -> ScenarioFacts:
    return ScenarioFacts(frozenset(faults.split()), moves, **kw)


LEADER_KILLED = "the leader of chaos/0 dies: a follower is elected"
SCENARIOS: dict[str, ScenarioFacts] = {
    "leader-kill": _facts("leader-kill", LEADER_KILLED),
    "consumer-and-leader-kill": _facts("consumer-kill leader-kill", LEADER_KILLED),
    "follower-kill": _facts("follower-kill", "chaos/0's follower leads another partition of the topic"),
    "leader-pause": _facts("leader-pause", "the paused leader is fenced after its session (6 s) and replaced"),
    "leader-isolate": _facts("leader-isolate", "the cut leader is fenced and replaced"),
    "leader-isolate-then-kill": _facts("leader-cut leader-kill", LEADER_KILLED),
    "slow-follower-then-leader-kill": _facts("follower-slow leader-kill", LEADER_KILLED),
    "slow-link-then-leader-kill": _facts("follower-link-slow leader-kill", LEADER_KILLED),
    "link-slow": _facts("link-slow", None),      # 200 ms: below the 6 s session and the 5 s lag time
    "reassign-under-fire": _facts("kill partition-reassign leader-kill", LEADER_KILLED),
    "two-brokers-pause": _facts("pause", "a paused leader is fenced and replaced; thawed, it acks as a zombie"),
    # a kill -9 or controlled shutdown of the leader, or a preferred-leader election (a clean one, from the ISR:
    # PartitionChangeBuilder.electPreferredLeader): each moves leadership, an acks=1 tail the new leader lacks is
    # truncated (KIP-101), acks=all is on it
    "leader-churn": _facts("leader-churn", "its changes kill, stop or elect away chaos/0's leader"),
    "controller-isolate": _facts("controller-isolate", "the brokers' sessions lapse at the cut controller: "
                                 "fenced, their partitions' leaders move"),
    # KRaft: a restarted controller gives every unfenced broker a fresh contact time (ClusterControlManager.activate),
    # so it fences nobody and no leader moves; ZooKeeper mode: the controller is a broker that leads partitions
    "controller-kill": _facts("controller-kill", "in ZooKeeper mode the controller is a broker that leads "
                              "partitions", still_in=("kraft",)),
    "zookeeper-isolate": _facts("zookeeper-isolate", "brokers cut from ZooKeeper lose their sessions",
                                modes=("zookeeper",)),
    "majority-minority": _facts("split", "the minority's leaders are fenced and replaced"),
    "bridge": _facts("bridge", "the halves' leaders lose the controller or their followers and are replaced"),
    "packet-loss": _facts("loss", "30% loss can delay heartbeats past the session: fenced, leaders move"),
    "rolling-restart": _facts("rolling-restart", "a controlled shutdown moves the broker's leaderships"),
    "all-kill": _facts("all-kill", "every broker dies: the first back may lead without the others' tails"),
    "cascade-kill": _facts("cascade-kill", LEADER_KILLED),
    "cascade-kill-serial": _facts("cascade-kill-serial", LEADER_KILLED),
    "client-isolate": _facts("client-isolate", None),   # the brokers still see each other and the controller
    "power-loss-all": _facts("power-loss-all", "every broker dies", power="all"),
    "leader-power-loss": _facts("leader-power-loss", LEADER_KILLED, power="one"),
    "leader-disk-full": _facts("leader-disk-full", "the leader halts on its failed log dir: a follower is elected"),
    "follower-damage": _facts("damage", "the damaged follower leads another partition of the topic"),
    "random-mix": _facts("leader-kill leader-pause leader-isolate split loss client-isolate controller-kill "
                         "leader-cut", "it kills, pauses and cuts leaders"),
}


def _version(version: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:2]) if version else (99,)


def _acks_all_cell(facts: ScenarioFacts, p: Profile, version: str | None) -> Cell:
    if facts.power == "all":
        return Cell(POSSIBLE, "POWER: every replica keeps only what it fsync'ed; a committed record in page caches "
                              "only is gone everywhere (isr-model.md §3 (c))", read_loss=POSSIBLE)
    if facts.power == "one" and p.min_isr < 2:
        return Cell(POSSIBLE, "POWER: at min ISR 1 the leader may be the ISR alone, its power loss takes the "
                              "committed tail no other replica holds (isr-model.md §3 (b))", read_loss=POSSIBLE)
    if facts.power == "one" and _version(version) < (4, 1):
        return Cell(POSSIBLE, "POWER: before 4.1 a power-lost replica re-registers still in the ISR with a cut log "
                              "and may be elected (isr-model.md §5, 4.1)", read_loss=POSSIBLE)
    if p.min_isr < 2 and p.unclean and facts.moves_leaders:
        return Cell(POSSIBLE, f"UNCLEAN: {facts.moves_leaders}; with min ISR 1 the leader may be alone in the ISR, "
                              "its death elects an out-of-sync replica", read_loss=POSSIBLE)
    return Cell(NEVER, "COMMITTED: acks=all is committed on every ISR member and a clean election picks one of "
                       "them" + ("" if p.min_isr >= 2 else "; at min ISR 1 a lone ISR leader's death leaves the "
                                                            "partition offline (no unclean election), not lossy"))


def expected_cell(scenario: str, profile: Profile, version: str | None = None, mode: str = "kraft") -> Cell:
    """Kafka's outcome of `scenario` under `profile` at `version` (None: the newest the harness runs) in metadata
    `mode`."""
    facts = SCENARIOS[scenario]
    if mode in facts.still_in:
        facts = ScenarioFacts(facts.faults, None, facts.modes, facts.power)
    if profile.acks == "all":
        return _acks_all_cell(facts, profile, version)
    if facts.power == "all":
        return Cell(POSSIBLE, "POWER: every replica loses its unflushed tail", read_loss=POSSIBLE)
    if facts.moves_leaders is None:
        return Cell(NEVER, "LEADER_ONLY: an acks=1 write is lost only when its leader loses leadership before a "
                           "follower fetched it, and these faults move no leader (below session and lag times)")
    unclean = "; UNCLEAN: an out-of-sync replica may be elected too" if profile.unclean else ""
    return Cell(POSSIBLE, f"LEADER_ONLY: {facts.moves_leaders}, and the acked tail only its old leader held is "
                          f"truncated{unclean}", read_loss=POSSIBLE if profile.unclean or facts.power else NEVER)


def runs_in(scenario: str, metadata_mode: str) -> bool:
    """Whether the scenario's faults have a target in a cluster of this metadata mode."""
    return metadata_mode in SCENARIOS[scenario].modes
