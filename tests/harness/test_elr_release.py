"""`--elr` on a release without eligible leader replicas (3.x: ReplicationControlManager.isElrEnabled needs metadata
version IBP_4_0_IV0, MetadataVersion.isElrSupported) is refused before anything touches Docker, and a 3.x meta.json
that says ELR was on is judged without ELR's rules: the model uses what the cluster had."""
import json
import os
import subprocess
import sys

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.checkers.model.config import ModelConfig
from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.history.meta import load_meta

NO_DOCKER = "unix:///nonexistent/kafka-chaos-test/docker.sock"     # any Docker call fails loudly instead


def cli(*argv, tmp_path):
    env = os.environ | {"DOCKER_HOST": NO_DOCKER}
    return subprocess.run([sys.executable, "-m", "kafka_chaos.harness.cli", *argv], capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)


@pytest.mark.parametrize("command", [
    ["run", "leader-kill", "--duration", "5", "--results", "results"],
    ["cluster", "up", "--name", "elrrefused"],
])
def test_the_cli_refuses_elr_on_a_3x_release_with_cause_and_remedy_before_docker(tmp_path, command):
    out = cli(*command, "--kafka-version", "3.9.2", "--elr", tmp_path=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == ["kafka-chaos: error: --elr on Kafka 3.9.2: eligible leader replicas need metadata version 4.0 "
                     "(MetadataVersion.isElrSupported), which this release does not run",
                     "kafka-chaos: remedy: leave it out, or use a 4.x release"], out.stderr
    assert "Docker" not in out.stdout + out.stderr and "phase:" not in out.stdout + out.stderr
    assert not (tmp_path / "results").exists()                    # no run directory, no container


def test_elr_is_refused_below_4_0_and_accepted_from_it():
    with pytest.raises(UsageError, match="--elr on Kafka 3.9.2"):
        ClusterConfig(elr=True, kafka_version="3.9.2").validate()
    with pytest.raises(UsageError, match="--elr on Kafka 3.7.0"):
        ClusterConfig(elr=True, kafka_version="3.7.0", metadata="kraft").validate()
    ClusterConfig(elr=True, kafka_version="4.0.0").validate()        # the boundary: a feature from 4.0
    ClusterConfig(elr=False, kafka_version="3.9.2").validate()       # --no-elr says what a 3.x cluster has anyway
    ClusterConfig(kafka_version="3.9.2").validate()


def meta_of(tmp_path, version: str, elr: bool | None, mode="kraft"):
    raw = {"run_id": f"r{version}", "partitions": 1, "replication_factor": 3, "min_insync_replicas": 2,
           "kafka_version": version, "metadata_mode": mode}
    if elr is not None:
        raw["elr_enabled"] = elr
    run = tmp_path / f"{version}-{elr}-{mode}"
    run.mkdir()
    (run / "meta.json").write_text(json.dumps(raw))
    return load_meta(run)


def test_a_3x_meta_that_says_elr_enabled_is_judged_without_elr(tmp_path):
    assert not ModelConfig.from_meta(meta_of(tmp_path, "3.9.2", True)).elr_enabled
    assert not ModelConfig.from_meta(meta_of(tmp_path, "3.9.2", True, "zookeeper")).elr_enabled


def test_a_4x_meta_keeps_the_elr_the_cluster_had(tmp_path):
    assert ModelConfig.from_meta(meta_of(tmp_path, "4.0.0", True)).elr_enabled          # the boundary
    assert not ModelConfig.from_meta(meta_of(tmp_path, "4.0.0", False)).elr_enabled
    assert ModelConfig.from_meta(meta_of(tmp_path, "4.4.0", None)).elr_enabled          # 4.1+'s default
    assert not ModelConfig.from_meta(meta_of(tmp_path, "4.4.0", False)).elr_enabled


def test_check_of_a_3x_run_whose_meta_says_elr_reports_the_model_without_it(tmp_path):
    from kafka_chaos.harness.cli import main
    from tests.checkers.conftest import read, send, write_run
    run = write_run(tmp_path / "r39", [send("a", offset=0)], [read("a", offset=0)], [], kafka_version="3.9.2",
                    elr_enabled=True, brokers=[1, 2, 3], partitions=1)
    main(["check", str(run), "--engine", "pandas", "--force"])
    assert json.loads((run / "verdict.json").read_text())["model"]["elr_enabled"] is False
