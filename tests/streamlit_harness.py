"""One harness for tests that start the app: a `streamlit run serve.py` server (the pages of
app.py plus the ratings endpoint, as `make run` serves them) on a free loopback port with its
own environment, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, need

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_streamlit(
    env: dict,
    log_path: Path,
    port: int | None = None,
    timeout: float = 60,
    script: str = "serve.py",
    args: tuple[str, ...] = (),
):
    """Start ``streamlit run serve.py`` (or *script*) with *env* on *port* (default: a free
    one; a fixed port survives a restart, and with it the browser's sessionStorage); return
    (process, base URL) once /_stcore/health answers 200. The caller stops it (``terminate``,
    or ``kill -9`` in the fault tests)."""
    port = port or free_port()
    with open(log_path, "a") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                script,
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
                *args,
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail("streamlit did not start:\n" + Path(log_path).read_text())
        time.sleep(0.3)


@contextlib.contextmanager
def streamlit_server(
    env: dict,
    log_path: Path,
    timeout: float = 60,
    *,
    port: int | None = None,
    args: tuple[str, ...] = (),
):
    """Serve serve.py (app.py and the ratings endpoint) with *env* (on *port*, with extra ``streamlit run`` *args*); yield the
    base URL once /_stcore/health answers 200, and stop the server afterwards."""
    proc, base = start_streamlit(env, log_path, port, timeout, args=args)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def require_chromium() -> None:
    need(
        CHROMIUM.exists(),
        f"{CHROMIUM} not found (apt-get install chromium)",
        "MEDSIM_REQUIRE_BROWSER",
    )


@contextlib.contextmanager
def chromium():
    """A headless Debian chromium under Playwright (never a browser download of its own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def sign_in_admin(
    page, base: str, password: str, timeout: float = 60000, attempts: int = 3
) -> None:
    """Sign in on the start page with the admin password; wait for the Study setup page.

    The password is submitted with Enter from its own field, so the value the form sends is
    the one typed (a click on the button right after ``fill`` can, on a loaded machine, reach
    the form before the field's value does: "Wrong admin name or password" for an empty
    password). Such a refusal is retried (a wrong password is never retried into a lockout:
    at most *attempts* tries, under the throttle's free failures). On failure, the page's
    text is in the assertion message."""
    page.goto(base + "/")
    setup = page.get_by_role("heading", name="Study setup")
    refused = page.get_by_text("Wrong admin name or password.")
    paused = page.get_by_text("Sign-in paused", exact=False)
    for attempt in range(attempts):
        field = page.get_by_label("Admin password")
        if not field.is_visible():
            page.get_by_test_id("stExpander").get_by_text("Study admin", exact=True).click(
                timeout=timeout
            )
        field.fill(password, timeout=timeout)
        field.press("Enter")
        # A fresh page can drop a submit that comes before its first run settles (the form
        # stays as it was: no page, no refusal). Send it again every 10 s until *timeout*.
        outcome = setup.or_(refused).or_(paused).first
        deadline = time.monotonic() + timeout / 1000
        while True:
            try:
                outcome.wait_for(timeout=min(10000, timeout))
                break
            except Exception as exc:
                if time.monotonic() >= deadline:
                    raise AssertionError(
                        f"no Study setup page {timeout / 1000:.0f} s after the admin sign-in "
                        f"(attempt {attempt + 1}); the page shows:\n"
                        + page.locator("body").inner_text()[:2000]
                    ) from exc
                if field.is_visible():
                    field.fill(password)
                    field.press("Enter")
        if setup.is_visible():
            return
        # Refused or paused: start again from a fresh start page.
        time.sleep(1.0)
        page.goto(base + "/")
    raise AssertionError(
        f"admin sign-in refused {attempts} times; the page shows:\n"
        + page.locator("body").inner_text()[:2000]
    )
