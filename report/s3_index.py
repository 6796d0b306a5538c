"""The results index and reports of a results root in a bucket (s3://bucket/prefix).

`write_s3_index` reads each complete run's meta.json and verdict.json (and its marker's file list, for whether it has
a report) straight from the bucket, one level of suites deep, never listing above or beyond the prefix, and writes
prefix/index.html; runs whose upload is not complete are left out. `report_in_bucket` stages runs locally, writes
their report.html (or the suite's reports and index) and uploads what it wrote.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from kafka_chaos.history import objstore
from kafka_chaos.history.layout import REPORT_FILE, SENDS_FILE
from kafka_chaos.report.index import INDEX_NAME, render_index
from kafka_chaos.report.index_rows import IndexRow, json_object, row_from


def _row(root: objstore.S3Root, run_id: str, done: dict, suite: str, fs) -> IndexRow:
    files = done.get("files") or {}
    meta = json_object(objstore.read_bytes(root, run_id, "meta.json", fs=fs)) if "meta.json" in files else None
    verdict = json_object(objstore.read_bytes(root, run_id, "verdict.json", fs=fs)) if "verdict.json" in files \
        else None
    href = "/".join(quote(p) for p in (suite, run_id, REPORT_FILE) if p) if REPORT_FILE in files else None
    return row_from(run_id, suite, meta or {}, verdict, has_history=SENDS_FILE in files, report_href=href,
                    verdict_unreadable=verdict is None and "verdict.json" in files)


def s3_rows(root: objstore.S3Root, fs=None) -> tuple[list[IndexRow], list[tuple[str, str | None]]]:
    fs = fs or objstore.filesystem()
    rows, suites = [], []
    for name in objstore.list_names(root, fs=fs):
        done = objstore.marker(root, name, fs=fs)
        if done is not None:
            rows.append(_row(root, name, done, "", fs))
            continue
        suite = root.child(name)
        inner = [(n, d) for n in objstore.list_names(suite, fs=fs) if (d := objstore.marker(suite, n, fs=fs))]
        if inner:
            rows += [_row(suite, n, d, name, fs) for n, d in inner]
            page = objstore.read_bytes(suite, INDEX_NAME, fs=fs) is not None
            suites.append((name, f"{quote(name)}/{INDEX_NAME}" if page else None))
    return rows, suites


def write_s3_index(url: str) -> str:
    """Writes prefix/index.html in the bucket; returns its s3:// URL."""
    fs = objstore.filesystem()
    root = objstore.S3Root.parse(url)
    rows, suites = s3_rows(root, fs)
    html = render_index(root.url, rows, suites, generator="kafka-chaos index")
    objstore.write_bytes(root, html.encode(), INDEX_NAME, fs=fs)
    return f"{root.url}/{INDEX_NAME}"


def report_in_bucket(url: str, suite: bool, build: bool = True) -> str:
    """report s3://.../run_id (its report.html) or report --suite s3://root (every report, then the index)."""
    from kafka_chaos.report.page import write_report
    from kafka_chaos.report.suite import report_is_stale

    with objstore.Staged([url]) as local:
        if suite and build:
            for run_dir in map(Path, local):
                if report_is_stale(run_dir) and (run_dir / SENDS_FILE).is_file():
                    write_report(run_dir)
        elif not suite:
            for run_dir in map(Path, local):
                write_report(run_dir)
    if suite:
        return write_s3_index(url)
    return f"{url.rstrip('/')}/{REPORT_FILE}"
