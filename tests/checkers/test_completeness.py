"""No verdict without a complete drain: which partitions a run's final drain read whole, and why not."""
from kafka_chaos.checkers.completeness import completeness
from kafka_chaos.history.meta import RunMeta


def meta(**kw) -> RunMeta:
    return RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=2, **kw)


def test_a_healthy_drain_that_read_every_partition_to_its_end_is_complete():
    c = completeness(meta(drain={"healthy": True, "incomplete": [], "ends": {"0": 5}}), {0: 5, 1: 3}, {0, 1})
    assert c.status == "complete" and c.complete_partitions == [0, 1, 2]


def test_a_partition_the_drain_did_not_read_to_its_end_is_incomplete_and_only_that_one():
    c = completeness(meta(drain={"healthy": True, "incomplete": [2], "ends": {"2": 900}}), {0: 5}, {0, 2})
    assert c.status == "incomplete"
    assert list(c.incomplete) == [2] and "end offset 900" in c.incomplete[2]
    assert c.complete_partitions == [0, 1]


def test_a_drain_from_an_unhealthy_cluster_judges_no_partition():
    c = completeness(meta(drain={"healthy": False, "incomplete": []}), {0: 5, 1: 5, 2: 5}, {0, 1, 2})
    assert sorted(c.incomplete) == [0, 1, 2] and "not healthy" in c.incomplete[0]


def test_an_interrupted_run_has_no_verdict_even_with_a_drain():
    c = completeness(meta(interrupted="KeyboardInterrupt: ", drain={"healthy": True, "incomplete": []}),
                     {0: 1}, {0})
    assert c.status == "incomplete" and "interrupted" in c.run_reasons[0]


def test_a_run_killed_before_its_drain_has_no_final_reads_and_no_verdict():
    c = completeness(meta(interrupted="killed"), {}, {0, 1, 2})
    assert sorted(c.incomplete) == [0, 1, 2] and "no final reads" in c.incomplete[0]


def test_without_a_drain_record_a_partition_with_acked_writes_and_no_final_read_is_incomplete():
    c = completeness(meta(), {0: 10}, {0, 1})
    assert list(c.incomplete) == [1]
    assert completeness(meta(), {0: 10, 1: 4}, {0, 1}).status == "complete"


def test_the_reasons_are_written_per_partition():
    c = completeness(meta(drain={"healthy": True, "incomplete": [1]}), {0: 1}, {0})
    assert c.as_dict() == {"status": "incomplete", "run": [],
                           "partitions": {"1": "the final drain did not read this partition to its end"}}


def test_a_history_without_a_single_send_cannot_be_judged():
    c = completeness(meta(drain={"healthy": True, "incomplete": []}), {}, set(), sends=0)
    assert c.status == "incomplete" and "no send" in c.run_reasons[0]
    assert completeness(meta(drain={"healthy": True, "incomplete": []}), {0: 1}, {0}, sends=1).status == "complete"
