"""Property tests: k anomalies of a kind injected into a clean synthetic history are found exactly k times."""
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_chaos.checkers.reference import find_anomalies
from kafka_chaos.history.synthetic.inject import _RECIPES, inject_anomalies
from tests.checkers.synthetic_frames import clean_history

INJECTABLE = [k for k in _RECIPES if k != "recovered"]


def test_a_clean_synthetic_history_has_only_recovered_sends():
    sends, reads = clean_history(sends=600, seed=0, consumers=2)
    found = Counter(find_anomalies(sends, reads)["kind"])
    assert set(found) == {"recovered"}
    timed_out_and_read = sends[(sends["outcome"] == "info") & sends["value"].isin(reads["value"])]
    assert found["recovered"] == len(timed_out_and_read) > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(INJECTABLE), k=st.integers(0, 6), seed=st.integers(0, 10_000),
       consumers=st.integers(1, 2))
def test_injecting_k_of_a_kind_finds_exactly_k(kind, k, seed, consumers):
    sends, reads = clean_history(sends=400, seed=seed % 7, consumers=consumers)
    baseline = Counter(find_anomalies(sends, reads)["kind"])
    s, r = inject_anomalies(sends, reads, {kind: k}, np.random.default_rng(seed))
    found = Counter(find_anomalies(s, r)["kind"])
    assert found[kind] == k
    others = {x for x in INJECTABLE if x != kind}
    assert {x: found[x] for x in others if found[x]} == {}      # no collateral anomalies of other kinds
    assert found["recovered"] >= baseline["recovered"]
    # a divergent position is a live read of a value the drain lacks: by definition also a lost_after_read
    assert found["lost_after_read"] == (k if kind == "divergent" else 0)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.fixed_dictionaries({kind: st.integers(0, 3) for kind in INJECTABLE}), seed=st.integers(0, 1000))
def test_kinds_injected_together_are_each_found_exactly(counts, seed):
    sends, reads = clean_history(sends=800, seed=seed % 5, consumers=1)
    s, r = inject_anomalies(sends, reads, counts, np.random.default_rng(seed))
    found = Counter(find_anomalies(s, r)["kind"])
    assert {kind: found[kind] for kind in INJECTABLE} == counts
    assert found["lost_after_read"] == counts["divergent"]
