"""Results roots on a real S3-compatible server (SeaweedFS, built by scripts/seaweedfs.sh, started on loopback by
the fixture and removed at the end): upload with the marker last, a kill -9 mid-upload leaving no complete run,
listings confined to the prefix, check/report/index over s3://, credentials only from the AWS chain and never in
what is written. No mock of S3 anywhere."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import pytest

from kafka_chaos.base.errors import EnvironmentProblem, HarnessError, UsageError
from kafka_chaos.harness.cli import main
from kafka_chaos.history import objstore
from kafka_chaos.history.objstore import S3Root
from kafka_chaos.history.synthetic import write_synthetic_run

pytestmark = pytest.mark.objstore
BUCKET = "kc-test"


@pytest.fixture(scope="module")
def server():
    from kafka_chaos.cluster import s3server

    try:
        s3server.binary()
    except EnvironmentProblem as e:
        pytest.skip(f"{e.cause}: {e.remedy}")
    srv = s3server.start(f"test{os.getpid()}", "kc" + secrets.token_hex(6), secrets.token_hex(16), (BUCKET,))
    try:
        yield srv
    finally:
        srv.stop()
        assert not srv.workdir.exists()                  # removed with the server


@pytest.fixture
def s3(server, monkeypatch):
    """The standard AWS variables pointing at the server; a fresh prefix per test."""
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(k, raising=False)
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    return S3Root(BUCKET, f"t{secrets.token_hex(4)}")


def every_object(root: S3Root) -> dict[str, bytes]:
    from pyarrow import fs as pafs

    fs = objstore.filesystem()
    infos = fs.get_file_info(pafs.FileSelector(root.key(), recursive=True))
    return {i.path: fs.open_input_stream(i.path).read() for i in infos if i.type == pafs.FileType.File}


def test_a_run_uploads_with_its_marker_and_downloads_the_same(s3, tmp_path):
    run = write_synthetic_run(tmp_path / "local" / "r1", sends=300, seed=1)
    done = objstore.upload_run(run, s3)
    assert done["run_id"] == "r1" and "history/sends.parquet" in done["files"]
    assert objstore.list_names(s3) == ["r1"]
    copy = objstore.download_run(s3, "r1", tmp_path / "copy")
    assert objstore.local_files(copy) == objstore.local_files(run)
    assert (copy / "meta.json").read_bytes() == (run / "meta.json").read_bytes()
    with pytest.raises(UsageError, match="already a complete run"):      # a shared bucket: no silent overwrite
        objstore.upload_run(run, s3)


def test_listing_stays_inside_the_prefix(s3, tmp_path):
    run = write_synthetic_run(tmp_path / "r", sends=100, seed=1)
    objstore.upload_run(run, s3.child("a"))
    objstore.upload_run(run, S3Root(BUCKET, s3.prefix + "-sibling"))
    assert objstore.list_names(s3) == ["a"]
    assert objstore.list_names(s3.child("a")) == ["r"]
    for bad in (f"s3://{BUCKET}/{s3.prefix}/../x", f"s3://{BUCKET}/a/./b", "s3://UPPER/x", "s3://b", "s3://ok-bucket/p?x=1"):
        with pytest.raises(UsageError):
            S3Root.parse(bad)
    with pytest.raises(UsageError):
        s3.key("..", "x")


def test_a_kill_9_during_the_upload_leaves_no_complete_run(s3, tmp_path, server):
    run = write_synthetic_run(tmp_path / "big", sends=300, seed=1)
    for i in range(150):                                    # enough objects that the kill lands mid-upload
        (run / "logs").mkdir(exist_ok=True)
        (run / "logs" / f"n{i:03d}.log").write_bytes(os.urandom(64 << 10))
    code = ("import sys; from pathlib import Path; from kafka_chaos.history import objstore; "
            f"objstore.upload_run(Path({str(run)!r}), objstore.S3Root({BUCKET!r}, {s3.prefix!r}))")
    proc = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not objstore.list_names(s3):
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    assert objstore.list_names(s3) == ["big"]               # partly there ...
    assert objstore.marker(s3, "big") is None               # ... and not complete
    with pytest.raises(UsageError, match="no complete run"):
        objstore.stage(s3.url, tmp_path / "stage")
    with pytest.raises(UsageError, match="not a complete run"):
        objstore.download_run(s3, "big", tmp_path / "d")


def test_check_report_and_index_over_s3_match_the_local_verdict_and_leak_no_credentials(s3, tmp_path, server,
                                                                                         capsys):
    local = write_synthetic_run(tmp_path / "local" / "bad", sends=1500, seed=2, inject={"lost": 2})
    for suffix in ("", "-2"):
        run = write_synthetic_run(tmp_path / "up" / f"bad{suffix}", sends=1500, seed=2, inject={"lost": 2})
        objstore.upload_run(run, s3)
    assert main(["check", str(local), "--engine", "pandas"]) == 1
    assert main(["check", s3.url, "--engine", "pandas"]) == 1
    assert objstore.read_bytes(s3, "verdicts.parquet") is not None     # the table of verdicts beside the runs
    ignore = ("timings", "checker", "run_id")
    want = {k: v for k, v in json.loads((local / "verdict.json").read_text()).items() if k not in ignore}
    for name in ("bad", "bad-2"):
        got = json.loads(objstore.read_bytes(s3, name, "verdict.json"))
        assert {k: v for k, v in got.items() if k not in ignore} == want
        assert "verdict.json" in objstore.marker(s3, name)["files"]
    assert main(["report", f"{s3.url}/bad"]) == 0
    assert objstore.read_bytes(s3, "bad", "report.html").startswith(b"<!DOCTYPE html>")
    assert main(["index", s3.url]) == 0
    index = objstore.read_bytes(s3, "index.html").decode()
    assert 'href="bad/report.html"' in index and "bad-2" in index and "violated: 2 lost" in index
    capsys.readouterr()
    secret, key = server.secret_key.encode(), server.access_key.encode()
    leaks = [k for k, data in every_object(s3).items() if secret in data or key in data]
    assert leaks == []


def test_a_run_into_a_bucket_uploads_every_staged_run_and_a_bad_bucket_costs_no_run(s3, tmp_path, monkeypatch):
    import argparse

    from kafka_chaos.harness.s3_results import run_into_bucket

    ran = []

    def fake_run(args):                  # what the runner leaves in its results root, here without a cluster
        ran.append(args.results)
        write_synthetic_run(args.results / "r-s1", sends=100, seed=1)
        return 0

    args = argparse.Namespace(results=__import__("pathlib").Path(s3.url))   # as argparse's Path type folds it
    assert run_into_bucket(args, fake_run) == 0
    assert objstore.marker(s3, "r-s1") is not None and not ran[0].exists()      # uploaded, staging removed
    bad = argparse.Namespace(results=f"s3://no-such-bucket-{secrets.token_hex(3)}/p")
    with pytest.raises(HarnessError):
        run_into_bucket(bad, fake_run)
    assert len(ran) == 1


@pytest.mark.spark
def test_many_runs_in_a_bucket_are_checked_in_one_spark_job_with_the_local_verdicts(s3, tmp_path):
    """Two runners' runs in one prefix, one `check s3://` on local Spark: each verdict equals the local one."""
    local = [write_synthetic_run(tmp_path / "local" / f"r{i}", sends=1500, seed=i, inject={"lost": i})
             for i in (1, 2)]
    for run in local:
        objstore.upload_run(run, s3)
    assert main(["check", *map(str, local)]) == 1
    assert main(["check", s3.url]) == 1
    ignore = ("timings", "checker", "run_id")
    for run in local:
        want = {k: v for k, v in json.loads((run / "verdict.json").read_text()).items() if k not in ignore}
        got = json.loads(objstore.read_bytes(s3, run.name, "verdict.json"))
        assert {k: v for k, v in got.items() if k not in ignore} == want


def labelled_processes(label: str) -> list[int]:
    """Processes whose environment carries the server's label (cluster/s3server.py LABEL_ENV)."""
    from kafka_chaos.cluster.s3server import LABEL_ENV

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"{LABEL_ENV}={label}".encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_the_server_goes_when_the_process_that_started_it_is_killed_9(server, tmp_path):
    label = f"kill9-{secrets.token_hex(3)}"
    code = ("import sys, time; from kafka_chaos.cluster import s3server; "
            f"s = s3server.start({label!r}, 'kckill', 'secretsecret'); print(s.workdir, flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    workdir = proc.stdout.readline().strip()
    assert workdir and labelled_processes(label)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while (labelled_processes(label) or os.path.exists(workdir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert labelled_processes(label) == [] and not os.path.exists(workdir)


def test_upload_sends_a_root_of_runs_once_and_skips_what_is_complete(s3, tmp_path, capsys):
    for name in ("u1", "u2"):
        write_synthetic_run(tmp_path / "root" / name, sends=100, seed=1)
    assert main(["upload", str(tmp_path / "root"), s3.url]) == 0
    assert [n for n in objstore.list_names(s3) if objstore.marker(s3, n)] == ["u1", "u2"]
    capsys.readouterr()
    assert main(["upload", str(tmp_path / "root"), s3.url]) == 0
    out = capsys.readouterr().out
    assert "0 run(s) uploaded" in out and "2 already complete" in out
    assert main(["upload", str(tmp_path / "root"), str(tmp_path / "not-s3")]) == 2


def test_a_check_leaves_the_journal_in_the_bucket_and_in_the_marker(s3, tmp_path):
    """check reads the Parquet files built from the journal, never the journal (three quarters of a real run's
    bytes): it is not staged, and the marker rewritten after the check still names it."""
    run = write_synthetic_run(tmp_path / "up" / "j1", sends=300, seed=1)
    (run / "history" / "journal").mkdir(exist_ok=True)
    (run / "history" / "journal" / "p0.tsv").write_bytes(b"x" * 1000)
    objstore.upload_run(run, s3)
    staged = objstore.download_run(s3, "j1", tmp_path / "st", skip=("history/journal",))
    assert not (staged / "history" / "journal").exists() and (staged / "history" / "sends.parquet").is_file()
    assert main(["check", s3.url, "--engine", "pandas"]) == 0
    files = objstore.marker(s3, "j1")["files"]
    assert files["history/journal/p0.tsv"] == 1000 and "verdict.json" in files
    assert objstore.read_bytes(s3, "j1", "history", "journal", "p0.tsv") == b"x" * 1000
