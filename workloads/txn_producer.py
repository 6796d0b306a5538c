"""The transactional producer (`--transactions`): librdkafka with a transactional.id, writing transactions that span
every partition, committing most and aborting every `abort_every`-th on purpose.

Each send is journaled at invoke as usual; its completion line waits until its transaction ends, because only then
is its outcome known to a read_committed reader: committed -> the delivery report's `ok` and offset; aborted (on
purpose, or after an abortable error) -> `fail` with error `_TXN_ABORTED` (in the log, but never visible to a
read_committed reader: Kafka's transaction markers, KIP-98); a commit whose outcome is unknown (a fatal error) ->
`info`. One line per transaction goes to producer-N.txn.tsv (history/journal.py): which values it held and how it
ended, so the checker can find committed transactions the final drain holds only in part.
"""
from __future__ import annotations

import logging
import os
import time

from kafka_chaos.history.journal import NULL, LineJournal, txn_path
from kafka_chaos.workloads.outcomes import FAIL, INFO, OK
from kafka_chaos.workloads.producer import ProducerSpec, ProducerWorker
from kafka_chaos.workloads.worker import detach_from_ctrl_c, should_stop

log = logging.getLogger(__name__)

TXN_ABORTED = "_TXN_ABORTED"
TXN_TIMEOUT_S = 30


def run_txn_producer(spec: ProducerSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point (the signature of workloads.producer.run_producer)."""
    detach_from_ctrl_c()
    TxnProducerWorker(spec, counters).run(stop_event, ready_event, parent_pid)


class TxnProducerWorker(ProducerWorker):
    def __init__(self, spec: ProducerSpec, counters):
        self.reports: list[tuple] = []            # delivery reports of the open transaction
        self.txn_no = 0
        super().__init__(spec, counters)
        self.txns = LineJournal(txn_path(spec.journal_dir, spec.process))

    def _new_producer(self):
        from confluent_kafka import Producer

        return Producer(super()._base_config() | {
            "transactional.id": f"kafka-chaos-{os.getpid()}-{self.spec.process}",
            "on_delivery": self._delivery_callback()})

    def _init(self, stop_event, parent_pid: int) -> bool:
        """init_transactions, asked again while it times out (the first transactional producer of a cluster
        waits for __transaction_state to be created); False if told to stop first."""
        from confluent_kafka import KafkaException

        while not should_stop(stop_event, parent_pid):
            try:
                self.producer.init_transactions(TXN_TIMEOUT_S)
                return True
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise
                log.info("producer %s: init_transactions: %s; asking again", self.profile.name, e.args[0])
        return False

    def _delivery_callback(self):
        reports, time_ns = self.reports, time.time_ns

        def on_delivery(err, msg):
            reports.append((msg.value().decode(), err, msg.partition(), msg.offset(), time_ns()))
        return on_delivery

    def _settle(self, outcome: str, error: str | None, first: int, n: int) -> None:
        """Journal the transaction's completions and its own line."""
        t = time.time_ns()
        ok, fail, info = self.outcomes
        for value, err, partition, offset, t_report in self.reports:
            part = NULL if partition is None or partition < 0 else partition
            if outcome == "committed" and err is None:
                self.completes.lines.append(f"{value}\t{OK}\t{NULL}\t{part}\t{offset}\t{t_report}\n")
                ok += 1
            elif outcome == "aborted":
                self.completes.lines.append(f"{value}\t{FAIL}\t{TXN_ABORTED}\t{part}\t{NULL}\t{t}\n")
                fail += 1
            else:
                name = err.name() if err is not None else (error or "UNKNOWN")
                self.completes.lines.append(f"{value}\t{INFO}\t{name}\t{part}\t{NULL}\t{t}\n")
                info += 1
        self.outcomes[:] = [ok, fail, info]
        self.txns.lines.append(f"{self.txn_no}\t{first}\t{n}\t{outcome}\t{error or NULL}\t{t}\n")
        self.reports.clear()
        self.txn_no += 1

    def _commit(self, attempts: int = 4) -> None:
        """commit_transaction, asked again after a retriable error (a timeout: "retry call to resume")."""
        from confluent_kafka import KafkaException

        for attempt in range(attempts):
            try:
                self.producer.commit_transaction(TXN_TIMEOUT_S)
                return
            except KafkaException as e:
                if not e.args[0].retriable() or attempt == attempts - 1:
                    raise

    def _transaction(self, first: int, n: int, abort: bool) -> None:
        """One transaction of values first..first+n-1, round robin over the partitions."""
        from confluent_kafka import KafkaException

        spec, p = self.spec, self.producer
        try:
            p.begin_transaction()
            for seq in range(first, first + n):
                partition = seq % spec.partitions
                value = f"{spec.process}-{seq}"
                self.invokes.lines.append(f"{value}\t{partition}\t{partition}\t{time.time_ns()}\n")
                p.produce(spec.topic, value, str(partition), partition)
            p.flush(TXN_TIMEOUT_S)                 # every delivery report of this transaction, served
            if abort:
                p.abort_transaction(TXN_TIMEOUT_S)
                self._settle("aborted", None, first, n)
            else:
                self._commit()
                p.poll(0)
                self._settle("committed", None, first, n)
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(TXN_TIMEOUT_S)
                    self._settle("aborted", err.name(), first, n)
                    return
                except KafkaException as e2:
                    err = e2.args[0]
            log.warning("producer %s: transaction %d ended unknown (%s): a new client", self.profile.name,
                        self.txn_no, err)
            self._settle("unknown", err.name(), first, n)
            self.producer = self._new_producer()
            self.producer.init_transactions(TXN_TIMEOUT_S)

    def run(self, stop_event, ready_event, parent_pid: int) -> None:
        # ready only once the transaction coordinator answered: the faults start after every worker is ready
        if not self._init(stop_event, parent_pid):
            self._close()
            return
        ready_event.set()
        spec, prof = self.spec, self.profile
        size = max(spec.partitions, prof.txn_size)
        tick_ns = int(spec.flush_interval_s * 1e9)
        start = next_tick = time.time_ns()
        while True:
            now = time.time_ns()
            if now >= next_tick:
                self._checkpoint()
                self.txns.flush()
                if should_stop(stop_event, parent_pid):
                    break
                next_tick = now + tick_ns
            due = int((now - start) * (prof.rate or 1000) / 1e9) - self.seq
            if due < size:
                time.sleep(min(0.05, spec.flush_interval_s))
                continue
            self._transaction(self.seq, size, abort=self.txn_no % prof.abort_every == prof.abort_every - 1)
            self.seq += size
        self._close()

    def _close(self) -> None:
        self._checkpoint()
        self.txns.flush()
        self.invokes.close()
        self.completes.close()
        self.txns.close()
        self.stats.journal.close()
