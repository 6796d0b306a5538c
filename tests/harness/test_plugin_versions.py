"""`--chaos-kafka-version` taking a list (issue 15): every test that uses the chaos cluster is parametrized over
the releases, the release in its id, and the list is checked before anything starts. Collection only: no
cluster is started (the session fixture runs only when a test does)."""
import re

pytest_plugins = ["pytester"]

TESTS = '''
def test_with_cluster(chaos_cluster):
    pass


def test_with_run(chaos_run):
    pass


def test_without_cluster():
    pass
'''


def _ids(result) -> list[str]:
    return re.findall(r"^\S+::(\S+)$", result.stdout.str(), re.M)


def test_a_list_of_releases_parametrizes_every_chaos_test_by_release(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q",
                                "--chaos-kafka-version", "2.8.2, 3.9.2:zookeeper,4.4.0")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    # grouped by release (one session cluster per release, in turn); a test without the cluster runs once
    assert _ids(result) == ["test_with_cluster[2.8.2]", "test_with_run[2.8.2]",
                            "test_with_cluster[3.9.2-zookeeper]", "test_with_run[3.9.2-zookeeper]",
                            "test_with_cluster[4.4.0]", "test_with_run[4.4.0]", "test_without_cluster"]


def test_the_run_wide_metadata_mode_applies_where_a_release_has_it(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", "--chaos-metadata", "zookeeper",
                                "--chaos-kafka-version", "3.9.2,4.4.0")
    ids = _ids(result)
    assert "test_with_cluster[3.9.2-zookeeper]" in ids and "test_with_cluster[4.4.0]" in ids, ids


def test_one_release_keeps_the_test_ids_unparametrized(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", "--chaos-kafka-version", "4.4.0")
    assert _ids(result) == ["test_with_cluster", "test_with_run", "test_without_cluster"]


def test_a_bad_list_is_a_usage_error_before_anything_starts(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q",
                                "--chaos-kafka-version", "3.9.2,4.4.0:zookeeper")
    assert result.ret == 4 and "4.4.0 has no zookeeper mode" in result.stderr.str(), result.stderr.str()
