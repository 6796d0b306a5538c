"""The KRaft controller's side of the model: the quorum, broker sessions and fencing, controlled shutdown, ISR
changes and elections (ReplicationControlManager, PartitionChangeBuilder). ZooKeeper mode's differences (who is
controller, sessions with ZooKeeper) are in `zookeeper`; fencing and elections are shared."""
from __future__ import annotations

from kafka_chaos.checkers.model.config import RESTART_UNFENCE_NS, TICK_NS
from kafka_chaos.checkers.model.state import _Partition, _State
from kafka_chaos.checkers.model.zookeeper import _ZooKeeperMode


class _Controller(_ZooKeeperMode, _State):
    def __init__(self, *args, fence_rotation: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.fence_rotation = fence_rotation    # which order Kafka allows this replay fences lapsed-together brokers in
        self.unordered_fencing = 0              # the most brokers fenced together in an order the logs did not give

    def _elect_controller(self, t: int | None = None):
        if self.zk_mode:
            return self._zk_elect_controller(t)

        def quorum(c):
            return self.up(c) and sum(self.link(c, v) for v in self.voters) > len(self.voters) / 2
        if self.controller is None or not quorum(self.controller):
            self.controller = next((c for c in self.voters if quorum(c)), None)

    def reaches_controller(self, n) -> bool:
        return self.controller is not None and self.link(n, self.controller)

    def can_alter_isr(self, leader) -> bool:
        """Whether the leader's ISR change can take effect: AlterPartition to the KRaft controller, or in ZooKeeper
        mode through the controller broker (2.7+) or ZooKeeper itself (before)."""
        return self._zk_can_alter_isr(leader) if self.zk_mode else self.reaches_controller(leader)

    def _live_replica(self, r) -> bool:
        """Electable: registered and unfenced, running or not. The KRaft controller elects any broker it counts
        active (ReplicationControlManager.generateLeaderAndIsrUpdates: isAcceptableLeader is
        ClusterControlManager.isActive, a registration neither fenced nor in controlled shutdown; the same in 3.9
        and 4.1), and it learns of a killed process only when its session times out, so a killed broker not yet
        fenced is elected like a live one, from the ISR, the ELR, as the last known leader
        (PartitionChangeBuilder.canElectLastKnownLeader tests the same isAcceptableLeader) or uncleanly. It leads
        nothing while dead (no appends, no fetches, see _Replication) and hands on when it is fenced. A broker whose
        session expired in this tick but whose turn in the one-at-a-time fencing has not come (`fence_pending`,
        see _fence) is still unfenced. A stopped broker is fenced at its controlled shutdown. In ZooKeeper mode:
        registered, i.e. its session not yet expired (PartitionStateMachine's liveReplicas are the brokers in
        /brokers/ids)."""
        return r in self.fence_pending or not self.fenced[r]

    def _heartbeats(self, t: int):
        """Brokers that reach the controller heartbeat; a fenced one that is alive is unfenced once it is ready
        (`ready_at`): a thawed or reconnected broker at once (BrokerHeartbeatManager.calculateNextBrokerState grants
        a fenced broker's request once its metadata offset has reached its registration record, which an old
        registration already has), a restarted one only once it has started up and asks (see RESTART_UNFENCE_NS).
        The elections that waited for it happen in the same tick (ReplicationControlManager.handleBrokerUnfenced
        elects leaderless partitions, uncleanly where allowed, in the event that unfences it)."""
        if self.zk_mode:
            return self._zk_heartbeats(t)
        for n in self.nodes:
            if not (self.up(n) and self.reaches_controller(n)) or self.misses_heartbeats(n):
                self.connected_since[n] = None
                continue
            if self.connected_since.get(n) is None:
                self.connected_since[n] = t
            if self._refused_registration(n):
                continue
            self.new_incarnation.discard(n)
            self.last_hb[n] = t
            if self.fenced[n] and self.alive[n] and t >= self.ready_at[n]:
                self._unfence(n, t)

    def _refused_registration(self, n) -> bool:
        """A broker restarted before its old session lapsed is a new incarnation, and the controller refuses its
        registration while the old one's session is valid (ClusterControlManager.registerBroker throws
        DuplicateBrokerRegistrationException when heartbeatManager.hasValidSession and the incarnation ids differ).
        Without a registration it has no broker epoch to heartbeat with, so the old session lapses
        broker.session.timeout.ms after the old process's last heartbeat, the controller fences it, and the
        partitions it led elect from the rest of their ISR (BrokerHeartbeatManager's stale-broker fencing, as for any
        broker that stopped heartbeating); then it registers, fenced, and is unfenced once caught up. Seen on
        2026-11-27 (a kill of 5.2 s with a 6 s session, README "A quick restart is fenced"): the controller logged
        the fencing 6.6 s after the kill, 1.3 s after the restart, and the new incarnation's registration 2.3 s
        later; the broker's partition elected from the rest of its ISR, where the model had kept it leader."""
        return n in self.new_incarnation and not self.fenced[n]

    def _unfence(self, n: int, t: int):
        """Back from an unclean shutdown, a broker leaves every ELR when it registers again
        (ReplicationControlManager.handleBrokerUncleanShutdown)."""
        self.fenced[n] = False
        self.starting.discard(n)
        self.events.append({"t_ns": t, "event": "unfenced", "node": n})
        if self.unclean_restart[n] and self.cfg.elr_enabled:
            for part in self.parts.values():
                part.elr = [r for r in part.elr if r != n]
        self.unclean_restart[n] = False

    def _controlled_shutdown(self, n, t):
        """A clean stop: the controller moves leadership away and the broker electable no more (in controlled
        shutdown, then its session lapses: the controller logs that fencing seconds later, while it is down)."""
        self.fenced[n] = True
        self.events.append({"t_ns": t, "event": "fenced", "node": n, "why": "controlled shutdown"})
        for p, part in self.parts.items():
            if n in part.isr:
                new = [r for r in part.isr if r != n]
                self._set_isr(part, new if new or self.cfg.elr_enabled else part.isr, list(part.isr), t, p)
            if part.leader == n and self.controller is not None:
                self._elect(p, part, t, exclude=n)

    # -- controller --------------------------------------------------------------------------------------------
    def _fence(self, expired: list[int], t):
        """Fence every broker whose session expired in this tick, one at a time, as Kafka does: each fencing is its
        own controller event (ReplicationControlManager.maybeFenceOneStaleBroker, "so that the effect of fencing
        each broker is visible to the system prior to processing the next one"), and a broker whose turn has not
        come is still registered unfenced, so it may be elected meanwhile, even if its process is dead
        (generateLeaderAndIsrUpdates' isAcceptableLeader is ClusterControlManager.isActive: not fenced, not in
        controlled shutdown). So a leader fenced before its ISR's other members hands leadership to them in turn,
        and the last ISR member fenced is the leader when the ISR empties, the last known leader (ELR on,
        PartitionChangeBuilder.maybeUpdateLastKnownLeader; see _set_isr). Those elections are real (each bumps the
        leader epoch) but last milliseconds: their events are marked `transient`.

        The stalest broker goes first (BrokerHeartbeatManager.findOneStaleBroker); for sessions that lapse
        together (e.g. all heartbeats to an isolated controller) that order is a matter of milliseconds the model
        cannot know, and it decides which replica is left as the last ISR member. The controller's log knows
        (`Timing.fences`, history/controller_log.py): where it has them, every replay fences in its order. Seen on
        2026-11-27 (power-loss-all, acks=all, ELR on): brokers 1, 3, 2 fenced at 36.5, 36.5, 36.6 s, so broker 2
        was partition 2's last ISR member and last known leader, and Kafka elected it when all three came back;
        fencing by id, the model had kept broker 3. Without logs every order is possible, so every member must be
        the last one in some replay: see _guessed_fence_order."""
        order = self.timing.fence_order(expired, t)
        if order is None and len(expired) > 1:
            self.unordered_fencing = max(self.unordered_fencing, len(expired))
        guessed = {"fence_rotation": self.fence_rotation} if order is None and self.fence_rotation else {}
        for n in order or self._rotated(expired):
            self.fenced[n] = True
            self.events.append({"t_ns": t, "event": "fenced", "node": n, **guessed})
        for p, part in self.parts.items():
            ordered = order or self._guessed_fence_order(part, expired)
            first = len(self.events)
            for i, n in enumerate(ordered):
                self.fence_pending = set(ordered[i + 1:])
                self._fence_replica(p, part, n, t)
            self.fence_pending = set()
            for e in self.events[first:]:
                if e["event"] == "leader" and e["leader"] in expired:
                    e["transient"] = True

    def _guessed_fence_order(self, part: _Partition, expired: list[int]) -> list[int]:
        """The order of brokers whose sessions lapsed in the same tick, where the controller's log does not say it.
        Kafka fences the stalest first (BrokerHeartbeatManager.findOneStaleBroker: the unfenced list is sorted by
        last contact), and which is stalest is a matter of milliseconds, so any order is possible. The recorded
        replay fences by broker id and the late one each partition's leader first; run_model replays the rest as
        rotations of the id order (`fence_rotation` k: the group rotated by k), so every broker of the group is the
        last one fenced, i.e. the last ISR member and, with ELR, the last known leader, in some replay."""
        if self.fence_rotation:
            return self._rotated(expired)
        return sorted(expired, key=lambda n: n != part.leader) if self.leader_fenced_first else expired

    def _rotated(self, expired: list[int]) -> list[int]:
        k = self.fence_rotation % len(expired)
        return expired[k:] + expired[:k]

    def _fence_replica(self, p: int, part: _Partition, n: int, t: int):
        if n in part.isr:
            old = list(part.isr)
            new = [r for r in part.isr if r != n]
            if not new and not self.cfg.elr_enabled:
                new = old                          # last replica standing keeps its ISR membership
            self._set_isr(part, new, old, t, p)
        if part.leader == n:
            self._elect(p, part, t)

    def _set_isr(self, part: _Partition, new: list[int], old: list[int], t: int, p: int):
        """ELR upkeep as PartitionChangeBuilder.maybePopulateTargetElr (4.1+): at or above min ISR the ELR is
        empty; below it the ELR is (ELR + ISR) - new ISR - replicas that re-registered after an unclean shutdown.
        A broker merely fenced (killed, not yet back) stays in the ELR: ReplicationControlManager removes it only
        in handleBrokerUncleanShutdown, when it registers again (see tick).

        The change that empties the ISR records the partition's leader before it as the last known leader
        (PartitionChangeBuilder.maybeUpdateLastKnownLeader, KIP-966, 4.0+; releases.py `last_known_leader`): with
        brokers fenced one at a time that is the last ISR member fenced, not the leader when the first went."""
        if self.cfg.elr_enabled and not new and part.isr:
            part.last_known = part.leader
        if self.cfg.elr_enabled:
            if len(new) >= self.cfg.effective_min_isr:
                part.elr = []
            else:
                part.elr = [r for r in dict.fromkeys(part.elr + old) if r not in new]
        if new != part.isr:
            self.events.append({"t_ns": t, "event": "isr", "partition": p, "isr": new, "elr": part.elr})
        part.isr = new

    def _elect(self, p: int, part: _Partition, t: int, exclude=None):
        ok = [r for r in part.replicas if self._live_replica(r) and r != exclude]
        leader, how = next(((r, "from the ISR") for r in part.replicas if r in part.isr and r in ok), (None, ""))
        if leader is None and self.cfg.elr_enabled:
            leader, how = next(((r, "from the ELR") for r in part.replicas if r in part.elr and r in ok),
                               (None, ""))
            if leader is not None:
                part.elr = [r for r in part.elr if r != leader]
                part.isr = [leader]
        if leader is None and self.cfg.elr_enabled and not part.isr and not part.elr and part.last_known in ok:
            # PartitionChangeBuilder.canElectLastKnownLeader (4.0+; its liveness test fixed in 4.1, KAFKA-19522):
            # ISR and ELR empty, the last known leader is back: it is elected alone. It held everything committed.
            leader, how = part.last_known, "as the last known leader (ISR and ELR empty)"
            part.isr = [leader]
        if leader is None and self.cfg.unclean_honoured and ok:
            leader, how = ok[0], "uncleanly"
            part.isr, part.elr = [leader], []
        self._install(p, part, t, leader, how)

    def _preferred_election(self, p: int, preferred: int | None, t: int, cause: str):
        """A preferred-leader election asked of the controller (effect `elect`, leader-churn): the preferred replica
        leads if it is a valid new leader, acceptable (registered, unfenced, not in controlled shutdown) and in the
        ISR; otherwise the current leader stays, and the controller answers PREFERRED_LEADER_NOT_AVAILABLE
        (PartitionChangeBuilder.electPreferredLeader and ReplicationControlManager.electLeader, 4.1.0: a change
        that elects nobody new is refused). A clean election: the new leader holds every committed write, and an
        acks=1 tail of the old leader it had not fetched is truncated when the old leader follows (KIP-101)."""
        part = self.parts[p]
        if preferred is None or part.leader == preferred or preferred not in part.isr or self.controller is None \
                or not self._live_replica(preferred) or preferred not in part.logs:
            self.events.append({"t_ns": t, "event": "preferred election refused", "partition": p,
                                "preferred": preferred})
            return
        self._install(p, part, t, preferred, "from the ISR", f"from the ISR (a preferred-leader election, {cause})")

    def _install(self, p: int, part: _Partition, t: int, leader, how: str, why: str | None = None):
        """`leader` leads partition p from t (None: offline), chosen `how`; `why` (default `how`) is what the
        epoch's reason and a loss's cause say of it."""
        why = why or how
        old_leader = part.leader
        part.leader = leader
        if leader is None:
            if old_leader is not None:
                self.events.append({"t_ns": t, "event": "offline", "partition": p})
            return
        part.last_known = None          # maybeUpdateLastKnownLeader clears it once the partition has a leader
        part.epoch += 1
        part.epoch_reason[part.epoch] = f"{why} (broker {leader}, epoch {part.epoch})"
        part.elections.append((part.epoch, t, why, leader, [list(s) for s in part.logs[leader]],
                               list(part.cuts.get(leader, ()))))
        part.logs[leader].append([part.epoch, t, t])
        part.caught_up = {r: t for r in part.isr}
        event = {"t_ns": t, "event": "leader", "partition": p, "leader": leader, "epoch": part.epoch, "how": how}
        started, ready = self.started_at.get(leader), self.ready_at.get(leader, t)
        if started is not None and not (self.zk_mode or self.timing.unfences) and ready <= t < ready + TICK_NS:
            # it waited for the leader's start-up, which Kafka does not bound and the logs did not time: Kafka may
            # have elected it any time from the restart to RESTART_UNFENCE_NS after it (observed.py takes the span)
            event["since_ns"], event["until_ns"] = started, started + RESTART_UNFENCE_NS
        self.events.append(event)

