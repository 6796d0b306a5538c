"""The documentation: the site builds strictly, every generated reference page matches the code it is generated
from, every --help ends with the page that covers it, and the README stays a short entry point."""
from __future__ import annotations

import argparse
import re
import urllib.request
from pathlib import Path

import pytest

from kafka_chaos.harness import doc_pages, docs_gen
from kafka_chaos.harness.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DATED_PAGES = {"findings.md", "measurements.md"}     # the only pages that may carry dates


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_every_generated_page_matches_the_code():
    stale = docs_gen.stale(ROOT)
    assert not stale, f"stale generated docs: {stale}; regenerate: .venv/bin/python -m kafka_chaos.harness.docs_gen"


def test_a_stale_page_is_found(tmp_path):
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    for path, text in docs_gen.generate().items():
        (tmp_path / "docs" / path).write_text(text)
    (tmp_path / "README.md").write_text(docs_gen.readme_with_catalog((ROOT / "README.md").read_text()))
    assert docs_gen.stale(tmp_path) == []
    page = tmp_path / "docs" / "reference" / "exit-codes.md"
    page.write_text(page.read_text().replace("never a verdict", "a verdict"))
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text().replace("`leader-kill`", "`leader-kill-renamed`", 1))
    assert docs_gen.stale(tmp_path) == ["docs/reference/exit-codes.md", "README.md"]


def test_the_anomaly_declarations_cover_exactly_the_kinds_the_code_finds_and_judges():
    from kafka_chaos.checkers.groups import GROUP_KINDS
    from kafka_chaos.checkers.judge.rules import RULE_OF_KIND
    from kafka_chaos.history.kinds import GROUPS, KINDS, TXNS, VERDICT
    from kafka_chaos.history.schema import ANOMALY_KINDS

    assert list(KINDS) == list(ANOMALY_KINDS)
    by = {k: v.judged_by for k, v in KINDS.items()}
    assert {k for k, v in by.items() if v == VERDICT} == set(RULE_OF_KIND) | {"recovered"}
    assert {k for k, v in by.items() if v == GROUPS} == set(GROUP_KINDS)
    assert {k for k, v in by.items() if v == TXNS} == {"txn_incomplete", "txn_out_of_order"}
    from kafka_chaos.checkers.eos import EOS_KINDS
    from kafka_chaos.history.kinds import EOS, LSO
    assert {k for k, v in by.items() if v == EOS} == set(EOS_KINDS)
    assert {k for k, v in by.items() if v == LSO} == {"lso_stuck"}


def test_the_site_builds_strictly(tmp_path):
    from kafka_chaos.harness.docs_cli import build

    done = build(tmp_path / "site", ROOT)
    assert done.returncode == 0, done.stderr or done.stdout
    for page in ("index.html", "findings/index.html", "reference/cli/index.html", "faults/storage/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_command_has_a_docs_page_and_its_help_ends_with_it(capsys):
    def walk(parser, path=()):
        yield path
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from walk(sub, (*path, name))

    for path in walk(build_parser()):
        page = doc_pages.page_of(path)
        assert (DOCS / page).is_file(), (path, page)
        with pytest.raises(SystemExit):
            main([*path, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert text.endswith(f"docs/{page}"), (path, text[-200:])
    assert {p[0] for p in walk(build_parser()) if p} <= {c[0] for c in doc_pages.PAGES if c}


def test_the_readme_is_short_and_links_only_to_what_exists():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    # the two set-up commands, exactly
    assert "bash scripts/run.sh " in readme and "bash scripts/test.sh " in readme


def test_no_page_names_a_work_item_and_only_findings_and_measurements_carry_dates():
    for page in [ROOT / "README.md", *_pages()]:
        text = page.read_text()
        rel = page.relative_to(ROOT)
        for line in text.splitlines():
            if line.startswith("#"):
                assert not re.search(r"\b(issue|item|work item)s? \d+|#\d+\b", line, re.I), (rel, line)
        assert not re.search(r"\b(issue|work item)s? \d+\b", text, re.I), rel
        if page.parent == DOCS and page.name in DATED_PAGES:
            continue
        dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
        assert not dates, (rel, dates[:3])


def test_the_report_pictures_are_real_and_small():
    for name in ("report-valid.png", "report-violation.png"):
        png = DOCS / "images" / name
        assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), name
        assert 10_000 < png.stat().st_size < 300_000, (name, png.stat().st_size)


def test_docs_serves_the_site_on_loopback(tmp_path, monkeypatch):
    """`kafka-chaos docs` builds, binds 127.0.0.1 and answers; here its serve loop is stopped after one request."""
    import http.server

    served = {}

    def one_request(self):
        served["address"] = self.server_address
        import threading
        t = threading.Thread(target=self.handle_request)
        t.start()
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server_port}/", timeout=10) as r:
            served["page"] = r.read().decode()
        t.join()
        raise KeyboardInterrupt

    monkeypatch.setattr(http.server.ThreadingHTTPServer, "serve_forever", one_request)
    assert main(["docs", "--port", "0"]) == 0
    assert served["address"][0] == "127.0.0.1" and "kafka-chaos" in served["page"]
