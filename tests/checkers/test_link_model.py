"""The ISR model's `link` effect (a toxic on the link proxy) on hand-written timelines.

A follower whose fetch link to its leader is slowed may lag out of the ISR (Partition.getOutOfSyncReplicas) or keep
up; unlike a CPU-starved node it is never fenced, because heartbeats go to the controller, whose links are not
proxied. Client links change nothing the model decides. Timelines follow follower-link-then-leader-kill:
replication factor 2, follower 2's fetch link to leader 1 slowed, leader 1 killed.
"""
import pandas as pd

from kafka_chaos.checkers.model import FaultEffect, run_model
from tests.checkers.test_slow_model import T0, S, cfg  # the same cluster: replication factor 2, brokers 1-3


def link(action, t, links=((2, 1), (2, 3)), nodes=(2,)):
    return FaultEffect(t_ns=t, action=action, effect="link", nodes=nodes, fault="follower-link-bandwidth",
                       links=links)


def kill(action, node, t):
    return FaultEffect(t_ns=t, action=action, effect="kill", nodes=(node,), fault="leader-kill")


def run(timeline, min_isr=1, unclean=False):
    return run_model(cfg(min_isr, unclean), timeline, t_begin=T0, t_end=T0 + 120 * S)


def test_a_slowed_fetch_link_drives_its_follower_out_after_the_lag_time_and_never_fences_it():
    model = run([link("start", T0 + 2 * S), link("heal", T0 + 30 * S)])
    isr = [e for e in model.events if e["event"] == "isr"]
    assert [e["isr"] for e in isr] == [[1], [1, 2]]
    assert isr[0]["t_ns"] - (T0 + 2 * S) == 5 * S                       # replica.lag.time.max.ms
    assert isr[1]["t_ns"] >= T0 + 30 * S                                 # back once the toxic is gone
    for replay in [model, *model.alternatives]:
        assert not any(e["event"] == "fenced" for e in replay.events)
    keeping_up = model.alternatives[-1]
    assert not any(e["event"] == "isr" for e in keeping_up.events)


def test_only_the_slowed_pair_lags_a_link_to_another_leader_changes_nothing():
    model = run([link("start", T0 + 2 * S, links=((2, 3),)), link("heal", T0 + 30 * S, links=((2, 3),))])
    assert not any(e["event"] == "isr" for e in model.events)          # 2 fetches chaos/0 from 1, not 3


def test_client_links_change_nothing_the_model_decides():
    model = run([link("start", T0 + 2 * S, links=(("client", 1),), nodes=(1,)),
                 link("heal", T0 + 30 * S, links=(("client", 1),), nodes=(1,))])
    assert not any(e["event"] in ("isr", "leader", "fenced") for e in model.events)
    assert model.alternatives and len(model.alternatives) == 1          # no keeping-up replay needed


def test_with_unclean_election_a_link_lagged_follower_elected_puts_the_leaders_lone_acks_at_risk():
    model = run([link("start", T0 + 2 * S), kill("start", 1, T0 + 15 * S), kill("heal", 1, T0 + 40 * S),
                 link("heal", T0 + 50 * S)], unclean=True)
    status, reason = model.durability(0, T0 + 12 * S, "all")
    assert status == "at_risk" and "unclean" in reason
    assert model.durability(0, T0 - 5 * S, "all")[0] == "guaranteed"
    assert run([link("start", T0 + 2 * S), kill("start", 1, T0 + 15 * S), kill("heal", 1, T0 + 40 * S),
                link("heal", T0 + 50 * S)]).durability(0, T0 + 12 * S, "all")[0] == "guaranteed"


def test_the_faults_row_details_reach_the_model():
    row = FaultEffect.from_row(T0, "start", "follower-link-slow", [2],
                               '{"effect": "link", "toxic": "latency", "links": [[2, 1], ["client", 2]]}')
    assert row.links == ((2, 1), ("client", 2))
    faults = pd.DataFrame([{"t_ns": T0 + 2 * S, "action": "start", "fault": "f", "nodes": [2],
                            "details": '{"effect": "link", "links": [[2, 1]]}'},
                           {"t_ns": T0 + 30 * S, "action": "heal", "fault": "f", "nodes": [2],
                            "details": '{"effect": "link", "links": [[2, 1]]}'}])
    assert [e["isr"] for e in run_model(cfg(), faults, t_begin=T0, t_end=T0 + 60 * S).events
            if e["event"] == "isr"] == [[1], [1, 2]]
