"""The instance table's canonical row order: kind, partition, offset, value, consumer, nulls first, ties in place."""
import pandas as pd

from kafka_chaos.checkers import instances


def _rows():
    return pd.DataFrame({
        "kind": ["lost", "duplicate", "lost", "poll_skip", "lost", "lost", "duplicate", "poll_skip", "lost"],
        "partition": [2, 0, None, 1, 2, 2, 0, 1, 2],
        "offset": [10, 5, 3, None, 10, 9, 5, 7, 10],
        "value": ["v10", "v5", "v3", None, "v9", "v100", "v5", "é", "v10"],
        "consumer": [None, None, None, "c1", None, None, None, "c0", None],
        "op_id": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    })


def test_rows_come_in_pandas_stable_order_with_nulls_first():
    typed = instances.typed(_rows())
    expected = typed.sort_values(list(instances.ORDER), na_position="first", kind="stable").reset_index(drop=True)
    got = instances.normalise(_rows())
    pd.testing.assert_frame_equal(got, expected)


def test_null_partition_comes_before_every_partition_of_its_kind():
    got = instances.normalise(_rows())
    lost = got[got["kind"] == "lost"]
    assert lost["partition"].isna().tolist()[0] and not lost["partition"].isna().tolist()[1]


def test_equal_keys_keep_their_order():
    got = instances.normalise(_rows())
    ties = got[(got["kind"] == "lost") & (got["value"] == "v10")]
    assert ties["op_id"].tolist() == [1, 9]


def test_strings_sort_by_code_point_not_length():
    got = instances.normalise(_rows())
    lost_p2 = got[(got["kind"] == "lost") & (got["partition"] == 2)]
    assert lost_p2["value"].tolist() == ["v100", "v10", "v10", "v9"]
