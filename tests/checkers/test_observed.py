"""What the cluster visibly did (cluster.parquet), and where the model's predictions disagree with it."""
import pandas as pd

from kafka_chaos.checkers.model import ModelConfig, run_model
from kafka_chaos.checkers.model.observed import isr_below, model_disagreements, observed_events
from tests.checkers.conftest import MS, T, sample

S = 1000


def samples(rows):
    return pd.DataFrame(rows)


def quiet_model():
    cfg = ModelConfig(kafka_version="4.4.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                      controllers=(101,), brokers=(1, 2, 3))
    return run_model(cfg, [], None, t_begin=T, t_end=T + 60 * S * MS)


def test_a_leader_from_outside_the_isr_that_is_alone_in_it_is_an_unclean_election_when_the_elr_is_visible():
    rows = [sample(t, 1, (1,), elr=[]) for t in range(0, 5 * S, 500)] + \
        [sample(t, 2, (2,), elr=[]) for t in range(5 * S, 10 * S, 500)]
    (e,) = [e for e in observed_events(samples(rows)) if e["event"] == "election"]
    assert (e["leader"], e["how"]) == (2, "uncleanly")
    assert [d["kind"] for d in model_disagreements(quiet_model(), samples(rows))] == \
        ["unpredicted_unclean_election"]


def test_a_replica_back_in_the_isr_and_then_elected_is_a_clean_election():
    rows = [sample(t, 2, (2, 3)) for t in range(0, 5 * S, 500)] + \
        [sample(t, 1, (1, 2, 3)) for t in range(5 * S, 10 * S, 500)]
    (e,) = [e for e in observed_events(samples(rows)) if e["event"] == "election"]
    assert e["how"] == "from the ISR"


def test_one_stale_sample_is_no_election_and_no_high_watermark_drop():
    rows = [sample(t, 1, (1, 2, 3), hw=100 + t) for t in range(0, 10 * S, 500)]
    rows[6] = sample(3 * S, 2, (2, 3), hw=5)
    assert observed_events(samples(rows)) == []


def test_a_persistent_high_watermark_drop_is_a_truncation_the_quiet_model_did_not_predict():
    rows = [sample(t, 1, (1, 2, 3), hw=1000) for t in range(0, 5 * S, 500)] + \
        [sample(t, 1, (1, 2, 3), hw=400) for t in range(5 * S, 10 * S, 500)]
    (d,) = model_disagreements(quiet_model(), samples(rows))
    assert d["kind"] == "unpredicted_hw_drop" and (d["hw_before"], d["hw_after"]) == (1000, 400)


def test_the_isr_below_min_isr_is_seen_only_when_it_persists_and_is_trimmed():
    rows = [sample(t, 1, (1, 2, 3)) for t in range(0, 5 * S, 500)] + \
        [sample(t, 1, (1,)) for t in range(5 * S, 15 * S, 500)] + [sample(15 * S, 1, (1, 2))]
    ((p, start, end),) = isr_below(samples(rows), need=2)
    assert p == 0 and start == T + 6 * S * MS and end == T + (14_500 - 1000) * MS


def test_a_watermark_the_sampler_could_not_read_is_no_drop():
    rows = [sample(t, 1, (1, 2, 3), hw=1000) for t in range(0, 5 * S, 500)] + \
        [sample(t, 1, (1, 2, 3), hw=-1001) for t in range(5 * S, 10 * S, 500)]
    assert observed_events(samples(rows)) == []


def test_a_replica_from_outside_the_isr_elected_as_the_high_watermark_falls_is_unclean_though_the_isr_refilled():
    # the unclean leader's ISR grew back before the next sample: only the high watermark tells
    rows = [sample(t, 1, (1,), hw=9000 + t) for t in range(0, 5 * S, 500)] + \
        [sample(t, 2, (2, 3), hw=4000 + t) for t in range(5 * S, 10 * S, 500)]
    (e,) = [e for e in observed_events(samples(rows)) if e["event"] == "election"]
    assert e["how"] == "uncleanly"


def test_hours_of_repeated_samples_give_the_same_events_and_windows_as_their_changes_alone():
    # the scans skip samples that repeat their neighbours' leader, ISR and ELR: the events and windows must be those
    # of the changes, at the exact sample times, however long the steady stretches between them are
    def history(steady):
        rows, t = [], 0
        for leader, isr, hw in [(1, (1, 2, 3), 100), (1, (1,), 200), (2, (2,), 150), (2, (2, 3), 300)]:
            for _ in range(steady):
                rows.append(sample(t, leader, isr, hw=hw, elr=[]))
                t += 500
        return samples(rows)

    long_run, short_run = history(7200), history(4)     # an hour per stretch, and two seconds
    assert [(e["event"], e.get("how"), e["t_ns"]) for e in observed_events(long_run)] == [
        ("election", "uncleanly", T + 2 * 7200 * 500 * MS), ("hw_drop", None, T + 2 * 7200 * 500 * MS)]
    assert [(e["event"], e.get("how")) for e in observed_events(short_run)] == [
        ("election", "uncleanly"), ("hw_drop", None)]
    assert isr_below(long_run, 2) == [(0, T + 7200 * 500 * MS + S * MS, T + (3 * 7200 - 1) * 500 * MS - S * MS)]


def test_the_last_sample_before_a_gap_with_no_answer_persists_and_the_unclean_election_after_it_is_seen():
    # a cascade-kill on 3.9.2: broker 1 leads with ISR [1, 3] (one sample), every broker is then down for 31.6 s
    # (no sample), broker 2, which was out of that ISR, comes back alone: elected from outside the ISR
    rows = [sample(t, 2, (1, 2, 3)) for t in range(0, 5 * S, 500)] + [sample(8 * S, 1, (1, 3))] + \
        [sample(t, 2, (2,)) for t in range(39_600, 45 * S, 500)]
    elected = [(e["leader"], e["how"]) for e in observed_events(samples(rows)) if e["event"] == "election"]
    assert elected == [(1, "from the ISR"), (2, "outside the visible ISR")]
    # the counter-case: the same lone sample followed half a second later by another answer is a stale one
    stale = [sample(t, 2, (1, 2, 3)) for t in range(0, 5 * S, 500)] + [sample(5 * S, 1, (1, 3))] + \
        [sample(t, 2, (1, 2, 3)) for t in range(5_500, 10 * S, 500)]
    assert observed_events(samples(stale)) == []
