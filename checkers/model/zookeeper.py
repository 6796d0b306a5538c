"""The ZooKeeper-mode controller's side of the model (Kafka up to 3.9 with zookeeper.connect): who decides, and when
a broker counts as gone.

- A broker is live while its ZooKeeper session is: it registers the ephemeral /brokers/ids/N, and ZooKeeper
  deletes it when the session expires (zookeeper.session.timeout.ms without a heartbeat reaching ZooKeeper). A
  killed broker stays registered, and electable, until then; a controlled shutdown closes the session at once.
- The controller is one of the brokers, elected through the ephemeral /controller znode: it stays controller while
  its session lives (KafkaController.elect, onControllerResignation on session expiry); it acts only while it
  reaches ZooKeeper. On a broker's expiry it removes the broker from every ISR (the last member stays:
  ReplicaStateMachine.doRemoveReplicasFromIsr) and elects the first live ISR replica in assignment order, or with
  unclean.leader.election.enable the first live replica (PartitionLeaderElectionAlgorithms
  .offlinePartitionLeaderElection, reached from KafkaController.onBrokerFailure -> onReplicasBecomeOffline).
  A broker expired while no controller could act is handled by the next one that can (a new controller's
  ReplicaStateMachine.startup moves replicas on dead brokers offline).
- Brokers learn decisions from the controller's LeaderAndIsr requests, so a broker cut from the controller broker
  keeps its old view (a zombie leader) however well it reaches ZooKeeper.
- A restarted process is a new incarnation with a new session: a killed or power-cut broker's znode is its old
  session's, which lives on until it expires, so the controller still counts the broker live, and its partitions
  keep it as leader, until then (see _zk_refused_registration).
- The leader changes the ISR through the controller (AlterIsr/AlterPartition, KIP-497, 2.7+) or, before 2.7, by
  writing the partition's state znode itself (Partition.updateIsr -> KafkaZkClient.conditionalUpdatePath).
"""
from __future__ import annotations

from kafka_chaos.checkers.model.config import METADATA_CATCHUP_NS

# A new ZooKeeper-mode controller first reads the whole cluster state from ZooKeeper (KafkaController
# .onControllerFailover), then sends every live broker its LeaderAndIsr; until that reaches a deposed leader, the
# deposed leader keeps acknowledging acks=1 writes. Kafka bounds none of it. Seen here (3.9.2, 53 partitions, load
# average ~70): ~30 s from the old controller's session expiry to the zombie's truncation, and a LeaderAndIsr naming
# a leader the broker did not know alive is ignored (ReplicaManager.makeFollowers: "cannot become follower since
# the new leader is unavailable"). The model lets decisions of a new controller reach brokers this long after it
# took office: later, not sooner, so acks=1 writes to a zombie are at risk that long.
ZK_CONTROLLER_FAILOVER_NS = 30_000_000_000
# A broker whose session expired learns its role again only after it re-registered and the controller handled that
# (BrokerChange -> KafkaController.onBrokerStartup -> LeaderAndIsr), in the controller's one event queue behind
# everything else; Kafka bounds none of it either. Seen here (3.9.2, load average ~100): a deposed leader acked
# acks=1 writes 7.3 s after its isolation healed. Allowed as long as a failover.
ZK_BROKER_STARTUP_NS = ZK_CONTROLLER_FAILOVER_NS


class _ZooKeeperMode:
    """Mixed into the controller model; `self.zk_mode` chooses it. ZooKeeper is `self.voters[0]`."""

    controller_ready: int = 0          # when the current controller's failover is done (its decisions go out)

    @property
    def zookeeper_node(self):
        return self.voters[0] if self.voters else None

    def _zk_session_alive(self, n) -> bool:
        return self.up(n) and self.link(n, self.zookeeper_node)

    def _zk_controller_acts(self) -> bool:
        c = self.controller
        return c is not None and not self.fenced[c] and self._zk_session_alive(c)

    def _zk_elect_controller(self, t: int | None = None):
        """/controller goes with its holder's session; the first broker that reaches ZooKeeper takes it. What it
        decides reaches the brokers once its failover is done (ZK_CONTROLLER_FAILOVER_NS)."""
        if self.controller is None or self.fenced[self.controller]:
            old = self.controller
            self.controller = next((c for c in self.nodes if not self.fenced[c] and self._zk_session_alive(c)), None)
            if self.controller is not None and self.controller != old and t is not None:
                ready = t + ZK_CONTROLLER_FAILOVER_NS
                for n in self.nodes:
                    if self.connected_since.get(n) is not None:
                        self.connected_since[n] = max(self.connected_since[n], ready - METADATA_CATCHUP_NS)
                self.controller_ready = ready

    def _zk_heartbeats(self, t: int):
        """Sessions kept alive by reaching ZooKeeper (a broker back from an expiry registers again); views kept
        fresh by reaching the controller broker (LeaderAndIsr, UpdateMetadata)."""
        for n in self.nodes:
            if n in self.new_incarnation and self._zk_refused_registration(n, t):
                self.connected_since[n] = None
                continue
            if self._zk_session_alive(n):
                self.last_hb[n] = t
                if self.fenced[n] and self.alive[n]:
                    self._unfence(n, t)
                    self.registered_at[n] = t
            if self.up(n) and self.reaches_controller(n):
                if self.connected_since.get(n) is None:
                    startup = self.registered_at[n] + ZK_BROKER_STARTUP_NS if n in self.registered_at else t
                    self.connected_since[n] = max(t, self.controller_ready - METADATA_CATCHUP_NS,
                                                  startup - METADATA_CATCHUP_NS)
            elif not self.up(n) or (self.controller is not None and self.up(self.controller)):
                # cut from a controller that is there (or down itself): it misses decisions. With the controller
                # gone nothing is decided until a new one, whose failover sends every live broker its state.
                self.connected_since[n] = None
        self._zk_elect_controller(t)

    def _zk_refused_registration(self, n, t: int) -> bool:
        """Whether broker n, a process restarted while its old session was registered, is still kept out by it.

        Its new ZooKeeper session does not keep the old one alive, so /brokers/ids/N goes when the old session
        expires, zookeeper.session.timeout.ms after the old process last reached ZooKeeper, and the controller then
        takes it out of every ISR and elects from the rest (KafkaController.onBrokerFailure; _zk_sessions). Until
        then the new process serves nothing and leads nothing with its old log: KafkaServer.startup registers
        (KafkaZkClient.registerBroker) before it starts the controller or enables request processing, and gets no
        LeaderAndIsr before it. Its registration is refused while the old znode lives: CheckedEphemeral.create gets
        NODEEXISTS, and getAfterNodeExists throws it as the znode's ephemeral owner is not its session; startup
        fails and Kafka.main exits (read in 1.1.1 and 3.9.1). So a process whose start-up reached the registration
        (`ready_at`: at once in the recorded replay, RESTART_UNFENCE_NS later in the late one) before the old
        session expired is gone for good (the harness does not start it again); one slower registers, which the
        model lets it do from the expiry on, as any broker back from one (its LeaderAndIsr: ZK_BROKER_STARTUP_NS)."""
        if self.fenced[n] or not self.alive[n]:
            self.new_incarnation.discard(n)         # the old session is over (or the process gone again)
            return False
        if t >= self.ready_at[n] and self._zk_session_alive(n):
            self.alive[n] = False
            self.new_incarnation.discard(n)
            self.went_down(n, t)
            self.events.append({"t_ns": t, "event": "exited", "node": n,
                                "why": "registration refused (NODEEXISTS): its old ZooKeeper session lives"})
        return True

    def _zk_sessions(self, t: int):
        """Expire sessions that ZooKeeper has not heard from within the timeout; the controller, when it can act,
        takes the expired brokers out of ISRs and leadership, then elects leaders for leaderless partitions."""
        session = self.cfg.broker_session_timeout_ms * 1_000_000
        expired = [n for n in self.nodes if not self.fenced[n] and t - self.last_hb[n] > session]
        for n in expired:
            self.fenced[n] = True
            self.offline_pending.add(n)
            self.events.append({"t_ns": t, "event": "fenced", "node": n, "why": "ZooKeeper session expired"})
        if expired:
            self._zk_elect_controller(t)
        if not self._zk_controller_acts():
            return
        gone = sorted(n for n in self.offline_pending if self.fenced[n])
        self.offline_pending.clear()
        for p, part in self.parts.items():
            order = sorted(gone, key=lambda n: n != part.leader) if self.leader_fenced_first else gone
            for n in order:
                self._fence_replica(p, part, n, t)
            if part.leader is None or self.fenced[part.leader]:
                self._elect(p, part, t)

    def _zk_can_alter_isr(self, leader) -> bool:
        if self.cfg.applies("isr_change_through_controller"):
            return self.reaches_controller(leader) and self._zk_controller_acts()
        return self._zk_session_alive(leader)
