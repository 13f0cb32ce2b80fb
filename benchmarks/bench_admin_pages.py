"""First paint of every admin page, in a real browser, after a server start (issue 38, 1).

Headless Debian chromium (Playwright) against ``streamlit run serve.py`` (started as the
tests start it, :mod:`tests.streamlit_harness`) on a store holding one study of N pairs x 3
current ratings (binary, automatic labels, 20 groups: the dashboard benchmark's synthetic
study), N = 1,200 and 100,000 (``MEDSIM_BENCH_PAGES_SIZES``), on SQLite and, when
``MEDSIM_BENCH_POSTGRES_URL`` or ``MEDSIM_TEST_POSTGRES_URL`` is set, on a new PostgreSQL
database of that server (dropped afterwards); ``MEDSIM_BENCH_PAGES_STORES`` picks them
(default ``sqlite,postgresql``).

Each run starts the server, opens a new browser and signs in as the admin (the password typed
at a person's pace, :data:`TYPING_MS`; timed from the Enter to the Study setup's study list),
then clicks every admin page of the sidebar in turn
(Dashboard, Activity, Export, Embedding scoring, Adjudicate: the first load after the start),
then all of them once more (warm). Timed in the page (``benchmarks/_paint.py``): from the
click's own time stamp to the animation frame that paints the page's main content (Dashboard:
its headline figures; Study setup: the study list; Activity: its table; Export: its form;
Adjudicate: its queue) and, on the Dashboard, its first chart and its last section heading
(the disagreement explorer, no goal); plus the layout-shift score after the headline painted
(what the charts and the later sections arriving moved, in a 1280 x 900 window).

``MEDSIM_BENCH_PAGES_RUNS`` runs (default 10) of today's code alternate with as many runs of
the baseline, the code of ``MEDSIM_BENCH_BASELINE_REF`` (default :data:`BASELINE_REF`, main
before the chart code ran on the admin sign-in form) exported with ``git archive`` into a
temporary folder, on the same store in the same run. Figures: median and worst of the runs.
Goals: main content ≤ 1.5 s in every run, first chart ≤ 2.5 s, no layout shift from the
charts. The load average is printed beside the figures: the machine is shared.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import _paint
from benchmarks._baseline import ROOT, baseline_tree, loadavg
from benchmarks._postgres import postgres_base, throwaway_database
from pages import _registry as registry
from tests.streamlit_harness import open_admin_form

N_ITEMS = 1200
SIZES = tuple(int(n) for n in os.environ.get("MEDSIM_BENCH_PAGES_SIZES", "1200,100000").split(","))
RUNS = int(os.environ.get("MEDSIM_BENCH_PAGES_RUNS", "10"))
STORES = os.environ.get("MEDSIM_BENCH_PAGES_STORES", "sqlite,postgresql").lower().split(",")
#: The code measured as the baseline: main before the chart code ran on the admin sign-in form
#: (9bce919, stop 44; an older main may not open a store made by today's code: bcf7401 lacks
#: migration 0018).
BASELINE_REF = os.environ.get("MEDSIM_BENCH_BASELINE_REF", "9bce919")
#: The pace (ms per key) at which the admin password is typed: a person's, so that what the
#: start page does while the admin types happens as it would (the same for the baseline).
TYPING_MS = 80
GOAL = 1.5
CHART_GOAL = 2.5
#: One animation frame (s): a layout shift counts as the charts' when it comes a frame or
#: more after the frame that painted the text.
ONE_FRAME = 0.017
PASSWORD = "bench-admin-pages-pw"
FRESH = ':not([data-stale="true"])'


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


PAINT_TARGETS: dict[str, dict[str, dict]] = {
    "Study setup": {
        "main": {
            "css": '[data-testid="stExpander"]',
            "text": "Existing studies",
            "has": '[data-testid="stDataFrame"]',
        }
    },
    "Dashboard": {
        "main": {"css": '[data-testid="stMetric"]', "text": "Krippendorff's alpha"},
        "chart": {"css": '[data-testid="stPlotlyChart"] .main-svg'},
        # The page's last section (drawn after the charts since issue 38): no goal of its own.
        "explorer": {"css": "h2", "text": "Disagreement explorer"},
    },
    "Activity": {"main": {"css": '[data-testid="stDataFrame"]'}},
    "Export": {"main": {"css": "button", "text": "Prepare export"}},
    "Embedding scoring": {"main": {"css": "button", "text": "Score and evaluate"}},
    "Adjudicate": {"main": {"css": '[data-testid="adj-counter"]', "text": "decided"}},
}
"""What of each page counts as painted, for the in-page probe (``benchmarks/_paint.py``):
"main" its main content, "chart" (Dashboard) its first chart, "explorer" (Dashboard) its
last section, the disagreement explorer."""

PAINT_PAGES = tuple(p.title for p in registry.pages_for("admin")[1:])
"""The sidebar links timed after Study setup, in sidebar order (Adjudicate included)."""


def _paint_timed(page, title: str, act) -> dict[str, float]:
    """Watch *title*'s targets, do *act* (the click or Enter), return their paint times (s)
    and, where the page has a chart, the layout shift after its main content painted."""
    targets = PAINT_TARGETS[title]
    spec = registry.page(title)
    _paint.watch(page, targets, spec.heading or spec.title)
    act()
    got = _paint.marks(page, list(targets))
    if "chart" in got:
        time.sleep(1.0)  # what the later charts move
        got["shift"] = _paint.shift_after(page, got["main"] + ONE_FRAME)
    return got


def paint_walk(page, base: str, password: str) -> dict[str, dict[str, float]]:
    """Sign in, then every admin page twice; {"first"|"warm": {figure: value}}."""
    out: dict[str, dict[str, float]] = {"first": {}, "warm": {}}
    page.goto(base + "/")
    field = page.get_by_label("Admin password")
    page.get_by_label("Access code").wait_for(timeout=60000)
    _settle(page)
    open_admin_form(page, 60000)
    field.click(timeout=60000)
    page.keyboard.type(password, delay=TYPING_MS)  # a person's pace (TYPING_MS)
    _paint.install(page)
    got = _paint_timed(page, "Study setup", lambda: field.press("Enter"))
    out["first"]["Study setup"] = got["main"]
    for rnd in ("first", "warm"):
        for title in (("Study setup",) if rnd == "warm" else ()) + PAINT_PAGES:
            _settle(page)
            link = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)
            link.wait_for(timeout=60000)
            got = _paint_timed(page, title, link.click)
            out[rnd][title] = got["main"]
            if "chart" in got:
                out[rnd]["Dashboard first chart"] = got["chart"]
                out[rnd]["Dashboard disagreement explorer (last section)"] = got["explorer"]
                out[rnd]["Dashboard layout shift after the text"] = got["shift"]
    return out


def _runs(browser, url: str, code: dict[str, Path], tmp: Path) -> dict[str, list[dict]]:
    """:data:`RUNS` runs of each code ({"new"|"baseline": folder}), alternating."""
    out: dict[str, list[dict]] = {k: [] for k in code}
    for i in range(RUNS):
        for which, folder in code.items():
            env = {
                **os.environ,
                "MEDSIM_DATABASE_URL": url,
                "MEDSIM_ADMIN_PASSWORD": PASSWORD,
                "PYTHONPATH": str(folder),
            }
            log = tmp / f"{which}-{i}.log"
            proc, base = _start_in(env, log, folder)
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                out[which].append(paint_walk(context.new_page(), base, PASSWORD))
                context.close()
            except Exception as exc:  # one failed run is reported, not the whole benchmark
                print(f"  run {i + 1} ({which}) failed: {type(exc).__name__}: {exc}")
            finally:
                proc.terminate()
                proc.wait(10)
    return out


def _start_in(env: dict, log: Path, folder: Path):
    """``streamlit run serve.py`` of the code in *folder*, run from there (so that its own
    packages are imported); (process, base URL) once /_stcore/health answers."""
    import urllib.request

    from tests.ports import free_port

    port = free_port()
    with open(log, "a") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "serve.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"streamlit did not start:\n{log.read_text()[-2000:]}")


def _summary(runs: list[dict], rnd: str, name: str) -> tuple[float, float] | None:
    values = [r[rnd][name] for r in runs if name in r[rnd]]
    return (statistics.median(values), max(values)) if values else None


def _report_runs(report, label: str, runs: dict[str, list[dict]]) -> None:
    new, old = runs.get("new", []), runs.get("baseline", [])
    if not new:
        return
    names = list(dict.fromkeys(k for r in new for rnd in ("first", "warm") for k in r[rnd]))
    for rnd, when in (("first", "first load after a start"), ("warm", "warm")):
        for name in names:
            got = _summary(new, rnd, name)
            if got is None:
                continue
            med, worst = got
            base = _summary(old, rnd, name)
            if "shift" in name:
                report(
                    f"{name}, {when} ({label}), worst of {len(new)}",
                    worst,
                    "",
                    baseline=base[1] if base else None,
                    goal="≤ 0.01",
                    ok=worst <= 0.01,
                )
                continue
            goal = CHART_GOAL if "chart" in name else GOAL
            report(
                f"{name}, {when} ({label}), median of {len(new)}",
                med,
                "s",
                baseline=base[0] if base else None,
            )
            if "last section" in name:  # below the fold, after the charts: no goal
                report(
                    f"{name}, {when} ({label}), worst of {len(new)}",
                    worst,
                    "s",
                    baseline=base[1] if base else None,
                )
                continue
            report(
                f"{name}, {when} ({label}), worst of {len(new)}",
                worst,
                "s",
                baseline=base[1] if base else None,
                goal=f"≤ {goal} s in every run",
                ok=worst <= goal,
            )


def run(report) -> None:
    from medsim_annot.storage import dispose_all, get_engine
    from tests.streamlit_harness import CHROMIUM, chromium

    if not CHROMIUM.exists():
        print(f"  skipped: {CHROMIUM} not found")
        return
    pg = postgres_base()
    with tempfile.TemporaryDirectory() as d, chromium() as browser:
        tmp = Path(d)
        code = {"new": ROOT}
        baseline = baseline_tree(tmp, BASELINE_REF)
        if baseline is not None:
            code["baseline"] = baseline
        for n_items in SIZES:
            stores = [("SQLite", None)] + ([("PostgreSQL", pg)] if pg else [])
            for store, pg_base in stores:
                if store.lower() not in STORES:
                    continue
                with contextlib.ExitStack() as stack:
                    if pg_base:
                        url = stack.enter_context(throwaway_database(pg_base))
                    else:
                        url = f"sqlite:///{tmp / f'bench-{n_items}.db'}"
                    get_engine(url)
                    t0 = time.perf_counter()
                    seed_study(url, n_items)
                    dispose_all()
                    label = f"{n_items:,} items x 3, {store}"
                    print(
                        f"  {label}: seeded in {time.perf_counter() - t0:.0f} s; "
                        f"load average {loadavg()}",
                        flush=True,
                    )
                    runs = _runs(browser, url, code, tmp)
                    print(f"  load average after: {loadavg()}", flush=True)
                    _report_runs(report, label, runs)
