"""The nightly workflow: actionlint (pinned, installed through the Go proxy by scripts/actionlint.sh, with shellcheck
on every `run:` script) finds nothing, and the workflow has the shape the nightly needs on hosted runners: caches,
least privilege, inputs only through env, one job per shard with its artifact, and one job that judges them all.
Also the CI helper that merges JUnit files and writes the job summary."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github/workflows/nightly-chaos.yml"
sys.path.insert(0, str(ROOT / "scripts"))
import ci_suite  # noqa: E402


def actionlint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts/actionlint.sh"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def test_actionlint_finds_nothing_in_the_workflows():
    out = actionlint()
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr


def test_actionlint_really_lints_with_shellcheck(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.event.head_commit.message }}\n"
                   "      - run: cd $UNQUOTED_DIR\n")
    out = actionlint(str(bad))
    assert out.returncode == 1
    assert "potentially untrusted" in out.stdout                  # the expression spliced into a script
    assert "shellcheck reported issue" in out.stdout and "SC2086" in out.stdout


def _steps(job: dict) -> list[dict]:
    return job.get("steps") or []


def _uses(job: dict, action: str) -> list[dict]:
    return [s for s in _steps(job) if str(s.get("uses", "")).startswith(action)]


def test_least_privilege_and_inputs_only_through_env(workflow):
    assert workflow["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in workflow["jobs"].values())      # nothing widens it
    for job in workflow["jobs"].values():
        for step in _steps(job):
            assert "${{" not in step.get("run", ""), f"an expression spliced into a script: {step}"
    assert "inputs.duration" in workflow["env"]["CHAOS_DURATION"]


def test_caches_pip_maven_jars_and_images(workflow):
    images = workflow["jobs"]["images"]
    assert all(s["with"]["cache"] == "pip" for j in workflow["jobs"].values() for s in _uses(j, "actions/setup-python"))
    paths = " ".join(s["with"]["path"] for s in _uses(images, "actions/cache"))
    assert "~/.m2/repository" in paths and "~/.cache/kafka-chaos/kafka" in paths and "~/image-cache" in paths
    image_cache = next(s for s in _uses(images, "actions/cache") if s["with"]["path"] == "~/image-cache")
    assert "steps.plan.outputs.broker" in image_cache["with"]["key"]            # keyed by the image's input hash
    scripts = "\n".join(s.get("run", "") for j in workflow["jobs"].values() for s in _steps(j))
    assert "docker save" in scripts and "docker load" in scripts and "KAFKA_CHAOS_SETUP_IMAGE" in str(images)


def test_one_job_per_shard_each_uploading_its_results(workflow):
    chaos = workflow["jobs"]["chaos"]
    assert chaos["strategy"]["fail-fast"] is False
    assert chaos["strategy"]["matrix"]["shard"] == list(range(1, 15))
    script = next(s["run"] for s in _steps(chaos) if "pytest" in s.get("run", ""))
    assert '--chaos-shard "$SHARD/$SHARDS"' in script
    upload = _uses(chaos, "actions/upload-artifact")
    assert upload and upload[0]["if"] == "always()" and "matrix.shard" in upload[0]["with"]["name"]


def test_the_shard_jobs_pytest_options_exist():
    """The workflow's pytest options are the plugin's (a renamed option would break the nightly silently)."""
    script = WORKFLOW.read_text().split("Chaos tests, shard", 1)[1].split("- name:", 1)[0]
    options = set(re.findall(r"(--[a-z][a-z-]+)", script)) - {"--"}
    help_text = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"], cwd=ROOT,
                               capture_output=True, text=True, timeout=300).stdout
    missing = sorted(o for o in options if not re.search(rf"(^|[\s,]){re.escape(o)}[\s=,]", help_text, re.M))
    assert options and not missing, f"options the plugin does not have: {missing}"


def test_the_suite_job_rechecks_everything_and_publishes(workflow):
    suite = workflow["jobs"]["suite"]
    assert "chaos" in suite["needs"] and suite["if"] == "always()"
    download = _uses(suite, "actions/download-artifact")[0]["with"]
    assert download["pattern"] == "chaos-results-*" and download["merge-multiple"] is True
    scripts = "\n".join(s.get("run", "") for s in _steps(suite))
    assert "kafka-chaos check results" in scripts and "kafka-chaos report --suite results" in scripts
    assert "ci_suite.py junit" in scripts and "$GITHUB_STEP_SUMMARY" in scripts
    assert _uses(suite, "actions/upload-artifact")


def test_with_a_results_bucket_every_shard_uploads_into_one_night_and_the_suite_checks_it_there(workflow):
    """The bucket only when its secret is set (the artifacts stay either way); credentials only through env."""
    jobs = workflow["jobs"]
    assert "night" in jobs["images"]["outputs"]
    chaos, suite = jobs["chaos"], jobs["suite"]
    assert "images" in suite["needs"]
    for job in (chaos, suite):
        assert job["env"]["RESULTS_URL"] == "${{ secrets.KAFKA_CHAOS_RESULTS_URL }}"
        assert "needs.images.outputs.night" in job["env"]["NIGHT"]
    shard_upload = next(s for s in _steps(chaos) if "kafka-chaos upload" in s.get("run", ""))
    assert shard_upload["if"] == "always() && env.RESULTS_URL != ''"
    assert shard_upload["run"].strip().endswith('.venv/bin/kafka-chaos upload results "${RESULTS_URL%/}/$NIGHT"')
    assert shard_upload["env"]["AWS_SECRET_ACCESS_KEY"] == "${{ secrets.AWS_SECRET_ACCESS_KEY }}"
    assert _uses(chaos, "actions/upload-artifact")[0]["if"] == "always()"          # the artifact path stays
    check = next(s["run"] for s in _steps(suite) if s.get("id") == "check")
    assert 'if [ -n "$RESULTS_URL" ]; then' in check
    assert 'kafka-chaos check "${RESULTS_URL%/}/$NIGHT" --force --json' in check
    assert "kafka-chaos check results --force --json" in check.split("else", 1)[1]
    scripts = "\n".join(s.get("run", "") for s in _steps(suite))
    assert 'kafka-chaos report --suite "${RESULTS_URL%/}/$NIGHT"' in scripts
    assert suite["env"]["AWS_SECRET_ACCESS_KEY"] == "${{ secrets.AWS_SECRET_ACCESS_KEY }}"


def test_merge_junit_sums_the_shards_and_names_a_broken_file(tmp_path):
    for k, (tests, failures) in enumerate([(4, 0), (5, 1)], 1):
        (tmp_path / f"junit-{k}.xml").write_text(
            f'<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="{tests}" failures="{failures}" '
            f'errors="0" skipped="0" time="1.5"><testcase classname="c" name="t{k}"/></testsuite></testsuites>')
    (tmp_path / "junit-3.xml").write_text("<testsuites><testsuite")
    out = tmp_path / "junit.xml"
    totals = ci_suite.merge_junit(out, sorted(tmp_path.glob("junit-*.xml")))
    assert totals == {"tests": 10, "failures": 1, "errors": 1, "skipped": 0}
    text = out.read_text()
    assert text.count("<testsuite ") == 3 and 'name="t1"' in text and "unreadable JUnit file" in text


def test_summary_lists_violations_first(tmp_path):
    outcomes = [   # as `kafka-chaos check --json` prints them
        {"run_id": "b-valid", "status": "checked", "exit_code": 0, "error": None,
         "verdict": {"status": "valid", "anomalies": {"lost": 12}, "violations": [], "model_disagreements": []}},
        {"run_id": "c-broken", "status": "unusable", "exit_code": 2, "error": "no meta.json", "verdict": None},
        {"run_id": "a-invalid", "status": "checked", "exit_code": 1, "error": None,
         "verdict": {"status": "invalid", "anomalies": {"lost": 3, "lost_after_read": 2}, "violations": [{}, {}],
                     "model_disagreements": [{}]}},
    ]
    (tmp_path / "v.json").write_text(json.dumps(outcomes))
    out = subprocess.run([sys.executable, str(ROOT / "scripts/ci_suite.py"), "summary", str(tmp_path / "v.json")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    rows = [line for line in out.stdout.splitlines() if line.startswith("| `")]
    assert rows == ["| `a-invalid` | ❌ invalid | 2 | 3 / 2 | 1 |",
                    "| `c-broken` | ⚠️ unreadable (no meta.json) | 0 | 0 / 0 | 0 |",
                    "| `b-valid` | ✅ valid | 0 | 12 / 0 | 0 |"]
    assert "3 runs re-checked together on Spark: 1 ❌ invalid, 1 ⚠️ unreadable, 1 ✅ valid" in out.stdout
