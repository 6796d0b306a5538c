"""Reading a generated page back: its links and sources, its embedded figures, its visible text."""
from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import numpy as np


class PageParser(HTMLParser):
    """Collects every src/href attribute, the element ids, and the text of the page outside scripts."""

    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, str, str]] = []   # (tag, attribute, value)
        self.ids: set[str] = set()
        self.scripts: list[dict] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            if name in attrs:
                self.links.append((tag, name, attrs[name]))
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "script":
            self.scripts.append(attrs)
            self._in_script = True

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if not self._in_script:
            self.text.append(data)


def parse(html: str) -> PageParser:
    parser = PageParser()
    parser.feed(html)
    return parser


def visible_text(html: str) -> str:
    return re.sub(r"\s+", " ", " ".join(parse(html).text))


def figure(html: str, figure_id: str) -> dict:
    """The plotly figure embedded as JSON under <script id=figure_id>."""
    match = re.search(rf'<script type="application/json" id="{figure_id}">(.*?)</script>', html, re.S)
    assert match, f"no embedded figure {figure_id}"
    return json.loads(match.group(1))


def values(array) -> np.ndarray:
    """A trace's x or y: a plain list, or plotly's base64 typed array {"dtype", "bdata"}."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
    return np.asarray(array)
