"""First load of every admin page, in a real browser, right after the server starts.

Headless Debian chromium (Playwright) against ``streamlit run serve.py`` (started as the
tests start it, :mod:`tests.streamlit_harness`) on a SQLite store holding one study of 1,200
pairs x 3 current ratings (binary, automatic labels, 20 groups: the dashboard benchmark's
synthetic study). Each admin page is timed from the click on its sidebar link to its main
content visible (not stale): Study setup from the Enter of the admin sign-in to its study
list; Dashboard to its headline figures, and separately to its first plotly figure drawn;
Activity to its event table; Export to its form; Embedding scoring to its "Score and
evaluate" button (the installed models listed). The pages are opened in that order once right
after the server starts (first load: imports, the first dashboard, the browser's first chart
code) and once more (second load, the baseline: everything warm); then Study setup and the
Dashboard once more from a new browser (empty cache) against the warm server, which tells
the browser's share of a first load from the server's.

Goal (issue 25, roll-out item 7): every first load ≤ 1.5 s, or a progress indicator where the
work is inherently longer. The load average is printed beside the figures: the machine is
shared.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from pages import _registry as registry
from tests.streamlit_harness import open_admin_form

N_ITEMS = 1200
GOAL = 1.5
PASSWORD = "bench-admin-pages-pw"
ROOT = Path(__file__).resolve().parents[1]
FRESH = ':not([data-stale="true"])'


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def seed_study(url: str, n_items: int = N_ITEMS) -> str:
    """A study of *n_items* pairs x 3 current ratings in the store at *url*; its name."""
    from benchmarks.bench_dashboard import _store, synthetic
    from medsim_annot.services import activity
    from medsim_annot.storage import dispose_all, get_engine

    name = f"bench-pages-{n_items}"
    pairs, current = synthetic(n_items)
    with activity.acting_as("admin:bench"):
        _store(pairs, current, name, get_engine(url))
    dispose_all()
    return name


def _fresh(page, selector: str):
    """The first element matching *selector* in the main area that is not a stale leftover
    of the previous page."""
    return page.locator(
        f'[data-testid="stMain"] [data-testid="stElementContainer"]{FRESH}'
    ).locator(selector)


def _heading(page, name: str):
    return page.get_by_role("heading", name=name, exact=True)


def _content(page, title: str) -> list:
    """What of *title*'s page must be visible, after its main heading, for it to count as
    loaded (in order); Dashboard's list ends with its first plotly figure (timed separately).
    A page not named here counts as loaded once its heading shows."""
    if title == "Study setup":
        return [
            page.get_by_test_id("stExpander")
            .filter(has_text="Existing studies")
            .get_by_test_id("stDataFrame")
        ]
    if title == "Dashboard":
        return [
            _fresh(page, '[data-testid="stMetric"]').filter(has_text="Krippendorff's alpha"),
            _fresh(page, '[data-testid="stPlotlyChart"] .main-svg').first,
        ]
    if title == "Activity":
        return [_fresh(page, '[data-testid="stDataFrame"]').first]
    if title == "Export":
        return [page.get_by_role("button", name="Prepare export")]
    if title == "Embedding scoring":
        return [page.get_by_role("button", name="Score and evaluate")]
    return []  # a page not named here counts as loaded once its heading shows


def main_content(page, title: str) -> list:
    """What must be visible for *title*'s page to count as loaded (in order): its main heading
    (from the page registry), then its content (:func:`_content`)."""
    spec = registry.page(title)
    return [_heading(page, spec.heading or spec.title), *_content(page, title)]


ADMIN_PAGES = tuple(p.title for p in registry.admin_pages()[1:])
"""The sidebar links timed after Study setup (every admin page but the first), in the
registry's order."""


def _wait(targets: list, t0: float, timeout: float) -> list[float]:
    """Wait for each of *targets* in turn; the seconds from *t0* at which each was visible."""
    marks = []
    for target in targets:
        target.first.wait_for(state="visible", timeout=timeout * 1000)
        marks.append(time.perf_counter() - t0)
    return marks


def sign_in_timed(page, base: str, password: str, timeout: float = 60) -> list[float]:
    """Open the start page, type the admin password and press Enter; the seconds from the
    Enter to each part of Study setup's main content."""
    page.goto(base + "/")
    field = page.get_by_label("Admin password")
    page.get_by_label("Access code").wait_for(timeout=timeout * 1000)
    _settle(page)  # the timing starts at the Enter, not during the start page's first run
    open_admin_form(page, timeout * 1000)  # the admin form is behind the "Study admin" toggle
    field.fill(password, timeout=timeout * 1000)
    t0 = time.perf_counter()
    field.press("Enter")
    return _wait(main_content(page, "Study setup"), t0, timeout)


def open_timed(page, title: str, timeout: float = 60) -> list[float]:
    """Click *title* in the sidebar; the seconds from the click to each part of its main
    content."""
    link = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)
    link.wait_for(timeout=timeout * 1000)
    t0 = time.perf_counter()
    link.click()
    return _wait(main_content(page, title), t0, timeout)


def _settle(page) -> None:
    """Let the page's run finish (the status widget gone) before the next click."""
    try:
        page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=60000)
    except Exception:
        pass
    time.sleep(0.5)


def walk(page, base: str, password: str) -> dict[str, dict[str, float]]:
    """Sign in, then open every admin page twice; {"first"|"second": {figure: seconds}}."""
    out: dict[str, dict[str, float]] = {"first": {}, "second": {}}
    marks = sign_in_timed(page, base, password)
    out["first"]["Study setup"] = marks[-1]
    for rnd in ("first", "second"):
        if rnd == "second":
            _settle(page)
            out[rnd]["Study setup"] = open_timed(page, "Study setup")[-1]
        for title in ADMIN_PAGES:
            _settle(page)
            marks = open_timed(page, title)
            if title == "Dashboard":
                out[rnd]["Dashboard (headline figures)"] = marks[1]
                out[rnd]["Dashboard (first plotly figure drawn)"] = marks[2]
            else:
                out[rnd][title] = marks[-1]
    return out


def run(report) -> None:
    from medsim_annot.storage import get_engine
    from tests.streamlit_harness import CHROMIUM, chromium, start_streamlit

    if not CHROMIUM.exists():
        print(f"  skipped: {CHROMIUM} not found")
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        url = f"sqlite:///{tmp / 'bench.db'}"
        get_engine(url)
        seed_study(url)
        env = {
            **os.environ,
            "MEDSIM_DATABASE_URL": url,
            "MEDSIM_ADMIN_PASSWORD": PASSWORD,
            "PYTHONPATH": str(ROOT),
        }
        with chromium() as browser:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            print(f"  load average before the start: {loadavg()}", flush=True)
            proc, base = start_streamlit(env, tmp / "streamlit.log")
            try:
                figures = walk(page, base, PASSWORD)
                # The same server, warm, from a new browser (empty cache): what of a first
                # load is the browser's own (fetching and parsing Streamlit's code).
                page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                cold = {"Study setup": sign_in_timed(page, base, PASSWORD)[-1]}
                _settle(page)
                cold["Dashboard (first plotly figure drawn)"] = open_timed(page, "Dashboard")[-1]
            finally:
                proc.terminate()
                proc.wait(10)
            print(f"  load average after: {loadavg()}", flush=True)
    for name, first in figures["first"].items():
        report(
            f"{name}: first load after a start ({N_ITEMS:,} items x 3, SQLite)",
            first,
            "s",
            baseline=figures["second"].get(name),
            goal=f"≤ {GOAL} s",
            ok=first <= GOAL,
        )
    for name, seconds in cold.items():
        report(f"{name}: warm server, new browser (empty cache)", seconds, "s")
