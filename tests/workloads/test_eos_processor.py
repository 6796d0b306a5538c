"""The exactly-once processor's commit across a rebalance, with stand-in clients (no cluster).

A real run (2026-11-28, consumer-and-leader-kill, seed 35) judged 25 eos_duplicate: e1 joined while e0 held a polled
batch of partition 2; the rebalance was served in e0's second consume of the batch, e1 read partition 2 from the
last commit, and e0 committed the batch with the group metadata it took at commit time, of the new generation.
"""
from kafka_chaos.workloads.eos import REBALANCED, Processor, ProcessorSpec


class Message:
    def __init__(self, partition, offset):
        self._p, self._o = partition, offset

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def value(self):
        return f"in-{self._p}-{self._o}".encode()

    def error(self):
        return None


class Consumer:
    """Hands out one batch of partition 2 and, on the next consume, serves a rebalance that takes partition 2 away
    (`rebalance_on_second`), as librdkafka serves a revoke inside consume()."""

    def __init__(self, processor, rebalance_on_second):
        self.processor, self.rebalance = processor, rebalance_on_second
        self.generation, self.calls, self.held = 1, 0, {0, 1, 2}

    def consume(self, n, timeout):
        self.calls += 1
        if self.calls == 1:
            return [Message(2, o) for o in range(25, 50)]
        if self.rebalance:
            self.processor._on_rebalance(self, [])           # revoke
            self.generation, self.held = 2, {0, 1}
            self.processor._on_assign(self, [])
        return []

    def assignment(self):
        from confluent_kafka import TopicPartition
        return [TopicPartition("in", p) for p in sorted(self.held)]

    def consumer_group_metadata(self):
        return ("metadata", self.generation)

    def pause(self, parts):
        pass

    def resume(self, parts):
        pass

    def seek(self, tp):
        pass


class Producer:
    def __init__(self):
        self.calls = []

    def begin_transaction(self):
        self.calls.append("begin")

    def produce(self, *args):
        pass

    def flush(self, timeout=None):
        return 0

    def poll(self, timeout=None):
        return 0

    def send_offsets_to_transaction(self, offsets, metadata, timeout):
        self.calls.append(("offsets", [(tp.partition, tp.offset) for tp in offsets], metadata))

    def commit_transaction(self, timeout=None):
        self.calls.append("commit")

    def abort_transaction(self, timeout=None):
        self.calls.append("abort")


def processor(tmp_path, rebalance):
    spec = ProcessorSpec(index=0, name="e0", bootstrap_servers="-", input_topic="in", output_topic="out",
                         journal_dir=str(tmp_path), group_id="g", transactional_prefix="t")
    proc = Processor(spec, [0] * 8)
    proc.consumer, proc.producer = Consumer(proc, rebalance), Producer()
    return proc


def last_txn_line(tmp_path):
    proc_lines = (tmp_path / "eos-e0.tsv").read_text().splitlines()
    return proc_lines[-1].split("\t")


def test_a_batch_polled_across_a_rebalance_is_aborted_not_committed(tmp_path):
    proc = processor(tmp_path, rebalance=True)
    proc._transaction(proc._poll(50))
    proc._flush()
    assert proc.producer.calls == ["begin", "abort"]
    assert last_txn_line(tmp_path)[1:3] == ["aborted", REBALANCED]


def test_a_batch_without_a_rebalance_commits_with_the_generation_it_was_polled_in(tmp_path):
    proc = processor(tmp_path, rebalance=False)
    msgs = proc._poll(50)
    proc.consumer.generation = 7           # whatever the consumer says by commit time, the batch's generation goes
    proc._transaction(msgs)
    proc._flush()
    assert proc.producer.calls == ["begin", ("offsets", [(2, 50)], ("metadata", 1)), "commit"]
    assert last_txn_line(tmp_path)[1] == "committed"
