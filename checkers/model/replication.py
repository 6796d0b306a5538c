"""The partition leader's side of the model: who appends (a deposed leader too, a zombie), followers fetching and
truncating to the leader's log (KIP-101), ISR shrink and expand through AlterPartition (Partition.maybeShrinkIsr,
maybeExpandIsr), and when a partition is writable."""
from __future__ import annotations

from kafka_chaos.checkers.model.config import ACKED, ACKS_LEVELS, METADATA_CATCHUP_NS, METADATA_SLACK_NS, TICK_NS
from kafka_chaos.checkers.model.controller import _Controller
from kafka_chaos.checkers.model.state import _Partition
from kafka_chaos.checkers.model.windows import Cause, Window


class _Replication(_Controller):
    def _tick_partition(self, p: int, part: _Partition, t: int):
        self._refresh_views(part, t)
        for n in part.replicas + [n for n in part.view if n not in part.replicas]:    # a removed replica may lead
            self._append(p, part, n, t)
        fetched = self._fetch_and_alter_isr(p, part, t)
        self._track_availability(p, part, t, fetched)

    def _refresh_views(self, part: _Partition, t: int):
        """A broker connected to the controller for METADATA_CATCHUP_NS has read the metadata log's news. A deposed
        leader that stays up learns of its successor only METADATA_CATCHUP_NS after the election: a KRaft broker
        acts on a leadership change once its metadata fetch has brought the record and the MetadataLoader has
        published it (BrokerMetadataPublisher -> ReplicaManager.applyDelta, which makes it a follower), and until
        then it appends acks=1 writes as leader. Seen here: a reassignment moved
        the leader away, the controller elected broker 3 at 52.911 s, and broker 1 acknowledged an acks=1 write
        at 53.389 s, applying the change at 53.435 s (4.0.0, load ~45); that write was lost. For a thawed broker
        the late replay allows METADATA_CATCHUP_LATE_NS (`catchup_for`): until then a thawed follower does not
        follow the new leader, so it neither fetches nor rejoins the ISR, and acks=all waits for it.

        A restarted process (KRaft) leads nothing until the controller has unfenced it (`starting`), even where the
        metadata still names it leader because its old session has not lapsed: BrokerServer.startup waits on
        BrokerLifecycleManager.setReadyToUnfence (complete only once a heartbeat answer says it is unfenced) before
        socketServer.enableRequestProcessing, so until then no producer and no follower reaches it; and the
        controller refuses its registration while the old session is valid (ClusterControlManager.registerBroker),
        then fences it and elects another leader (see _Controller._refused_registration). It may follow meanwhile:
        its replica fetchers start when the metadata is first published, before the unfencing."""
        for n in list(part.view):       # every broker that was a replica: one a reassignment removed learns late too
            since = self.connected_since.get(n)
            if since is None or t - since < self.catchup_for(n):
                continue
            if n in self.starting and part.leader == n:
                part.view[n] = (None, -1, ())
                continue
            deposed = part.view[n][0] == n and part.leader != n and self.up(n)
            if deposed and part.elections and t - part.elections[-1][1] < METADATA_CATCHUP_NS:
                continue
            part.view[n] = (part.leader, part.epoch, tuple(part.isr))

    def _append(self, p: int, part: _Partition, n: int, t: int):
        """Every broker that believes it leads and that the client reaches appends, a zombie too."""
        leader, epoch, local_isr = part.view[n]
        if not (leader == n and self.up(n) and self.can("client", n) and self.can(n, "client")):
            return
        for log in (part.logs[n], part.appended):
            if log and log[-1][0] == epoch and log[-1][2] >= t - TICK_NS:
                log[-1][2] = t
            else:
                log.append([epoch, t, t])
        if epoch < part.epoch:
            # A zombie completes acks=all only with its whole local ISR fetching from it, i.e. alone in its ISR
            # view, and only if that view meets min.insync.replicas: Partition.appendRecordsToLeader rejects
            # acks=all with NOT_ENOUGH_REPLICAS before appending when the ISR is smaller.
            alone = len(local_isr) <= 1 and self.cfg.effective_min_isr <= 1
            self.risk.append(Window(p, t - TICK_NS, t, ACKED if alone else ("1",),
                                    f"zombie leader {n} (epoch {epoch}) cut off from the controller "
                                    f"still acknowledged writes after a new leader was elected",
                                    Cause(f"zombie p{p} e{epoch} b{n}", t, f"broker {n} still leading epoch {epoch} "
                                          f"after epoch {part.epoch} was elected")))

    def _fetch_and_alter_isr(self, p: int, part: _Partition, t: int) -> set:
        """Followers that believe in the current leader and reach it copy its log (truncating what diverges); the
        leader, if it reaches the controller, shrinks followers out after replica.lag.time.max.ms and expands
        caught-up ones back in (AlterPartition). Returns the followers that fetched.

        A slowed follower (effect `slow`) that lags in this replay fetches nothing: Kafka keeps a follower in the
        ISR only while a fetch reached the leader's log end within replica.lag.time.max.ms (Replica.isCaughtUp,
        lastCaughtUpTimeMs; Partition.getOutOfSyncReplicas names "slow followers" beside stuck ones), checked every
        lag/2 by ReplicaManager's isr-expiration task (Partition.maybeShrinkIsr). A follower whose fetch link to
        the leader is slowed (effect `link`) does the same where this replay says so (_State.link_lagging)."""
        leader = part.leader
        fetched: set = set()
        if leader is None or not self.up(leader) or part.view[leader][:2] != (leader, part.epoch):
            return fetched
        for f in part.replicas:
            if f != leader and self.up(f) and part.view[f][:2] == (leader, part.epoch) and self.link(f, leader) \
                    and not self.lagging(f) and not self.link_lagging(f, leader) \
                    and t >= self.fetch_stuck_until.get((f, leader), t):
                part.logs[f] = [list(s) for s in part.logs[leader]]
                part.cuts[f] = list(part.cuts.get(leader, ()))
                part.caught_up[f] = t
                fetched.add(f)
        if self.can_alter_isr(leader):
            lag = self.cfg.replica_lag_time_max_ms * 1_000_000
            out = [f for f in part.isr if f != leader and t - part.caught_up.get(f, t) > lag]
            if out:
                self._set_isr(part, [r for r in part.isr if r not in out], list(part.isr), t, p)
            back = [f for f in fetched if f not in part.isr and not self.fenced[f]]
            if back:
                self._set_isr(part, part.isr + back, list(part.isr), t, p)
                part.elr = [r for r in part.elr if r not in back]
            self._complete_reassignment(p, part, t)
        return fetched

    def _reassign(self, p: int, target: list[int], t: int):
        """The controller takes a new target replica set (ReplicationControlManager.changePartitionReassignment,
        PartitionReassignmentReplicas): adding = target - replicas, removing = replicas - target, and the replica
        set is the target plus the removing ones until the move completes. A new target replaces one in progress
        (a move back cancels a move not yet done). New replicas start empty and outside the ISR; they fetch like
        any follower and join the ISR once caught up (Partition.maybeExpandIsr)."""
        part = self.parts[p]
        if self.controller is None:
            return                                       # no controller takes the request: nothing changes
        removing = [r for r in part.replicas if r not in target]
        part.adding = [r for r in target if r not in part.replicas]
        part.removing = removing
        part.replicas = list(target) + removing
        for r in part.adding:
            part.logs.setdefault(r, [])
            part.view.setdefault(r, (None, -1, ()))
        self.events.append({"t_ns": t, "event": "reassign", "partition": p, "replicas": list(part.replicas),
                            "adding": list(part.adding), "removing": list(part.removing)})
        self._complete_reassignment(p, part, t)

    def _complete_reassignment(self, p: int, part: _Partition, t: int):
        """PartitionReassignmentReplicas.maybeCompleteReassignment, applied by the controller on each ISR change
        (PartitionChangeBuilder.completeReassignmentIfNeeded): once the ISR without the removing replicas holds
        every target replica (from 4.3.0 in KRaft: every adding one, unless the move shrinks the replica set;
        releases.py `reassignment_completes_once_adding_in_isr`), the removing ones leave the replica set and the
        ISR; a leader that left is replaced by an election among the target replicas in the ISR.

        Seen on 4.4.0 (README, "Reassignment under fire"): with broker 2 dead and out of the ISR [1, 3], the move
        [1, 2, 3] -> [4, 2, 3] completed as soon as 4 joined: ISR [3, 4], leader 4."""
        if not (part.adding or part.removing) or self.controller is None:
            return
        isr = [r for r in part.isr if r not in part.removing]
        replicas = [r for r in part.replicas if r not in part.removing]
        need = replicas
        if self.cfg.applies("reassignment_completes_once_adding_in_isr") and len(part.adding) >= len(part.removing):
            need = part.adding
        if not isr or not replicas or not set(need) <= set(isr):
            return
        part.replicas, part.adding, part.removing = replicas, [], []
        self._set_isr(part, isr, list(part.isr), t, p)
        self.events.append({"t_ns": t, "event": "reassigned", "partition": p, "replicas": list(replicas)})
        if part.leader not in replicas:
            self._elect(p, part, t)

    def _track_availability(self, p: int, part: _Partition, t: int, fetched: set):
        leader = part.leader
        writable = leader is not None and self.up(leader) and part.view[leader][:2] == (leader, part.epoch) \
            and self.can("client", leader)
        hw_moves = writable and len(part.isr) >= self.cfg.effective_min_isr and \
            all(r == leader or r in fetched for r in part.isr)
        for key, ok, acks, reason in (
                ("no_leader", writable, ACKS_LEVELS, "no reachable leader"),
                ("under_min_isr", hw_moves or not writable, ("all",),
                 "acks=all cannot complete: ISR below min.insync.replicas or an ISR member not fetching")):
            if not ok and key not in part.down_since:
                part.down_since[key] = t
            elif ok and key in part.down_since:
                self.unavailable.append(Window(p, part.down_since.pop(key), t + METADATA_SLACK_NS, acks, reason))

    def advance_steady(self, t: int, t_new: int):
        """Skip quiet time: whatever was current at t (appending, fetching, heartbeating) lasts until t_new."""
        for n in self.nodes:
            if self.last_hb[n] == t:
                self.last_hb[n] = t_new
        for part in self.parts.values():
            for log in list(part.logs.values()) + [part.appended]:
                if log and log[-1][2] == t:
                    log[-1][2] = t_new
            for f, seen in part.caught_up.items():
                if seen == t:
                    part.caught_up[f] = t_new

