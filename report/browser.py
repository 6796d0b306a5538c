"""A small headless-chromium driver over the DevTools protocol pipe, for the report's browser test and benchmark.

Chromium started with --remote-debugging-pipe reads protocol commands from fd 3 and writes replies and events
to fd 4, each message JSON ended by a NUL byte. That needs no websocket package and no downloaded browser: only
Debian's /usr/bin/chromium. The flags are the ones that work on this workplace's closed network (no background
networking, so the page's own requests are the only ones to watch).
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe")


@dataclass(frozen=True)
class BrowserOptions:
    executable: str = "/usr/bin/chromium"
    width: int = 1366
    height: int = 900
    timeout_s: float = 60.0


@dataclass
class PageLoad:
    """What happened while a page loaded: for asserting "no console error, no network request"."""

    url: str
    requests: list[str] = field(default_factory=list)      # every URL the page asked for, its own included
    console_errors: list[str] = field(default_factory=list)  # console.error/assert, uncaught exceptions, log errors
    load_ms: float | None = None                           # wall time from navigate to the wait condition

    def network_requests(self) -> list[str]:
        """Requests that would leave the machine: anything but the file itself, data: and blob: URLs."""
        return [u for u in self.requests if not u.startswith(("file:", "data:", "blob:", "about:"))]


class ProtocolError(RuntimeError):
    pass


class HeadlessChromium:
    """One headless chromium with one page. Use as a context manager; it kills the browser on exit."""

    def __init__(self, options: BrowserOptions = BrowserOptions()):
        self.options = options
        self.events: list[dict] = []
        self._next_id = 0
        self._buffer = b""
        self._proc: subprocess.Popen | None = None
        self._profile: str | None = None
        self.session_id: str | None = None

    def __enter__(self) -> "HeadlessChromium":
        if not (shutil.which(self.options.executable) or Path(self.options.executable).is_file()):
            raise EnvironmentProblem(f"{self.options.executable} not found",
                                     "install Debian's chromium: apt-get install -y chromium")
        self._profile = tempfile.mkdtemp(prefix="kafka-chaos-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipe_fds():  # in the child: the protocol expects its pipe on fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        args = [self.options.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}",
                f"--window-size={self.options.width},{self.options.height}", "about:blank"]
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, preexec_fn=wire_pipe_fds, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        try:
            self.session_id = self._attach_page()
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable")
            self.send("Emulation.setDeviceMetricsOverride", width=self.options.width, height=self.options.height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                self.send("Browser.close", session=False, timeout_s=5)
            except (ProtocolError, OSError, TimeoutError):
                pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        for fd in (getattr(self, "_to_browser", None), getattr(self, "_from_browser", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_browser = self._from_browser = None
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    # -- protocol ---------------------------------------------------------------------------------------------

    def send(self, method: str, session: bool = True, timeout_s: float | None = None, **params) -> dict:
        """Sends one command and waits for its reply; events that arrive meanwhile go to self.events."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session and self.session_id:
            message["sessionId"] = self.session_id
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout_s or self.options.timeout_s)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise ProtocolError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise ProtocolError("chromium closed the DevTools pipe (did it crash?)")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _pump(self, seconds: float) -> None:
        """Collects events for up to `seconds` without sending anything."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                message = self._read_message(deadline)
                if "method" in message:
                    self.events.append(message)
        except TimeoutError:
            pass

    def _attach_page(self) -> str:
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        target_id = pages[0]["targetId"] if pages else self.send(
            "Target.createTarget", session=False, url="about:blank")["targetId"]
        return self.send("Target.attachToTarget", session=False, targetId=target_id, flatten=True)["sessionId"]

    # -- pages ------------------------------------------------------------------------------------------------

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise ProtocolError(f"evaluating {expression!r}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def open(self, url: str, ready_expression: str = "document.readyState === 'complete'") -> PageLoad:
        """Navigates and waits until `ready_expression` is truthy; records requests and console errors."""
        self.events.clear()
        started = time.monotonic()
        self.send("Page.navigate", url=url)
        deadline = started + self.options.timeout_s
        # the previous document answers until the new one loads: wait for its load event first
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: no load event")
            self._pump(0.05)
        guarded = f"(function () {{ try {{ return !!({ready_expression}); }} catch (e) {{ return false; }} }})()"
        while not self.evaluate(guarded):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: {ready_expression} never became true")
            self._pump(0.05)
        load = PageLoad(url=url, load_ms=(time.monotonic() - started) * 1000)
        self._pump(0.2)  # late console errors and requests
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Network.requestWillBeSent":
                load.requests.append(params["request"]["url"])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                load.console_errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                                    for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                load.console_errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                load.console_errors.append(params["entry"].get("text", ""))
        return load

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """A PNG of the page (the whole page when full_page)."""
        params: dict = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.send("Page.captureScreenshot", **params)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
