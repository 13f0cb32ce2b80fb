"""One harness for tests that start the app: a `streamlit run serve.py` server (the pages of
app.py plus the ratings endpoint, as `make run` serves them) on a free loopback port with its
own environment, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, need
from tests.ports import free_port, owns_port

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
    (process, base URL) once /_stcore/health answers 200 *from this process* (see
    :func:`tests.ports.owns_port`: another worker's server may have taken a port picked as
    free; a picked port is then picked again, a fixed one fails the test). The caller stops
    it (``terminate``, or ``kill -9`` in the fault tests)."""
    for _ in range(1 if port else 5):
        started = _start_once(env, log_path, port or free_port(), timeout, script, args)
        if started is not None:
            return started
    pytest.fail(
        f"streamlit could not listen on {'port ' + str(port) if port else 'a free port'}"
        " (another process holds it):\n" + Path(log_path).read_text()
    )


#: Where each server start is noted (one line: seconds to healthy, script, the test that
#: started it), when set: ``MEDSIM_TEST_SERVER_LOG=starts.txt pytest ...``; the
#: server-start count that docs/testing.md asks new browser modules to keep down.
SERVER_LOG = os.environ.get("MEDSIM_TEST_SERVER_LOG", "")


def _note_start(seconds: float, script: str) -> None:
    if SERVER_LOG:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
        with open(SERVER_LOG, "a") as out:
            out.write(f"{seconds:6.2f} s  {script}  {test}\n")


def _start_once(env, log_path: Path, port: int, timeout: float, script: str, args):
    """The server on *port*, ``None`` if another process holds the port."""
    t0 = time.monotonic()
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
        if owns_port(proc.pid, port):
            try:
                with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        _note_start(time.monotonic() - t0, script)
                        return proc, base
            except OSError:
                pass
        if proc.poll() is not None:
            if f"Port {port} is not available" in Path(log_path).read_text(errors="replace"):
                return None
            pytest.fail("streamlit did not start:\n" + Path(log_path).read_text())
        if time.time() > deadline:
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
    script: str = "serve.py",
):
    """Serve serve.py (app.py and the ratings endpoint; or *script*) with *env* (on *port*,
    with extra ``streamlit run`` *args*); yield the base URL once /_stcore/health answers 200,
    and stop the server afterwards."""
    proc, base = start_streamlit(env, log_path, port, timeout, script=script, args=args)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_setup(code: str, env: dict, *argv: str) -> str:
    """Run the Python *code* (a module's setup script: studies, ratings, codes) in this
    process against the store of *env* (``MEDSIM_DATABASE_URL``, ``MEDSIM_ADMIN_PASSWORD``),
    with ``sys.argv[1:]`` = *argv*; return what it printed. What ``python -c code`` against
    a served app's environment did, without a new interpreter's ~2 s of imports: the
    store's engines are let go before and after, so nothing of this process stays open on
    the served app's store."""
    from medsim_annot.storage import dispose_all

    keys = ("MEDSIM_DATABASE_URL", "MEDSIM_ADMIN_PASSWORD")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for key in keys:
            if env.get(key):
                mp.setenv(key, env[key])
            else:
                mp.delenv(key, raising=False)
        mp.setattr(sys, "argv", ["-c", *argv])
        dispose_all()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "<setup>", "exec"), {"__name__": "__main__"})
        finally:
            dispose_all()
    return out.getvalue()


def require_chromium() -> None:
    need(
        CHROMIUM.exists(),
        f"{CHROMIUM} not found (apt-get install chromium)",
        "MEDSIM_REQUIRE_BROWSER",
    )


class _Running:
    """This test process's Playwright and chromium, while browser tests follow each other."""

    playwright = None
    browser = None


def _running_browser():
    """The test process's chromium, launched (with its Playwright driver) if none runs."""
    from playwright.sync_api import sync_playwright

    if _Running.browser is None or not _Running.browser.is_connected():
        close_browser()
        _Running.playwright = sync_playwright().start()
        _Running.browser = _Running.playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
    return _Running.browser


def close_browser() -> None:
    """Stop the test process's chromium and Playwright driver, if they run. Called after a
    test when the next one is not a real-browser test (tests/conftest.py): Playwright's
    sync API marks its event loop as the thread's running loop, so ``asyncio.run`` in a
    later test of the process would fail while it lives."""
    browser, playwright = _Running.browser, _Running.playwright
    _Running.browser = _Running.playwright = None
    try:
        if browser is not None and browser.is_connected():
            browser.close()
    finally:
        if playwright is not None:
            playwright.stop()


@contextlib.contextmanager
def chromium():
    """A headless Debian chromium under Playwright (never a browser download of its own).

    One chromium serves the browser tests that run one after another in a test process
    (a launch and its driver cost ~0.8 CPU-s; a run had ~25): each ``with chromium()``
    gets it, and every context opened in the block (``new_context``, ``new_page``) is
    closed when the block ends, as a browser of its own was. A test sees nothing of an
    earlier one's cookies, storage or pages: those live in contexts."""
    browser = _running_browser()
    before = set(browser.contexts)
    try:
        yield browser
    finally:
        if browser.is_connected():
            for context in browser.contexts:
                if context not in before:
                    context.close()


Delta = tuple[tuple[int, ...], str, str]  # (delta path, element type, label)


def _forward_summary(payload: bytes) -> tuple[str, Delta | None]:
    """One received websocket frame (a Streamlit ForwardMsg) in a few words, and the new
    element it carries, if any."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg.FromString(payload)
    kind = msg.WhichOneof("type") or "?"
    if kind != "delta":
        return kind, None
    path = tuple(msg.metadata.delta_path)
    what = msg.delta.WhichOneof("type") or "?"
    if what == "new_element":
        element = msg.delta.new_element
        typ = element.WhichOneof("type") or "?"
        label = str(getattr(getattr(element, typ), "label", "")) if typ != "?" else ""
        text = f"delta {list(path)} {typ} {label!r}" if label else f"delta {list(path)} {typ}"
        return text, (path, typ, label)
    if what == "add_block":
        block = msg.delta.add_block.WhichOneof("type") or ""
        return f"delta {list(path)} block {block}".rstrip(), None
    return f"delta {list(path)} {what}", None


def _back_summary(payload: bytes) -> str:
    """One sent websocket frame (a Streamlit BackMsg) in a few words."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg.FromString(payload)
    kind = msg.WhichOneof("type") or "?"
    if kind != "rerun_script":
        return kind
    widgets = [w.id.rsplit("-", 1)[-1] for w in msg.rerun_script.widget_states.widgets]
    return f"rerun_script widgets={widgets}"


class Frames:
    """The websocket frames of *page* (attached before its ``goto``), with their times.

    ``rows`` holds (seconds since attached, "recv" / "sent" / "test", summary): received
    frames are decoded as Streamlit ForwardMsgs (a delta's path, element type and label),
    sent ones as BackMsgs (a rerun's widget keys); ``elements`` lists the new elements in
    arrival order (a form's submit button is a ``button``); ``note`` adds the test's own steps, so a
    failure message shows what the page had received when the test acted, and what it sent.
    """

    def __init__(self, page) -> None:
        self.t0 = time.monotonic()
        self.rows: list[tuple[float, str, str]] = []
        self.elements: list[Delta] = []  # every new element received, in arrival order
        page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        ws.on("framereceived", lambda payload: self._add("recv", payload))
        ws.on("framesent", lambda payload: self._add("sent", payload))

    def _add(self, way: str, payload) -> None:
        t = time.monotonic() - self.t0
        try:
            if isinstance(payload, str):
                text = f"text {payload[:60]!r}"
            elif way == "recv":
                text, element = _forward_summary(payload)
                if element is not None:
                    self.elements.append(element)
            else:
                text = _back_summary(payload)
        except Exception as exc:  # never let a summary break the page's event loop
            text = f"{len(payload)} bytes (undecoded: {type(exc).__name__})"
        self.rows.append((t, way, text))

    def note(self, what: str) -> None:
        self.rows.append((time.monotonic() - self.t0, "test", what))

    def count(self, way: str, prefix: str) -> int:
        """How many frames went *way* ("recv" / "sent") whose summary starts with *prefix*."""
        return sum(1 for _, w, text in self.rows if w == way and text.startswith(prefix))

    def first(self, typ: str, label: str) -> tuple[int, Delta]:
        """The arrival index and delta of the first element of type *typ* labelled *label*."""
        for i, element in enumerate(self.elements):
            if element[1] == typ and element[2] == label:
                return i, element
        raise AssertionError(f"no {typ} {label!r} received; frames:\n{self.text()}")

    def text(self, last: int = 80) -> str:
        rows = self.rows[-last:]
        skipped = len(self.rows) - len(rows)
        head = [f"({skipped} earlier frames left out)"] if skipped else []
        return "\n".join(head + [f"{t:8.3f} s {way:4} {text}" for t, way, text in rows])


def settled(page, timeout: float = 60000) -> None:
    """Wait until the page's script run has finished (everything it draws is drawn)."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
        " return a && a.dataset.testScriptState === 'notRunning'; }",
        timeout=timeout,
    )


def choose_study(page, key: str, name: str, timeout: float = 60000) -> None:
    """Choose the study *name* in the page's study picker (the selectbox with the widget key
    *key*, pages/_qa.py ``pick_study``), as a test on the shared app server must (other
    modules' studies are listed too); waits until the picker shows it and the page's run
    has finished. The picker's field is left (as a click elsewhere would), so keys typed
    next go to the page, not into the picker's search field."""
    box = page.locator(f".st-key-{key}")
    settled(page, timeout)
    box.get_by_role("combobox").click(timeout=timeout)
    page.get_by_role("option", name=name, exact=True).click(timeout=timeout)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.wait_for_function(
        "([key, name]) => { const b = document.querySelector('.st-key-' + key);"
        " return !!b && (b.innerText.split('\\n').map(x => x.trim()).includes(name)"
        " || [...b.querySelectorAll('input')].some(i => i.value === name)); }",
        arg=[key, name],
        timeout=timeout,
    )
    settled(page, timeout)


def open_admin_form(page, timeout: float = 60000) -> None:
    """Turn on the start page's "Study admin" toggle, unless its form already shows.

    Found by its key, so it holds in any language. The click waits for the page's script
    run to end: a toggle clicked while the first run is still drawing the page is drawn
    again by that run, and the click lost. The click goes to the toggle's label (the
    keyed container is wider than the switch; its centre may be empty space).
    """
    page.locator(".st-key-login_admin_open").wait_for(timeout=timeout)
    settled(page, timeout)
    field = page.locator(".st-key-login_password input")
    if not field.is_visible():
        page.locator(".st-key-login_admin_open label").first.click(timeout=timeout)
    field.wait_for(timeout=timeout)


def page_report(page, frames: Frames) -> str:
    """What a failed sign-in shows: the page's text and its websocket frames."""
    return (
        "the page shows:\n"
        + page.locator("body").inner_text()[:1500]
        + "\nwebsocket frames:\n"
        + frames.text()
    )


def sign_in_admin(page, base: str, password: str, timeout: float = 60000) -> None:
    """Sign in on the start page with the admin password; wait for the Study setup page.

    One submit: the password is typed into its field and Enter pressed once, as an admin
    does. Anything but the Study setup page within *timeout* fails (a refusal, a paused
    sign-in, or silence: the form standing unchanged), with the page's text and its
    websocket frames in the message, since a dropped submit is a product bug to be seen,
    not retried away. *timeout* (ms) bounds the page's appearance; the answer to the
    submit must come within 20 s of it.
    """
    frames = Frames(page)
    page.goto(base + "/", timeout=timeout)
    open_admin_form(page, timeout)
    field = page.locator(".st-key-login_password input")
    field.fill(password, timeout=timeout)
    frames.note("password typed; Enter")
    field.press("Enter")
    setup = page.get_by_role("heading", name="Study setup")
    refused = page.get_by_text("Wrong admin name or password.")
    paused = page.get_by_text("Sign-in paused", exact=False)
    answer_ms = min(timeout, 20000)
    try:
        setup.or_(refused).or_(paused).first.wait_for(timeout=answer_ms)
    except Exception as exc:
        raise AssertionError(
            f"one Enter in the admin form was not answered within {answer_ms / 1000:.0f} s "
            "(no Study setup page, no refusal); " + page_report(page, frames)
        ) from exc
    if not setup.is_visible():
        raise AssertionError("the admin sign-in was refused; " + page_report(page, frames))
