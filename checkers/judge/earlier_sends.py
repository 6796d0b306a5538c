"""The excuse of a nonmonotonic_send: the idempotent producer's earlier send it was acked below was truncated away
by a loss event between that send and this ack (EARLIER_SEND_TRUNCATED)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kafka_chaos.checkers.client import earlier_sends
from kafka_chaos.checkers.excuses import Claim, Times, claim, loss_claim, rule


def _between_the_earlier_send_and_this_ack(cause, times: Times) -> bool:
    """times.sent: the earlier send's invocation; times.acked: this send's ack. The truncation removed the earlier
    write, so it came after that write existed, and this write was appended above the cut, so before its ack."""
    return times.sent is not None and times.acked is not None and times.sent <= cause.t_ns <= times.acked


EARLIER_SEND_TRUNCATED = rule(
    "nonmonotonic_send.earlier_send_truncated", ("nonmonotonic_send",),
    "an unclean election or a power loss removed the producer's earlier acked write: the other replicas truncate "
    "to the elected log (UnifiedLog.truncateTo, AbstractFetcherThread.truncateToEpochEndOffsets, KIP-101), and the "
    "elected leader, whose producer state is rebuilt from its own log, accepts the producer's next batch (a new "
    "epoch from sequence 0, or any sequence without state: ProducerAppendInfo.checkSequence) at its lower log end "
    "offset; idempotence orders what the log keeps, not offsets the election gave away",
    "the earlier send's send..ack span meets the loss window, whose cause came after that send was invoked and no "
    "later than this send's ack", _between_the_earlier_send_and_this_ack)


def truncated_earlier_sends(model, sends_file, rows: pd.DataFrame, idempotent: np.ndarray):
    """(Claim|None, reason|None) per nonmonotonic_send row: whether the idempotent producer's earlier send it was
    acked below was truncated away first (truncated_earlier_claims), that send read from sends_file."""
    earlier = earlier_sends(sends_file, rows[idempotent]).reindex(rows.index)
    claims = truncated_earlier_claims(model, rows, earlier)
    reasons = np.array([None if c is None else earlier_send_reason(c, e) for c, e in
                        zip(claims, earlier.itertuples())], dtype=object)
    return claims, reasons


def truncated_earlier_claims(model, rows: pd.DataFrame, earlier: pd.DataFrame) -> np.ndarray:
    """Per nonmonotonic_send row, the claim (Claim|None) that the producer's earlier send to the partition, the
    one it was acked below (`earlier`: client.earlier_sends' columns aligned with rows), was removed by a loss
    event before this send was acked: LOSS_EVENT's window must hold the earlier send (excuses.loss_claim), then
    EARLIER_SEND_TRUNCATED's timing must hold for the pair. The later send's own span proves nothing: it was
    appended after the cut."""
    out = np.full(len(rows), None, dtype=object)
    has = (earlier["t_invoke_ns"].notna() & earlier["t_complete_ns"].notna() & rows["partition"].notna()
           & rows["t_complete_ns"].notna()).to_numpy(dtype=bool)
    for i in np.flatnonzero(has):                       # a run has a few such rows
        sent, acked = int(earlier["t_invoke_ns"].iloc[i]), int(earlier["t_complete_ns"].iloc[i])
        pair = Times(sent=sent, acked=int(rows["t_complete_ns"].iloc[i]))
        for timing in (model, *model.alternatives):     # either timing Kafka allows may have made the election
            lost = loss_claim(timing, int(rows["partition"].iloc[i]), sent, acked)
            out[i] = claim(EARLIER_SEND_TRUNCATED, lost.cause, pair) if lost is not None else None
            if out[i] is not None:
                break
    return out


def earlier_send_reason(c: Claim, earlier) -> str:
    """The claim's reason, naming the earlier send it rests on."""
    return f"its earlier send (op {earlier.op_id}, acked at offset {earlier.offset}) lay in the loss window; " \
           + c.reason()
