"""The package as a user installs it: a wheel built from the checkout, in a fresh virtualenv outside it, sets itself
up and runs a short chaos scenario with the build context it ships (kafka_chaos/docker), not the checkout's."""
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin dir, a working directory outside the checkout) with the wheel and its declared dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(ROOT)],
                   check=True, capture_output=True, text=True)
    wheel = next((work / "dist").glob("kafka_chaos-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {"kafka_chaos/docker/Dockerfile", "kafka_chaos/docker/pom.xml", "kafka_chaos/docker/launch",
            "kafka_chaos/report/vendor/plotly-basic.min.js"} <= set(names)
    assert not [n for n in names if n.split("/")[0] in ("harness", "checkers", "nemesis", "docker")], \
        "everything installs under kafka_chaos"
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # only what pyproject declares: a missing dependency fails the imports below
    subprocess.run([str(venv / "bin/pip"), "install", "-q", str(wheel)], check=True, capture_output=True, text=True)
    return venv / "bin", work


def test_the_installed_package_is_the_wheel_with_its_own_build_context(installed):
    bin_dir, work = installed
    probe = ("import json, kafka_chaos, kafka_chaos.base.paths as p, kafka_chaos.checkers.spark.anomalies, "
             "kafka_chaos.report.page, kafka_chaos.harness.cli; "
             "print(json.dumps([kafka_chaos.__file__, str(p.DOCKER_CONTEXT), kafka_chaos.__version__]))")
    out = subprocess.run([str(bin_dir / "python"), "-c", probe], cwd=work, check=True, capture_output=True, text=True)
    package, context, version = json.loads(out.stdout)
    site = str(bin_dir.parent / "lib")
    assert package.startswith(site) and context.startswith(site) and context.endswith("kafka_chaos/docker")
    assert version != "0+unknown"


def test_the_wheel_sets_itself_up_and_runs_a_scenario_from_outside_the_checkout(installed):
    bin_dir, work = installed
    setup = subprocess.run([str(bin_dir / "kafka-chaos"), "setup"], cwd=work, capture_output=True, text=True,
                           timeout=1800)
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-2000:]
    run = subprocess.run([str(bin_dir / "kafka-chaos"), "run", "leader-kill", "--duration", "15", "--seed", "1",
                          "--results", str(work / "results")], cwd=work, capture_output=True, text=True, timeout=900)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    (result,) = [p for p in (work / "results").iterdir() if (p / "meta.json").exists()]
    verdict = json.loads((result / "verdict.json").read_text())
    assert verdict["status"] in ("valid", "invalid") and verdict["counts"]["sends"] > 0
    assert (result / "report.html").stat().st_size > 100_000
