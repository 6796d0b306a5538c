"""The plotly.js a report inlines: plotly's "basic" bundle, vendored in report/vendor/ by scripts/vendor-plotly.sh.

The full bundle plotly.py ships is 4.8 MB and every report carried a copy; the basic one (scatter, bar and pie
traces, the whole layout engine) is a quarter of that and draws every figure the report makes. It is inlined, so
a report opened alone still needs no network.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

VENDOR = Path(__file__).parent / "vendor"
BUNDLE = VENDOR / "plotly-basic.min.js"
TRACE_TYPES = frozenset({"scatter", "bar", "pie"})   # what the basic bundle can draw


@functools.cache
def plotly_js() -> str:
    return BUNDLE.read_text(encoding="utf-8")


def bundle_version() -> str:
    """The vendored bundle's plotly.js version, from its header comment."""
    match = re.search(r"plotly\.js \(basic - minified\) v(\S+)", plotly_js()[:300])
    if match is None:
        raise ValueError(f"{BUNDLE} has no plotly.js version header: regenerate it with scripts/vendor-plotly.sh")
    return match.group(1)


def check_drawable(fig) -> None:
    """A figure whose trace the bundle lacks would render as an empty box: fail while making the report instead."""
    missing = {trace.type for trace in fig.data} - TRACE_TYPES
    if missing:
        raise ValueError(f"the report's plotly.js bundle cannot draw {sorted(missing)}: use {sorted(TRACE_TYPES)} "
                         "or vendor a bundle with those traces (scripts/vendor-plotly.sh)")
