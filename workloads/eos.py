"""An exactly-once processor (`--workload eos`): one process, one consumer in the run's group reading the seeded input
topic (read_committed), one transactional producer writing the output topic, offsets committed in the transaction.

Each turn: consume up to `batch` records; begin a transaction; produce each record's transform (history/eos.py) to
the same partition of the output topic; `send_offsets_to_transaction` with, per input partition read, the offset
after the last record read, and the consumer's group metadata (KIP-447: the coordinator fences a commit from an
older generation); commit. An abort (on an abortable error, or every `abort_every`-th transaction on purpose) seeks
each partition read back to the transaction's first read, so the records are processed again; a fatal error (a
fenced producer) ends the transaction `unknown` (it may have committed), and the processor starts a new producer
under the same transactional.id (which fences the old one) and a new consumer, which starts at the group's
committed offsets.

The transactional.id is the processor's slot (`e1` for `e1`, `e1-r1`, ...): a replacement started after a kill fences
its predecessor's producer at init_transactions, which aborts the transaction it left open.

Journals: the sends as any producer's (producer-N.*: invoke at produce, the outcome once the transaction ended:
committed -> ok with the delivery report's offset, aborted -> fail `_TXN_ABORTED`, unknown -> info), and one line per
transaction in eos-NAME.tsv (history/eos.py).
"""
from __future__ import annotations

import faulthandler
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.history.eos import output_value, txn_line
from kafka_chaos.history.journal import NULL, LineJournal, producer_paths, write_progress, write_sidecar
from kafka_chaos.workloads.client_logging import client_logging
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.worker import detach_from_ctrl_c, should_stop

log = logging.getLogger(__name__)

TXN_ABORTED = "_TXN_ABORTED"
REBALANCED = "_REBALANCED"      # eos-NAME.tsv's error of a transaction aborted because its batch straddled a rebalance
SLOTS = 4                       # counters per processor: invoked, ok, fail, info (workloads.producer's layout)
INIT_ATTEMPTS = 10
FETCH_BYTES = 2048              # per partition and fetch: a few dozen input records
STUCK_TXN_S = 45                # a transaction open this long dumps the processor's Python stack (eos-NAME.stacks)


@dataclass(frozen=True)
class ProcessorSpec:
    index: int                  # its slot in the counters and its process number in the sends journals
    name: str                   # e0, e1-r1, ...
    bootstrap_servers: str
    input_topic: str
    output_topic: str
    journal_dir: str
    group_id: str
    transactional_prefix: str
    batch: int = 50
    rate: float | None = None   # records per second this processor processes at most (None: as fast as it can)
    abort_every: int = 0        # every n-th transaction aborted on purpose (0: none)
    transaction_timeout_ms: int = 20000
    session_timeout_ms: int = 10000
    flush_interval_s: float = 0.25
    client_log: str | None = None
    ready_timeout_s: float = 60.0
    client: str = "librdkafka"  # or java (workloads/java/EosProcessor.java)
    classpath: str = ""         # java: the compiled client's

    @property
    def slot(self) -> str:
        return self.name.split("-r")[0]

    def profile(self) -> ProducerProfile:
        return ProducerProfile(name=self.name, acks="all", idempotent=True, rate=None, transactional=True,
                               txn_size=self.batch, abort_every=max(self.abort_every, 1), client=self.client)


def write_sidecars(spec: ProcessorSpec) -> Path:
    """The processor's sends sidecar and eos sidecar; returns its progress file."""
    paths = producer_paths(spec.journal_dir, spec.index)
    write_sidecar(paths["sidecar"], {"kind": "sends", "process": spec.index, "producer": spec.name,
                                     "acks": "all", "idempotent": True, "profile": spec.profile().to_meta()})
    write_sidecar(Path(spec.journal_dir) / f"eos-{spec.name}.json", {"kind": "eos", "processor": spec.name,
                                                                     "process": spec.index})
    return paths["progress"]


class Stopped(Exception):
    """Told to stop while waiting on the cluster."""


class Processor:
    def __init__(self, spec: ProcessorSpec, counters):
        self.spec, self.counters = spec, counters
        write_sidecars(spec)
        paths = producer_paths(spec.journal_dir, spec.index)
        self.invokes = LineJournal(paths["invoke"])
        self.completes = LineJournal(paths["complete"])
        self.txns = LineJournal(f"{spec.journal_dir}/eos-{spec.name}.tsv")
        self.progress = paths["progress"]
        self.reports: dict[str, tuple] = {}       # value -> (err, partition, offset, t) of the open transaction
        self.counts = [0, 0, 0, 0]                # invoked, ok, fail, info
        self.txn = 0
        self.assigned_once = False
        self.rebalances = 0                       # assignments, revocations and losses served so far
        self.batch_mark = 0                       # `rebalances` when the batch in hand began to be polled
        self.batch_meta = None                    # the group metadata then (KIP-447's generation to commit with)
        self.started = time.time_ns()             # pacing starts once ready
        self.stopping = lambda: False             # run() makes it ask the stop event and the parent
        self.consumer = self.producer = None
        try:
            self.stacks = open(f"{spec.journal_dir}/eos-{spec.name}.stacks", "a")     # noqa: SIM115 - process-long
        except OSError:
            self.stacks = None

    # ---- clients ---------------------------------------------------------------------------------------------
    def _logging(self, role: str) -> dict:
        return client_logging(self.spec.client_log, f"{role}-{self.spec.name}")

    def _new_producer(self):
        from confluent_kafka import KafkaException, Producer

        s = self.spec
        conf = {"bootstrap.servers": s.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                "transactional.id": f"{s.transactional_prefix}-{s.slot}", "linger.ms": 5,
                "transaction.timeout.ms": s.transaction_timeout_ms, "on_delivery": self._on_delivery} \
            | self._logging("producer")
        p = Producer(conf)
        for attempt in range(INIT_ATTEMPTS):          # a fault may hold the coordinator away for a while
            if self.stopping():
                raise Stopped()
            try:
                p.init_transactions(30)
                return p
            except KafkaException as e:
                log.info("processor %s: init_transactions: %s", s.name, e.args[0])
                if attempt == INIT_ATTEMPTS - 1:
                    raise
                if not e.args[0].retriable():
                    p = Producer(conf)
                time.sleep(1)
        return p

    def _new_consumer(self):
        from confluent_kafka import Consumer

        s = self.spec
        c = Consumer({"bootstrap.servers": s.bootstrap_servers, "group.id": s.group_id, "enable.auto.commit": False,
                      "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed", "session.timeout.ms": s.session_timeout_ms,
                      "heartbeat.interval.ms": 1000,
                      # little prefetched per partition, so a backlog of one does not starve the others (seen: a
                      # processor of partitions 0 and 1 read only 0, its 40k records queued ahead of 1's)
                      "fetch.message.max.bytes": FETCH_BYTES, "queued.max.messages.kbytes": 16}
                     | self._logging("consumer"))
        c.subscribe([s.input_topic], on_assign=self._on_assign, on_revoke=self._on_rebalance,
                    on_lost=self._on_rebalance)
        return c

    def _on_assign(self, consumer, partitions) -> None:
        self.assigned_once = True
        self._on_rebalance(consumer, partitions)

    def _on_rebalance(self, consumer, partitions) -> None:
        """Counted: a batch polled across a rebalance may hold records of a partition no longer ours."""
        self.rebalances += 1

    def _on_delivery(self, err, msg) -> None:
        self.reports[msg.value().decode()] = (err, msg.partition(), msg.offset(), time.time_ns())

    # ---- one transaction -------------------------------------------------------------------------------------
    def _transaction(self, msgs: list) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        s, p = self.spec, self.producer
        reads = [(m.partition(), m.offset()) for m in msgs]
        first, last = {}, {}
        for part, off in reads:
            first.setdefault(part, off)
            last[part] = off
        commits = [(part, off + 1) for part, off in last.items()]
        values, t_begin, t_commit, outcome, error = [], time.time_ns(), None, "committed", None
        if self.stacks is not None:     # a transaction this long is stuck in the client: where, for the record
            faulthandler.dump_traceback_later(STUCK_TXN_S, repeat=True, file=self.stacks)
        try:
            p.begin_transaction()
            for m in msgs:
                v = output_value(m.partition(), m.offset(), m.value().decode(), s.name, self.txn)
                values.append(v)
                self.invokes.lines.append(f"{v}\t{m.partition()}\t{m.partition()}\t{time.time_ns()}\n")
                self.counts[0] += 1
                p.produce(s.output_topic, v, str(m.partition()), m.partition())
            self.invokes.flush()         # on disk before it can commit: a kill after the commit leaves no phantom
            p.flush(30)                  # every delivery report of this transaction, served
            # Polled across a rebalance, the batch may hold a partition that is another member's now, which reads it
            # from the last commit: committing would duplicate those records. Seen 2026-11-28: e1 joined while e0
            # held 25 records of partition 2; both committed them, e0 with the group metadata of the new generation
            # (taken at commit time then), which the coordinator accepted: it checks the generation, not the owner.
            straddled = self.rebalances != self.batch_mark
            if not straddled:       # with the generation the records were polled in: a later one fences it (KIP-447)
                p.send_offsets_to_transaction([TopicPartition(s.input_topic, part, off) for part, off in commits],
                                              self.batch_meta, 30)
            t_commit = time.time_ns()
            if straddled or (s.abort_every and self.txn % s.abort_every == s.abort_every - 1):
                p.abort_transaction(30)
                outcome, error = "aborted", REBALANCED if straddled else None
            else:
                self._commit()
        except KafkaException as e:
            outcome, error = self._after_error(e.args[0])
            t_commit = t_commit or time.time_ns()
        faulthandler.cancel_dump_traceback_later()
        p = self.producer
        p.poll(0)
        self._settle(values, outcome, error, reads, commits, t_begin, t_commit)
        self._flush()                   # settled on disk now: a processor stuck in its next transaction and
        #                                 terminated at the stop would otherwise lose this one's lines
        if outcome == "aborted":
            self._rewind(first)
        elif outcome == "unknown":      # it may have committed: start again from the group's committed offsets
            self._rejoin()
        self.txn += 1

    def _commit(self, attempts: int = 4) -> None:
        from confluent_kafka import KafkaException

        for attempt in range(attempts):
            try:
                self.producer.commit_transaction(30)
                return
            except KafkaException as e:
                if not e.args[0].retriable() or attempt == attempts - 1:
                    raise

    def _after_error(self, err) -> tuple[str, str]:
        """(outcome, error name) after a failed transaction: aborted if it could be, else unknown (new producer)."""
        from confluent_kafka import KafkaException

        if err.txn_requires_abort():
            try:
                self.producer.abort_transaction(30)
                return "aborted", err.name()
            except KafkaException as e2:
                err = e2.args[0]
        log.warning("processor %s: transaction %d ended unknown (%s): a new producer", self.spec.name, self.txn, err)
        try:
            self.producer.flush(5)
        except Exception:        # noqa: BLE001 - a fatal producer may refuse anything
            pass
        self.producer = self._new_producer()
        return "unknown", err.name()

    def _settle(self, values, outcome, error, reads, commits, t_begin, t_commit) -> None:
        t = time.time_ns()
        writes = []
        for v in values:
            err, part, off, t_report = self.reports.pop(v, (None, None, None, t))
            part = NULL if part is None or part < 0 else part
            if outcome == "committed" and err is None and off is not None and off >= 0:
                self.completes.lines.append(f"{v}\tok\t{NULL}\t{part}\t{off}\t{t_report}\n")
                self.counts[1] += 1
                writes.append((part, off))
                continue
            if outcome == "aborted":
                self.completes.lines.append(f"{v}\tfail\t{TXN_ABORTED}\t{part}\t{NULL}\t{t}\n")
                self.counts[2] += 1
            else:
                name = err.name() if err is not None else (error or "UNKNOWN")
                self.completes.lines.append(f"{v}\tinfo\t{name}\t{part}\t{NULL}\t{t}\n")
                self.counts[3] += 1
            writes.append((part, None if off is None or off < 0 or outcome != "committed" else off))
        self.reports.clear()
        self.txns.lines.append(txn_line(self.txn, outcome, error, reads, writes, commits, t_begin, t_commit, t))

    def _rewind(self, first: dict[int, int]) -> None:
        """Back to the transaction's first read of each partition, so an aborted batch is processed again."""
        from confluent_kafka import TopicPartition

        for part, off in first.items():
            try:
                self.consumer.seek(TopicPartition(self.spec.input_topic, part, off))
            except Exception as e:      # noqa: BLE001 - no longer assigned: its next owner starts at the commit
                log.debug("processor %s: seek %d:%d: %s", self.spec.name, part, off, e)

    def _poll(self, n: int) -> list:
        """Up to n records, from every partition held when it can: after a first batch, the partitions it came from
        are paused for one more consume, so the others (whose records may queue behind a backlog) get their turn
        and the transaction spans them (seen without: one of two partitions never read in a whole run)."""
        self.batch_mark, self.batch_meta = self.rebalances, self.consumer.consumer_group_metadata()
        msgs = [m for m in self.consumer.consume(max(1, n // 2), 0.1) if m.error() is None]
        if not msgs:
            return msgs
        from confluent_kafka import TopicPartition

        got = {m.partition() for m in msgs}
        try:
            held = {tp.partition for tp in self.consumer.assignment()}
        except Exception:       # noqa: BLE001 - mid-rebalance
            return msgs
        if not held - got:
            return msgs
        paused = [TopicPartition(self.spec.input_topic, p) for p in got & held]
        self.consumer.pause(paused)
        try:
            msgs += [m for m in self.consumer.consume(n - len(msgs), 0.1) if m.error() is None]
        finally:
            self.consumer.resume(paused)
        return msgs

    def _rejoin(self) -> None:
        """A new consumer (a new member): its partitions start at the group's committed offsets."""
        try:
            self.consumer.close()
        except Exception as e:          # noqa: BLE001 - a fault may be running
            log.debug("processor %s: close: %s", self.spec.name, e)
        self.consumer = self._new_consumer()

    # ---- the loop --------------------------------------------------------------------------------------------
    def _flush(self) -> None:
        for j in (self.invokes, self.completes, self.txns):
            j.flush()
        write_progress(self.progress, *self.counts)
        base = self.spec.index * SLOTS
        for k in range(SLOTS):
            self.counters[base + k] = self.counts[k]

    def run(self, stop_event, ready_event, parent_pid: int) -> None:
        self.stopping = lambda: should_stop(stop_event, parent_pid)
        try:
            self._run(stop_event, ready_event, parent_pid)
        except Stopped:
            log.info("processor %s: stopped while waiting on the cluster", self.spec.name)

    def _run(self, stop_event, ready_event, parent_pid: int) -> None:
        s = self.spec
        self.producer = self._new_producer()
        self.consumer = self._new_consumer()
        tick_ns = int(s.flush_interval_s * 1e9)
        now = time.time_ns()
        next_tick, ready_by = now + tick_ns, now + int(s.ready_timeout_s * 1e9)
        try:
            while True:
                due = s.batch if not s.rate or not ready_event.is_set() else \
                    int((time.time_ns() - self.started) * s.rate / 1e9) - self.counts[0] + s.batch
                if due > 0:
                    msgs = self._poll(min(due, s.batch))
                else:
                    msgs = []
                    time.sleep(0.05)
                t = time.time_ns()
                if not ready_event.is_set() and (self.assigned_once or t >= ready_by):
                    ready_event.set()
                    self.started = t
                if msgs:
                    self._transaction(msgs)
                if t >= next_tick:
                    self._flush()
                    if should_stop(stop_event, parent_pid):
                        break
                    next_tick = t + tick_ns
        finally:
            self._flush()
            try:
                self.consumer.close()
            except Exception as e:     # noqa: BLE001 - a fault may be running
                log.debug("processor %s: close: %s", s.name, e)
            for j in (self.invokes, self.completes, self.txns):
                j.close()


def run_processor(spec: ProcessorSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point (the signature of workloads.producer.run_producer)."""
    detach_from_ctrl_c()
    Processor(spec, counters).run(stop_event, ready_event, parent_pid)
