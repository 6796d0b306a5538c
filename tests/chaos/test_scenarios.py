"""Every scenario x producer profile as a test, judged against Kafka's rules (tests/chaos/expected_cells.py), not
against the model under test alone: the run's faults started and healed, the model agreed with the cluster, every
allowed loss names its cause, and the cell's outcome holds (acks=all, min ISR 2, no unclean election: no
acknowledged write lost, valid, exit 0; acks=1 under a leader fault: losses possible, each allowed). Their counts
and report are attached. `--chaos-suite full` runs the whole matrix (the nightly suite); CI runs the quick subset."""
import json

import pytest

from kafka_chaos.harness.scenarios import CATALOG
from tests.chaos.expected_cells import Profile, expected_cell, runs_in
from tests.chaos.oracle import assert_cell
from tests.schemas import validate_run

PROFILES = [Profile("all", 2, False), Profile("1", 2, False), Profile("all", 1, False), Profile("1", 1, True)]
QUICK = {("leader-kill", Profile("all", 2, False)), ("leader-isolate", Profile("1", 2, False))}
QUICK_DURATION_S = 25


def _params():
    for name in CATALOG:
        for p in PROFILES:
            marks = [pytest.mark.chaos]
            if (name, p) in QUICK:
                marks.append(pytest.mark.chaos_quick)
            test_id = f"{name}-acks={p.acks}-min_isr={p.min_isr}" + ("-unclean" if p.unclean else "")
            yield pytest.param(name, p, id=test_id, marks=marks)


@pytest.mark.parametrize("scenario,profile", list(_params()))
def test_scenario(request, chaos_cluster, chaos_run, scenario, profile):
    if not runs_in(scenario, chaos_cluster.metadata_mode):
        pytest.skip(f"{scenario}'s faults have no target in a {chaos_cluster.metadata_mode} cluster")
    quick = request.config.getoption("--chaos-suite") == "quick"
    kwargs = {"duration_s": QUICK_DURATION_S} if quick and request.config.getoption("--chaos-duration") is None else {}
    if CATALOG[scenario].consumer_group:             # its faults kill a member of the run's consumer group
        kwargs |= {"consumer_mode": "subscribe", "consumers": 3}
    result = chaos_run(scenario, acks=profile.acks, min_isr=profile.min_isr, unclean=profile.unclean, seed=7,
                       **kwargs)
    verdict = result.verdict
    assert verdict is not None, f"no verdict in {result.run_dir}"
    validate_run(result.run_dir)                      # real verdicts follow the published schemas
    assert verdict["counts"]["ok"] > 0, f"no write succeeded in {result.run_dir}"
    assert verdict["counts"]["final_reads"] > 0, f"the final drain read nothing in {result.run_dir}"
    version = json.loads((result.run_dir / "meta.json").read_text()).get("kafka_version")
    assert_cell(result, scenario, expected_cell(scenario, profile, version, chaos_cluster.metadata_mode))
