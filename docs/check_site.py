# SPDX-License-Identifier: BSD-3-Clause
"""Open every page of the built site in headless Chromium and check that it loads cleanly.

For each ``*.html`` under the site directory (default ``docs/_build/html``) the page is loaded
from ``file://`` in one browser tab, and it fails when

* the browser logs an error (a JavaScript exception, ``console.error``, a page resource that
  does not load: a missing image, script or stylesheet of the site), or
* one of its images has not rendered: ``img.complete`` false or ``naturalWidth == 0``, or
* the page does not reach its ``load`` event within the timeout.

Resources outside the site (``http://``, ``https://``: MathJax from its CDN) are blocked, so the
check gives the same answer with or without a network; they are counted, not failed.

The browser is Debian's ``chromium`` (``apt-get install -y chromium``), driven over the Chrome
DevTools Protocol on a pipe (``--remote-debugging-pipe``): no Python dependency, no download.

Run:  python docs/check_site.py [SITE_DIR] [--chromium PATH] [--timeout SECONDS]
Exit status 1 when a page fails (each failure printed), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

IMAGES_JS = """JSON.stringify(Array.from(document.images)
  .filter(i => !i.complete || i.naturalWidth === 0)
  .map(i => i.getAttribute('src')))"""


class Browser:
    """A headless Chromium driven over CDP on file descriptors 3 (commands) and 4 (replies)."""

    def __init__(self, executable: str, profile: str) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        args = [
            executable,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]

        def fds() -> None:  # in the child: the pipe ends on fds 3 and 4 (moved off them first)
            high_r, high_w = os.dup(cmd_r) + 100, os.dup(rep_w) + 101
            os.dup2(cmd_r, high_r)
            os.dup2(rep_w, high_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            args, pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(cmd_r)
        os.close(rep_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, timeout: float) -> dict[str, Any] | None:
        import select

        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._rep_r], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self._rep_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe (did it start?)")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, session: str | None = None, timeout: float = 30.0, **params: Any):
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(max(0.0, deadline - time.monotonic()))
            if reply is None:
                raise TimeoutError(f"no reply to {method} within {timeout} s")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, name: str, timeout: float) -> bool:
        """Wait for event ``name`` (kept events included); False on timeout. Events stay kept."""
        deadline = time.monotonic() + timeout
        if any(ev.get("method") == name for ev in self.events):
            return True
        while True:
            reply = self._read(max(0.0, deadline - time.monotonic()))
            if reply is None:
                return False
            self.events.append(reply)
            if reply.get("method") == name:
                return True

    def drain(self, seconds: float) -> None:
        """Keep the events that arrive within ``seconds`` (late errors of a loaded page)."""
        deadline = time.monotonic() + seconds
        while (reply := self._read(max(0.0, deadline - time.monotonic()))) is not None:
            self.events.append(reply)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _errors(events: list[dict[str, Any]], blocked: list[str]) -> list[str]:
    """The error messages among CDP events (external resources blocked on purpose: counted)."""
    out, urls = [], {}
    for ev in events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[p["requestId"]] = p["request"]["url"]
        elif method == "Network.loadingFailed":
            url = urls.get(p["requestId"], "?")
            if url.startswith(("http://", "https://")):
                blocked.append(url)
            else:
                out.append(f"resource not loaded ({p.get('errorText', '')}): {url}")
        elif method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
        elif method == "Runtime.consoleAPICalled" and p.get("type") == "error":
            out.append("console.error: " + " ".join(str(a.get("value", "")) for a in p["args"]))
        elif (
            method == "Log.entryAdded"
            and p["entry"]["level"] == "error"
            and p["entry"]["source"] != "network"  # network failures: Network.loadingFailed
        ):
            out.append(f"log ({p['entry']['source']}): {p['entry']['text']}")
    return out


def check(site: Path, chromium: str, timeout: float) -> int:
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)
    if not pages:
        print(f"no pages under {site}: build the site first", file=sys.stderr)
        return 1
    failures, blocked, n_images = [], [], 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="svmgeo-chromium-") as profile:
        browser = Browser(chromium, profile)
        try:
            target = browser.send("Target.createTarget", url="about:blank")["targetId"]
            session = browser.send("Target.attachToTarget", targetId=target, flatten=True)[
                "sessionId"
            ]
            for domain in ("Page", "Runtime", "Log", "Network"):
                browser.send(f"{domain}.enable", session)
            browser.send("Network.setBlockedURLs", session, urls=["http://*", "https://*"])
            for page in pages:
                browser.events.clear()
                browser.send("Page.navigate", session, url=page.resolve().as_uri())
                problems = []
                if not browser.wait_event("Page.loadEventFired", timeout):
                    problems.append(f"no load event within {timeout} s")
                else:
                    browser.drain(0.05)
                    res = browser.send("Runtime.evaluate", session, expression=IMAGES_JS)
                    broken = json.loads(res["result"]["value"])
                    problems += [f"image not rendered: {src}" for src in broken]
                    n_images += int(
                        browser.send(
                            "Runtime.evaluate", session, expression="document.images.length"
                        )["result"]["value"]
                    )
                problems += _errors(browser.events, blocked)
                if problems:
                    failures.append((page.relative_to(site), problems))
        finally:
            browser.close()
    for page, problems in failures:
        print(f"FAIL {page}")
        for p in problems:
            print(f"    {p}")
    print(
        f"{len(pages)} pages, {n_images} images, {len(failures)} failing; "
        f"{len(blocked)} external requests blocked (not checked); {time.perf_counter() - t0:.1f} s"
    )
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", nargs="?", type=Path, default=Path(__file__).parent / "_build/html")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per page")
    args = ap.parse_args()
    return check(args.site, args.chromium, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
