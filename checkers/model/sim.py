"""The simulation: fault effects applied to the state, one tick at a time, and at the end what every epoch appended
minus what the final log kept, each lost piece blamed on the election where it left the partition."""
from __future__ import annotations

from kafka_chaos.checkers.model.config import ACKED, ACKS_LEVELS, REPLICATION_SLACK_NS, TICK_NS, FaultEffect
from kafka_chaos.checkers.model.replication import _Replication
from kafka_chaos.checkers.model.windows import Cause, Window, _cut, _merge, _minus, _union

RTO_MIN_NS, RTO_MAX_NS = 200_000_000, 120_000_000_000    # Linux's TCP_RTO_MIN and TCP_RTO_MAX


def _next_election(p: int, part, epoch: int) -> Cause | None:
    """The election that ended `epoch`: the cause of its acks=1 tail's loss."""
    for e, t_el, how, leader, _, _ in part.elections:
        if e > epoch:
            return Cause(f"election p{p} e{e}", t_el, f"the election of broker {leader} {how}, epoch {e}")
    return None


class _Sim(_Replication):
    def apply(self, i: int, f: FaultEffect, t: int):
        start = f.action == "start"
        self.events.append({"t_ns": t, "event": f"{f.action} {f.effect}", "nodes": list(f.nodes)})
        if f.effect in ("kill", "power_loss", "stop", "damage"):
            self._apply_process(f, start, t)
        elif f.effect == "pause":
            for n in f.nodes:
                self.paused[n] = start
                self.went_down(n, t) if start else self.restarted(n, t, thawed=True)
        elif f.effect == "slow":
            for n in f.nodes:
                self.slow[n] = start
        elif f.effect == "link":
            self._apply_links(i, f, start)
        elif f.effect == "elect" and start and f.partition in self.parts:
            self._preferred_election(f.partition, f.preferred, t, f.cause_id)
        elif f.effect == "reassign" and f.moves and f.partition in self.parts:
            self._reassign(f.partition, list(f.moves[1] if start else f.moves[0]), t)
        elif f.effect in ("net", "loss"):
            linked = self._fetch_links()
            if start and (f.effect == "net" or f.probability >= 0.5):
                self.drops[i] = set(f.drops)
            elif not start:
                self._heal_drops(f)
            self._stuck_fetchers(linked, self._fetch_links(), t)

    def _apply_process(self, f: FaultEffect, start: bool, t: int):
        """kill and power_loss end the process uncleanly (power loss also drops the unflushed tail); stop is a
        controlled shutdown, which moves leadership away first. A new process believes nothing until it has read
        the metadata log."""
        if start:
            for part in self.parts.values():
                for n in f.nodes:
                    if n in part.view:
                        part.view[n] = (None, -1, ())
        for n in f.nodes:
            self.alive[n] = not start
            self.went_down(n, t) if start else self.restarted(n, t)
            if not start:
                self._new_fetchers(n)
            if f.effect == "stop":
                if start:
                    self._controlled_shutdown(n, t)
                else:
                    self.unclean_restart[n] = False
            elif start:
                self.unclean_restart[n] = True
                if f.effect == "power_loss":
                    self._lose_unflushed(n, t, f)
                elif f.effect == "damage":
                    self._lose_damaged(f, n, t)

    def _apply_links(self, i: int, f: FaultEffect, start: bool):
        """A slowed replication link (follower, leader): the follower's fetches from that leader are slow (see
        _State.link_lagging). Client links only slow the clients: nothing the model decides changes."""
        pairs = {(a, b) for a, b in f.links if a != "client"}
        if start:
            self.slow_links[i] = pairs
            return
        for k in sorted(self.slow_links):
            s = self.faults[k]
            if s.fault == f.fault and s.nodes == f.nodes and set(s.links) == set(f.links):
                del self.slow_links[k]
                return

    def _fetch_links(self) -> set:
        """(follower, leader) broker pairs, both running, whose link carries fetches now. Every pair: the 50
        __consumer_offsets partitions put a leader on every broker, so each broker's fetcher threads reach all
        the others (one thread per source broker, num.replica.fetchers=1)."""
        up = [n for n in self.nodes if self.up(n)]
        return {(a, b) for a in up for b in up if a != b and self.link(a, b)}

    def _stuck_fetchers(self, before: set, after: set, t: int):
        """A replica fetcher whose link is cut while both brokers run keeps waiting for the answer to the fetch it
        had in flight: BrokerBlockingSender sends through a NetworkClient whose requests time out after the
        broker's request.timeout.ms (30 s), and only then drops the connection and reconnects. Until then only TCP
        can revive it, at its next retransmission after the heal (Linux backs off from TCP_RTO_MIN, 200 ms,
        doubling each time). So a healed follower fetches again at the earlier of the two, not at the heal: seen
        twice on 2026-11-27 (docs/findings.md, "A follower that rejoins late"), where the healed broker never
        rejoined the ISR in the 10 s before the next fault.

        When that retransmission falls is not Kafka's to say: it counts from when the rule hit that pair, somewhere
        in the seconds a cut takes to apply node by node, and the heal frees the pair somewhere in the seconds
        its undo takes (the heal row is written once the undo has finished). Seen the other way on 2026-11-27
        (leader-isolate, acks=1, load ~25): the isolated leader 3, cut over 10.0-15.7 s and healed by 27.4 s (when
        it learned the new leader), truncated against leader 2's answer at 28.0 s and was back in the ISR at
        32.7 s, so Kafka elected it when 2 was cut off at 35 s; the stuck rule had kept it out until 35.4 s. So
        the resume may come anywhere from the heal to that bound: the recorded replay takes the heal, the late one
        (`Timing.stuck_fetchers`) the bound."""
        if not self.timing.stuck_fetchers:
            return
        for pair in before - after:
            self.fetch_cut.setdefault(pair, t)
        for pair in after & set(self.fetch_cut):
            cut = self.fetch_cut.pop(pair)
            retransmit, rto = cut + RTO_MIN_NS, RTO_MIN_NS
            while retransmit < t:
                rto = min(2 * rto, RTO_MAX_NS)
                retransmit += rto
            self.fetch_stuck_until[pair] = min(cut + self.cfg.request_timeout_ms * 1_000_000, retransmit)

    def _new_fetchers(self, n):
        """A new process of broker n has new fetcher connections: none of them waits on a fetch of the old one."""
        for pair in [k for k in (*self.fetch_cut, *self.fetch_stuck_until) if k[0] == n]:
            self.fetch_cut.pop(pair, None)
            self.fetch_stuck_until.pop(pair, None)

    def _heal_drops(self, f: FaultEffect):
        """Undo the start rows this heal row closes (one, or the parts worst_case_onsets split it into)."""
        healed = set(f.drops)
        for k in sorted(self.drops):
            s = self.faults[k]
            if s.fault == f.fault and s.nodes == f.nodes and set(s.drops) <= healed and healed:
                del self.drops[k]
                healed -= set(s.drops)

    def _lose_unflushed(self, n, t, f: FaultEffect | None = None):
        """The broker's unflushed tail is gone from each of its logs; what it removed is marked (`cuts`), and goes
        with the log wherever a follower copies it, so that a later loss of it is blamed on this power loss only
        where this cut could have removed it (_blame)."""
        keep = t - self.cfg.unflushed_ns
        for p, part in self.parts.items():
            if n in part.logs:
                cut = _cut(part.logs[n], keep)
                why = Cause(f.cause_id if f else f"power loss of broker {n}", t, f"power loss of broker {n}")
                part.cuts[n] = part.cuts.get(n, []) + [(n, seg, why) for seg in _minus(part.logs[n], cut)]
                part.logs[n] = cut
                self.events.append({"t_ns": t, "event": "power loss: unflushed tail dropped", "node": n,
                                    "partition": p})

    def _lose_damaged(self, f: FaultEffect, n, t):
        """A damaged segment, index or leader-epoch-checkpoint: the replica's log of that partition is treated as
        lost from the damaged point on. Where that point lies in time the model cannot tell, so from the start:
        LogLoader's recovery after an unclean shutdown truncates the log at the first batch that fails its CRC
        (LogSegment.recover), and the replica fetches the rest from the leader like any lagging follower."""
        for p in f.damaged:
            part = self.parts.get(p)
            if part is not None and n in part.logs:
                part.logs[n] = _cut(part.logs[n], -1)       # nothing kept
                self.events.append({"t_ns": t, "event": "damage: replica log lost", "node": n, "partition": p})

    def tick(self, t: int):
        self._elect_controller(t)
        self._heartbeats(t)
        if self.zk_mode:
            self._zk_sessions(t)
        elif self.controller is not None:
            session = self.cfg.broker_session_timeout_ms * 1_000_000
            expired = [n for n in self.nodes if not self.fenced[n] and t - self.last_hb[n] > session]
            if expired:
                self._fence(expired, t)
            for p, part in self.parts.items():
                if part.leader is None or self.fenced[part.leader]:
                    self._elect(p, part, t)
        for p, part in self.parts.items():
            self._tick_partition(p, part, t)

    def finish(self, t: int):
        for p, part in self.parts.items():
            for key, start in part.down_since.items():
                acks = ACKS_LEVELS if key == "no_leader" else ("all",)
                self.unavailable.append(Window(p, start, t, acks, "no reachable leader" if key == "no_leader"
                                               else "acks=all cannot complete"))
            part.down_since = {}
            # What every epoch appended, minus what the final log kept, is what the run may have lost.
            owner = part.leader if part.leader in part.logs else \
                max(part.logs, key=lambda n: (part.logs[n][-1][0], part.logs[n][-1][2]) if part.logs[n] else (-1, -1))
            final = part.logs[owner]
            appended = _union([seg for lg in part.logs.values() for seg in lg] + part.appended)
            for epoch, t0, t1 in _minus(appended, final):
                self._add_risk(p, part, epoch, t0, t1, part.cuts.get(owner, []))
            # Whatever the next leader had fetched, the last few hundred ms an old leader acked with acks=1
            # may not have reached it.
            for epoch, _, t1 in appended:
                if epoch < part.epoch:
                    self.risk.append(Window(p, t1 - REPLICATION_SLACK_NS, self._applying_until(t1) + TICK_NS, ("1",),
                                            f"acks=1 tail of epoch {epoch}: the last fetch before its leader "
                                            f"lost leadership may have missed it", _next_election(p, part, epoch)))
        self.risk = _merge(self.risk)
        self.truncs = _merge(self.truncs)
        self.unavailable.sort(key=lambda w: (w.start_ns, w.partition))

    def _applying_until(self, t: int) -> int:
        """A process fault (kill, stop, pause) takes effect somewhere in [t_ns, applied_ns]: a controlled shutdown
        in particular moves leadership seconds after it began, and the old leader acks acks=1 writes until then;
        so does a preferred-leader election (effect `elect`), done once the controller has answered.
        The model ends an epoch at t_ns; a write acked up to applied_ns may be that epoch's lost tail."""
        end = t
        for f in self.faults:
            if f.action == "start" and f.effect in ("kill", "stop", "pause", "power_loss", "damage", "elect") \
                    and f.applied_ns \
                    and f.t_ns - TICK_NS <= t <= f.applied_ns + TICK_NS:
                end = max(end, f.applied_ns)
        return end

    def _add_risk(self, p, part, epoch, t0, t1, final_cuts):
        """Blame a lost piece of epoch `epoch`'s log on the first later election whose leader lacked it: the
        new leader's log is the truth every other replica truncates to (the leader epoch cache and
        OffsetsForLeaderEpoch, KIP-101/KIP-279), so that election is where the piece left the partition. Which
        acks it can hold follows from how that leader was chosen (PartitionChangeBuilder.electLeader): from the
        ISR or ELR it held every acks=all write, so only an acks=1 tail is gone; elected outside them (unclean),
        acks=all writes may be gone too. So may they where the elected log lacks the piece because a power loss cut
        it (its own, or that of a leader whose log it copied: `cuts`): committed data held only in page caches is
        lost when they all are (KIP-966's "last replica standing"). A power loss that did not cut that log (a
        bystander's, or one after it had lost the piece) is not blamed: the piece left through a clean election,
        and acks=all writes were on that leader."""
        pieces = [[epoch, t0, t1]]
        for e, t_el, how, leader, snapshot, cuts in part.elections:
            if e <= epoch or not pieces:
                continue
            lacking = _minus(pieces, snapshot)
            chosen = f"{how} (broker {leader}, epoch {e})"
            election = Cause(f"election p{p} e{e}", t_el, f"the election of broker {leader} {how}, epoch {e}")
            for _, a, b in lacking:
                if a <= t_el:
                    self._blame(p, epoch, a, min(b, t_el), chosen, how == "uncleanly", cuts, election)
                if b > t_el:        # a zombie's: appended after the election, gone when it truncated to follow
                    self._blame(p, epoch, max(a, t_el), b, chosen, how == "uncleanly", cuts,
                                Cause(f"zombie p{p} e{epoch}", b, f"the epoch-{epoch} leader's writes after epoch {e} "
                                      f"was elected, truncated when it followed the new leader"))
            pieces = _minus(pieces, [[epoch, a, b] for _, a, b in lacking]) if lacking else pieces
        for _, a, b in pieces:          # held by every leader yet gone: cut by a power loss, or a tail
            self._blame(p, epoch, a, b, part.epoch_reason.get(epoch + 1, "later"), False, final_cuts, None)

    def _blame(self, p: int, epoch: int, a: int, b: int, chosen: str, unclean: bool, cuts: list,
               election: Cause | None):
        """`election`: the election that gave the piece away (None: none did; the piece was cut where it was)."""
        if unclean:
            self._risk(p, a, b, ACKED, f"unclean election: {chosen} lacked writes of epoch {epoch}", election)
            return
        rest = [[epoch, a, b]]
        for who, seg, power_loss in cuts:
            if seg[0] != epoch:
                continue
            gone = _minus(rest, _minus(rest, [seg]))        # the part of the piece this power loss cut
            for _, x, y in gone:
                self._risk(p, x, y, ACKED, f"power loss of broker {who}: its unflushed writes of epoch {epoch} "
                                           f"were gone", power_loss)
            rest = _minus(rest, gone) if gone else rest
        for _, x, y in rest:
            self._risk(p, x, y, ("1",), f"acks=1 tail of epoch {epoch} not yet replicated when its leader was cut "
                                        f"off; the next leader was chosen {chosen}", election)

    def _risk(self, p: int, a: int, b: int, acks: tuple, reason: str, cause: Cause | None = None):
        self.risk.append(Window(p, a - REPLICATION_SLACK_NS, b + TICK_NS, acks, reason, cause))
        self.truncs.append(Window(p, a, b, acks, reason, cause))
