"""Real-browser tests of a freshly started server (issue 25, roll-out items 7 and 8):

- the first visitor after a start never sees the list of the app's internal pages (Streamlit's
  legacy multipage mode lists every file of ``pages/`` until ``app.py``'s ``st.navigation``
  replaces it; ``serve.py`` turns that mode off before any session starts). A script
  installed before the page's first paint records every sidebar navigation link ever added;
  the control test shows that the same recorder sees the list under ``streamlit run app.py``;
- every admin page shows its main content within a bound after the first click on it after a
  start (1,200 pairs x 3 ratings; what counts as main content, and the timing, are
  ``benchmarks/bench_admin_pages.py``'s, whose ``make bench`` figures hold the 1.5 s goal).

Playwright drives Debian's chromium (tests/streamlit_harness.py). Skipped when
/usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import contextlib
import os
import time

import pytest

from benchmarks import bench_admin_pages as bench
from pages import _registry as registry
from tests.conftest import ROOT
from tests.streamlit_harness import (
    Frames,
    chromium,
    require_chromium,
    sign_in_admin,
    streamlit_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PASSWORD = "browser-admin-pages-pw"
# Bound on the first load of each page after a start. The goal (1.5 s at 1,200 items on an
# idle 2-core machine) is the benchmark's; a test shares the machine with the rest of the
# suite, so it allows twice that, stretched by the load beyond the cores (before the fix, at
# a load below 2: Dashboard 3.6-5.7 s, Embedding scoring 3-4.4 s).
BASE_BOUND = float(os.environ.get("MEDSIM_TEST_ADMIN_PAGE_BOUND", "3.0"))


def bound() -> float:
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return BASE_BOUND * max(1.0, load / (os.cpu_count() or 1))


INTERNAL = registry.internal_names()
"""Page names (as titled in app.py, and as the legacy mode titles the files; from the one page
registry) an unsigned-in visitor must never see."""

RECORD_NAV = """
(() => {
  window.__navSeen = [];
  const sel = '[data-testid="stSidebarNav"] a, [data-testid="stSidebarNavLink"]';
  const note = (el) => {
    const text = (el.textContent || '').trim();
    if (text && !window.__navSeen.includes(text)) window.__navSeen.push(text);
  };
  const look = (node) => {
    if (!(node instanceof Element)) return;
    if (node.matches(sel)) note(node);
    node.querySelectorAll(sel).forEach(note);
  };
  new MutationObserver((records) => {
    for (const r of records) {
      r.addedNodes.forEach(look);
      if (r.type === 'characterData' && r.target.parentElement) {
        const link = r.target.parentElement.closest(sel);
        if (link) note(link);
      }
    }
  }).observe(document, {subtree: true, childList: true, characterData: true});
})();
"""


@contextlib.contextmanager
def _fresh_server(tmp_path, script: str = "serve.py", seed: bool = False):
    require_chromium()
    url = f"sqlite:///{tmp_path / 'medsim.db'}"
    if seed:
        bench.seed_study(url)
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": url,
        "MEDSIM_ADMIN_PASSWORD": PASSWORD,
        "PYTHONPATH": str(ROOT),
    }
    with streamlit_server(env, tmp_path / "streamlit.log", script=script) as base:
        yield base


def _nav_seen_by_first_visitor(base: str) -> list[str]:
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.add_init_script(RECORD_NAV)
        frames = Frames(page)
        page.goto(base + "/")
        page.get_by_label("Access code").wait_for(timeout=60000)
        page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=60000)
        # Instead of a fixed wait: the first script run has finished on the server (a page
        # list, sent with the session's start, came before it) and the page has drawn
        # everything received (its script state idle, two frames painted since).
        deadline = time.monotonic() + 60
        while not frames.count("recv", "script_finished"):
            assert time.monotonic() < deadline, "no script run finished:\n" + frames.text()
            page.wait_for_timeout(50)
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stApp\"]')"
            ".dataset.testScriptState === 'notRunning'",
            timeout=60000,
        )
        page.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        return page.evaluate("() => window.__navSeen")


@pytest.fixture(scope="module")
def fresh_seeded(tmp_path_factory):
    """One freshly started serve.py with the benchmark's study (1,200 pairs x 3 ratings),
    for the two tests that need a server nobody has used: its first visitor (who only sees
    the start page), then the admin's first load of each page. ``visits`` counts the tests
    that used it, so each can tell it came first where that matters."""
    with _fresh_server(tmp_path_factory.mktemp("admin_pages"), seed=True) as base:
        yield {"base": base, "visits": 0}


def test_first_visitor_after_start_never_sees_a_page_list(fresh_seeded):
    assert fresh_seeded["visits"] == 0, "this test needs the server before anyone else"
    fresh_seeded["visits"] += 1
    seen = _nav_seen_by_first_visitor(fresh_seeded["base"])
    shown = [t for t in seen if t.lower() in INTERNAL]
    assert shown == [], f"an unsigned-in first visitor saw the page list: {seen}"


def test_the_recorder_sees_the_legacy_page_list_of_app_py_run_directly(tmp_path):
    """The check above is not blind: ``streamlit run app.py`` (no serve.py) shows the list
    once, and the recorder sees it (as app.py's docstring says)."""
    with _fresh_server(tmp_path, script="app.py") as base:
        seen = _nav_seen_by_first_visitor(base)
    assert {t.lower() for t in seen} & INTERNAL, seen


def test_every_admin_page_shows_its_main_content(fresh_seeded):
    """Each admin page's first load after the start (the first visitor before it, if any,
    saw only the start page: no admin page has been drawn in this server)."""
    fresh_seeded["visits"] += 1
    base = fresh_seeded["base"]
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        sign_in_admin(page, base, PASSWORD, timeout=120000)
        t0 = time.perf_counter()
        setup = bench._wait(bench.main_content(page, "Study setup"), t0, 30)
        limit = bound()
        slow = {"Study setup (after the sign-in)": setup[-1]} if setup[-1] > limit else {}
        times = {}
        for title in bench.ADMIN_PAGES:
            bench._settle(page)
            limit = bound()
            try:
                marks = bench.open_timed(page, title, timeout=max(limit, 30))
            except Exception as exc:
                raise AssertionError(f"{title}: no main content within 30 s") from exc
            times[title] = marks
            if marks[-1] > limit:
                slow[title] = (marks[-1], limit)
    assert slow == {}, (
        f"first loads over their bound (seconds, bound): {slow}; all: {times}; "
        f"/proc/loadavg {bench.loadavg()}"
    )
