"""Every scenario x producer profile as a test. A test fails only on a violation: an anomaly the ISR model says
the configuration cannot produce. Predicted losses (acks=1, min ISR 1, unclean election) pass, with their counts
and report attached. `--chaos-suite full` runs the whole matrix (the nightly suite); CI runs the quick subset."""
import pytest

from kafka_chaos.harness.scenarios import CATALOG
from tests.schemas import validate_run

PROFILES = [  # (acks, min.insync.replicas, unclean)
    ("all", 2, False),
    ("1", 2, False),
    ("all", 1, False),
    ("1", 1, True),
]
QUICK = {("leader-kill", "all", 2, False), ("leader-isolate", "1", 2, False)}
QUICK_DURATION_S = 25


def _params():
    for name in CATALOG:
        for acks, min_isr, unclean in PROFILES:
            marks = [pytest.mark.chaos]
            if (name, acks, min_isr, unclean) in QUICK:
                marks.append(pytest.mark.chaos_quick)
            test_id = f"{name}-acks={acks}-min_isr={min_isr}" + ("-unclean" if unclean else "")
            yield pytest.param(name, acks, min_isr, unclean, id=test_id, marks=marks)


@pytest.mark.parametrize("scenario,acks,min_isr,unclean", list(_params()))
def test_scenario(request, chaos_run, scenario, acks, min_isr, unclean):
    quick = request.config.getoption("--chaos-suite") == "quick"
    kwargs = {"duration_s": QUICK_DURATION_S} if quick and request.config.getoption("--chaos-duration") is None else {}
    if CATALOG[scenario].consumer_group:             # its faults kill a member of the run's consumer group
        kwargs |= {"consumer_mode": "subscribe", "consumers": 3}
    result = chaos_run(scenario, acks=acks, min_isr=min_isr, unclean=unclean, seed=7, **kwargs)
    verdict = result.verdict
    assert verdict is not None, f"no verdict in {result.run_dir}"
    validate_run(result.run_dir)                      # real verdicts follow the published schemas
    assert verdict["counts"]["ok"] > 0, f"no write succeeded in {result.run_dir}"
    assert verdict["counts"]["final_reads"] > 0, f"the final drain read nothing in {result.run_dir}"
    assert result.exit_code == 0, (f"violations {verdict['violations']} in {result.run_dir}; "
                                   f"report: {result.report}")
