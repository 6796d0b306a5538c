"""The documentation's report pictures, taken by the real browser from a real results directory.

    .venv/bin/python scripts/screenshot_report.py RESULTS_DIR OUT.png [--height 1000] [--scale 0.75]

Opens RESULTS_DIR/report.html in Debian's headless chromium (report/browser.py, the driver the report's browser test
uses), waits until the report says it has drawn every plot, and writes the top of the page (the verdict banner and
what follows it, `--height` CSS pixels of a 1366-pixel-wide window, scaled by `--scale`) as a PNG. It prints the
run's verdict beside the file, so a caption can say what the picture shows. Nothing is drawn by hand: the pictures
in docs/images/ are this script's output over the results directories their captions name.
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

from kafka_chaos.report.browser import BrowserOptions, HeadlessChromium

RENDERED = "document.body.dataset.renderedMs"     # set by the report once every plot is drawn
WIDTH = 1366


def screenshot(results: Path, out: Path, height: int, scale: float) -> dict:
    report = results / "report.html"
    if not report.is_file():
        raise SystemExit(f"{report} does not exist: make it with `kafka-chaos report {results}`")
    with HeadlessChromium(BrowserOptions(width=WIDTH, height=height)) as browser:
        load = browser.open(report.resolve().as_uri(), RENDERED)
        if load.console_errors:
            raise SystemExit(f"{report}: the page logged errors: {load.console_errors}")
        data = browser.send("Page.captureScreenshot", format="png",
                            clip={"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": scale})["data"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(data))
    verdict = json.loads((results / "verdict.json").read_text()) if (results / "verdict.json").is_file() else {}
    return {"png": str(out), "bytes": out.stat().st_size, "run": results.name, "status": verdict.get("status"),
            "violations": len(verdict.get("violations") or []), "anomalies": verdict.get("anomalies")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path, help="a results directory holding report.html (and verdict.json)")
    p.add_argument("out", type=Path, help="the PNG to write")
    p.add_argument("--height", type=int, default=1000, help="CSS pixels of the page's top to take (default 1000)")
    p.add_argument("--scale", type=float, default=0.75, help="scale of the picture (default 0.75)")
    args = p.parse_args(argv)
    print(json.dumps(screenshot(args.results, args.out, args.height, args.scale)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
