"""`pytest --chaos-shard K/N`: deterministic, balanced shards of the chaos tests whose union is the whole set."""
import argparse
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_chaos.harness.shards import parse_shard, shard_ids

ROOT = Path(__file__).resolve().parents[2]


def collect(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def full_suite() -> list[str]:
    """The chaos-marked tests of the full suite: the set the shards partition."""
    ids = collect("tests/chaos", "--chaos-suite", "full", "-m", "chaos")
    assert len(ids) >= 56                        # 14 scenarios x 4 profiles, and the interrupted-run tests
    return ids


@pytest.fixture(scope="module")
def left_alone(full_suite) -> set[str]:
    """Tests in tests/chaos without the chaos mark (the oracle table, the shipped run): every shard keeps them."""
    unmarked = set(collect("tests/chaos", "--chaos-suite", "full")) - set(full_suite)
    assert unmarked                              # the case this pins down exists
    return unmarked


@pytest.mark.parametrize("text,want", [("3/14", (3, 14)), ("1/1", (1, 1)), (" 14 / 14 ", (14, 14))])
def test_parse(text, want):
    assert parse_shard(text) == want


@pytest.mark.parametrize("bad", ["0/14", "15/14", "3", "3/0", "a/b", "-1/3", "3/14/2", ""])
def test_parse_refuses(bad):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_shard(bad)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 14, 20, 60])
def test_shards_partition_the_real_suite_and_are_balanced(full_suite, n):
    shards = [shard_ids(full_suite, k, n) for k in range(1, n + 1)]
    assert set().union(*shards) == set(full_suite)
    assert sum(len(s) for s in shards) == len(full_suite)              # no overlap
    assert max(map(len, shards)) - min(map(len, shards)) <= 1          # balanced


def test_assignment_depends_on_the_ids_not_their_order(full_suite):
    shuffled = full_suite[:]
    random.Random(1).shuffle(shuffled)
    assert [shard_ids(full_suite, k, 14) for k in range(1, 15)] == [shard_ids(shuffled, k, 14) for k in range(1, 15)]


@pytest.mark.parametrize("k", [1, 3, 14])
def test_the_plugin_collects_exactly_the_shard(full_suite, left_alone, k):
    got = set(collect("tests/chaos", "--chaos-suite", "full", "--chaos-shard", f"{k}/14"))
    assert left_alone <= got
    chaos = got - left_alone
    assert chaos == shard_ids(full_suite, k, 14) and len(chaos) in (len(full_suite) // 14, -(-len(full_suite) // 14))


def test_a_bad_shard_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                          "tests/chaos", "--chaos-shard", "15/14"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--chaos-shard: '15/14' is not K/N with 1 <= K <= N" in out.stderr


def test_tests_not_marked_chaos_are_left_alone():
    everything = collect("tests/harness/test_shards.py")
    assert collect("tests/harness/test_shards.py", "--chaos-shard", "2/3") == everything
