"""Four model rules read against Kafka's code (issue 32): each test failed on the model before its fix.

1. A leader restarted before its session lapsed leads nothing: the controller refuses the new incarnation's
   registration while the old session is valid (ClusterControlManager.registerBroker), and BrokerServer.startup
   opens no listener before the controller unfences it, so it serves no produce and no fetch.
2. A rewrite or an idempotent duplicate is excused only by a loss event whose lost piece could hold the write.
3. A power loss is blamed for a lost piece only when the cut of the broker whose log became the truth removed it.
4. The last known leader is whoever led when the ISR emptied: the last ISR member fenced, one broker at a time
   (ReplicationControlManager.maybeFenceOneStaleBroker, PartitionChangeBuilder.maybeUpdateLastKnownLeader).
"""
from kafka_chaos.checkers.model import FaultEffect, run_model
from tests.checkers.test_isr_model import T0, S, cfg, kill, restart

DEDICATED = dict(brokers=(1, 2, 3), controllers=(101,))


def power(node, t, action="start"):
    return FaultEffect(t_ns=t, action=action, effect="power_loss", nodes=(node,), fault="power")


def cut(pairs, t, action="start", name="cut"):
    drops = tuple((a, b) for x, y in pairs for a, b in ((x, y), (y, x)))
    return FaultEffect(t_ns=t, action=action, effect="net", nodes=(pairs[0][0],), fault=name, drops=drops)


def leaders(model):
    return [(e["leader"], e["how"]) for e in model.events if e["event"] == "leader"]


# -- rule 1 ------------------------------------------------------------------------------------------------------

def test_a_leader_power_cut_and_restarted_within_its_session_does_not_hand_its_cut_log_to_the_followers():
    # Broker 1 leads; it loses power at 100 s (its last 35 s are unflushed) and is back at 103 s, inside its 9 s
    # session. Kafka refuses the new process's registration until the old session lapses (~109 s) and the new
    # process accepts no connection until unfenced, so 2 and 3 keep their logs and one of them, holding every
    # acks=all write, is elected when 1 is fenced.
    model = run_model(cfg(min_isr=2, **DEDICATED), [power(1, T0 + 100 * S), power(1, T0 + 103 * S, "heal")],
                      t_begin=T0, t_end=T0 + 200 * S)
    assert leaders(model)[0] == (2, "from the ISR")
    for t in (70, 90, 99):
        assert model.durability(0, T0 + t * S, "all", T0 + t * S)[0] == "guaranteed"
    assert model.predictions()["lost"] != "expected"


def test_a_leader_killed_and_restarted_within_its_session_acknowledges_nothing_after_the_restart():
    model = run_model(cfg(acks=("1",), min_isr=2, **DEDICATED), [kill(1, T0 + 100 * S), restart(1, T0 + 103 * S)],
                      t_begin=T0, t_end=T0 + 200 * S)
    assert [leader for leader, _ in leaders(model)][:1] == [2]
    for t in (104, 108, 110, 113, 120):        # refused, then fenced: no zombie acks, no tail of a restarted epoch
        assert model.durability(0, T0 + t * S, "1", T0 + t * S)[0] == "guaranteed", t
    assert model.unwritable(0, T0 + 106 * S, T0 + 106 * S, "1")     # nobody serves until 2 is elected


# -- rule 2 ------------------------------------------------------------------------------------------------------

def test_a_followers_power_loss_excuses_no_rewrite_and_no_duplicate():
    model = run_model(cfg(min_isr=2, **DEDICATED), [power(3, T0 + 100 * S), power(3, T0 + 110 * S, "heal")],
                      t_begin=T0, t_end=T0 + 200 * S)
    assert model.durability(0, T0 + 90 * S, "all", T0 + 90 * S)[0] == "guaranteed"
    assert model.rewrite_cause(0, 5, T0 + 50 * S) is None
    assert model.rewrite_cause(0, 5, T0 + 95 * S) is None
    assert model.idempotence_voided(0, T0 + 95 * S) is None


def test_an_unclean_election_minutes_later_whose_leader_held_the_write_excuses_nothing():
    five = (1, 2, 3, 4, 5)
    timeline = [kill(2, T0 + 10 * S), kill(3, T0 + 10 * S), kill(1, T0 + 200 * S), restart(2, T0 + 230 * S)]
    model = run_model(cfg(min_isr=1, unclean=True, version="3.9.0", brokers=five), timeline,
                      t_begin=T0, t_end=T0 + 400 * S)
    assert any(how == "uncleanly" for _, how in leaders(model))
    assert model.durability(0, T0 + 5 * S, "all", T0 + 5 * S)[0] == "guaranteed"
    assert model.rewrite_cause(0, 5, T0 + 6 * S) is None              # read at 6 s: 2 held it (in sync till 10 s)
    assert model.idempotence_voided(0, T0 + 5 * S, T0 + 5 * S + S // 100) is None    # acked at once
    assert model.idempotence_voided(0, T0 + 250 * S) is None        # invoked after the lost piece
    # the counter-case: written while broker 1 was alone, which 2 lacked
    assert model.durability(0, T0 + 150 * S, "all", T0 + 150 * S)[0] == "at_risk"
    assert "unclean" in model.rewrite_cause(0, 5, T0 + 151 * S)
    assert "unclean" in model.idempotence_voided(0, T0 + 150 * S)


# -- rule 3 ------------------------------------------------------------------------------------------------------

def _shrunk_then_failover(fault):
    # 1 is cut from its followers at 10 s (not from the controller or the clients): acks=all cannot complete (the
    # HW waits for them), and from the shrink at ~40 s Kafka rejects it (ISR [1] < min ISR 2; ELR {2, 3}). 3 then
    # loses power (or is killed) and comes back, leaving the ELR; 1 is killed, and 2 is elected from the ELR,
    # lacking everything 1 wrote after 10 s. None of it was acked with acks=all.
    return [cut([(1, 2), (1, 3)], T0 + 10 * S), fault(3, T0 + 50 * S),
            FaultEffect(T0 + 55 * S, "heal", fault(3, 0).effect, (3,), fault=fault(3, 0).fault),
            kill(1, T0 + 70 * S)]


def test_a_clean_election_after_a_bystanders_power_loss_loses_no_acks_all_write():
    for fault in (power, kill):
        model = run_model(cfg(acks=("1", "all"), min_isr=2, version="4.1.0", **DEDICATED),
                          _shrunk_then_failover(fault), t_begin=T0, t_end=T0 + 200 * S)
        assert (2, "from the ELR") in leaders(model), fault
        assert model.durability(0, T0 + 30 * S, "1", T0 + 30 * S)[0] == "at_risk"
        status, reason = model.durability(0, T0 + 30 * S, "all", T0 + 30 * S)
        assert status == "guaranteed", (fault, reason)


# -- rule 4 ------------------------------------------------------------------------------------------------------

def test_the_last_known_leader_is_the_last_isr_member_fenced():
    # ELR on. 3's fetches from 1 stop at 10 s, but it is still in the ISR (lag 30 s) when all three are killed at
    # 30 s. Their sessions lapse together and the controller fences them one at a time: fencing 1 elects 2,
    # fencing 2 elects 3, fencing 3 empties the ISR with 3 as the last known leader. Back from their unclean
    # shutdowns, all leave the ELR, and 3 is elected as the last known leader: 1's acks=1 writes after 10 s are gone.
    timeline = [cut([(1, 3)], T0 + 10 * S)] + [kill(n, T0 + 30 * S) for n in (1, 2, 3)] + \
        [restart(n, T0 + 60 * S) for n in (1, 2, 3)]
    model = run_model(cfg(acks=("1",), min_isr=2, version="4.4.0", **DEDICATED), timeline,
                      t_begin=T0, t_end=T0 + 300 * S)
    last = [(leader, how) for leader, how in leaders(model) if "last known" in how]
    assert last and last[0][0] == 3
    passing = [e["leader"] for e in model.events if e["event"] == "leader" and e.get("transient")]
    assert passing == [2, 3]                # elected while the next stale broker still waited to be fenced
    status, reason = model.durability(0, T0 + 20 * S, "1", T0 + 20 * S)
    assert status == "at_risk" and "broker 3" in reason          # left when 3 was elected, lacking it
    assert model.durability(0, T0 + 5 * S, "1", T0 + 5 * S)[0] == "guaranteed"


def test_a_rewrite_is_excused_only_at_offsets_the_lost_piece_could_hold():
    # the last replica standing (3.9, no ELR) loses power at 100 s and is elected again: what it appended from
    # 65 s on is gone. A position already below the high watermark sampled just before that piece began was not in
    # it; one at or above it may have been.
    import pandas as pd
    timeline = [kill(2, T0 + 10 * S), kill(3, T0 + 10 * S), power(1, T0 + 100 * S), power(1, T0 + 110 * S, "heal")]
    samples = pd.DataFrame({"t_ns": [T0, T0 + 62 * S], "partition": [0, 0], "leader": [1, 1],
                            "isr": [[1, 2, 3], [1]], "high_watermark": [0, 50]})
    model = run_model(cfg(min_isr=1, version="3.9.2", elr=False, **DEDICATED), timeline, samples,
                      t_begin=T0, t_end=T0 + 300 * S)
    assert model.durability(0, T0 + 90 * S, "all", T0 + 90 * S)[0] == "at_risk"
    assert model.rewrite_cause(0, 10, T0 + 91 * S) is None
    assert "power loss of broker 1" in model.rewrite_cause(0, 60, T0 + 91 * S)
