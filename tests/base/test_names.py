"""Run ids and paths safe for a shared results root (base/names.py)."""
from __future__ import annotations

import os

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.names import check_run_id, child, is_run_id, key_prefix, within


@pytest.mark.parametrize("name", ["20261127T180034-leader-kill-acks1-isr2-s101", "a", "run_1.2", "A-b_c.d"])
def test_run_ids_of_plain_segments_are_valid(name):
    assert is_run_id(name) and check_run_id(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x/..", ".hidden", "-flag", "a b", "a\nb", "a\0b",
                                  "é", "a..b", "x" * 129, "a\\b", "s3://b/k"])
def test_anything_that_a_path_or_key_would_read_differently_is_refused(name):
    assert not is_run_id(name)
    with pytest.raises(UsageError) as e:
        check_run_id(name)
    assert e.value.exit_code == 2 and "letters, digits" in e.value.cause


def test_child_joins_only_valid_names_inside_the_root(tmp_path):
    assert child(tmp_path, "a", "b") == tmp_path / "a" / "b"
    with pytest.raises(UsageError):
        child(tmp_path, "..")
    os.symlink(tmp_path.parent, tmp_path / "up")
    with pytest.raises(UsageError, match="leads out of"):
        child(tmp_path, "up")


def test_within_follows_symlinks(tmp_path):
    (tmp_path / "in").mkdir()
    os.symlink(tmp_path.parent, tmp_path / "out")
    assert within(tmp_path, tmp_path / "in") == (tmp_path / "in").resolve()
    assert within(tmp_path, tmp_path / "out") is None
    assert within(tmp_path, tmp_path / "in" / ".." / "..") is None


def test_key_prefixes_are_plain_segments():
    assert key_prefix("/nightly/2026-11-27/") == "nightly/2026-11-27"
    assert key_prefix("") == ""
    for bad in ("a/../b", "a//b/../..", "a/./b", "a b"):
        with pytest.raises(UsageError):
            key_prefix(bad)


def test_a_run_is_never_written_outside_its_results_root(tmp_path):
    from kafka_chaos.history.writer import HistoryWriter

    meta = {"partitions": 1, "replication_factor": 1, "min_insync_replicas": 1}
    for bad in ("../escape", "a/b", "..", "/tmp/x"):
        with pytest.raises(UsageError):
            HistoryWriter.create(tmp_path / "results", bad, meta)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "results").exists()
    assert HistoryWriter.create(tmp_path / "results", "ok-1", meta).dir == tmp_path / "results" / "ok-1"
