"""The divergent positions a local check finds in the reads its driver picked (checkers.divergent_files) are those
divergent.several_values finds in the same reads: the same positions, least value, count and first read."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from kafka_chaos.checkers.divergent_files import COLUMNS, several_values
from kafka_chaos.checkers.spark.divergent import several_values as by_pandas


def table(reads: pd.DataFrame) -> pa.Table:
    return pa.table({"partition": pa.array(reads["partition"], pa.int32()),
                     "offset": pa.array(reads["offset"], pa.int64()),
                     "value": pa.array(reads["value"], pa.string()), "t_ns": pa.array(reads["t_ns"], pa.int64())})


def both(reads: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    mine = several_values(table(reads)).sort_values(["partition", "offset"]).reset_index(drop=True)
    theirs = by_pandas(reads.assign(run=0))
    theirs = theirs[COLUMNS].sort_values(["partition", "offset"]).reset_index(drop=True) if len(theirs) else \
        pd.DataFrame(columns=COLUMNS)
    return mine, theirs


def test_random_reads_give_the_same_divergent_positions_as_pandas():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(0, 80))
        reads = pd.DataFrame({"partition": rng.integers(0, 3, n), "offset": rng.integers(0, 8, n),
                              "value": [f"v{x}" for x in rng.integers(0, 9, n)], "t_ns": rng.integers(0, 10**12, n)})
        mine, theirs = both(reads)
        assert len(mine) == len(theirs)
        if len(mine):
            assert mine.astype(str).equals(theirs.astype(str))


def test_a_position_read_twice_with_one_value_is_not_divergent_and_the_least_value_is_by_bytes():
    reads = pd.DataFrame({"partition": [0, 0, 1, 1, 1, 2], "offset": [5, 5, 7, 7, 7, 1 << 39],
                          "value": ["a", "a", "é", "z", "Z", "x"], "t_ns": [3, 1, 9, 4, 8, 2]})
    mine, theirs = both(reads)
    assert mine.to_dict("records") == [{"partition": 1, "offset": 7, "value": "Z", "multiplicity": 3,
                                        "t_read_ns": 4}]
    assert mine.astype(str).equals(theirs.astype(str))


def test_no_reads_give_no_rows_with_the_columns():
    found = several_values(table(pd.DataFrame({"partition": [], "offset": [], "value": [], "t_ns": []})))
    assert list(found.columns) == COLUMNS and not len(found)
