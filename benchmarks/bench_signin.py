"""A doctor's sign-in, in a real browser: from the Enter of the access code to the first pair
painted (issue 38, section 1).

Headless Debian chromium (Playwright) against ``streamlit run serve.py`` with a study of
1,200 pairs (``bench_annotation_browser``'s), on SQLite and, when ``MEDSIM_BENCH_POSTGRES_URL``
or ``MEDSIM_TEST_POSTGRES_URL`` is set, on PostgreSQL. ``MEDSIM_BENCH_SIGNINS`` fresh
browsers (default 20; each a new context: empty cache, no session) sign in one after the
other on one server started for them; the first of them is the first after the start. Timed
in the page (``benchmarks/_paint.py``): from the Enter's own time stamp to the animation
frame that paints the first pair's first term. The baseline is the code of
``bench_admin_pages.BASELINE_REF`` in the same run, on the same store. Goal: p95 ≤ 1 s.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import _paint
from benchmarks import bench_admin_pages as pages
from benchmarks._baseline import baseline_tree, loadavg
from benchmarks._postgres import postgres_base, throwaway_database

SIGNINS = int(os.environ.get("MEDSIM_BENCH_SIGNINS", "20"))
GOAL = 1.0
FIRST_PAIR = {"main": {"css": '[data-testid="medsim-term-1"]', "text": "term"}}


def sign_in(browser, base: str, code: str) -> float:
    """One fresh browser signs in with *code*; seconds from the Enter to the first pair."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(base + "/")
        field = page.get_by_label("Access code")
        field.wait_for(timeout=60000)
        pages._settle(page)
        field.fill(code)
        _paint.install(page)
        _paint.watch(page, FIRST_PAIR)
        field.press("Enter")
        return _paint.marks(page, ["main"])["main"]
    finally:
        context.close()


def _times(browser, url: str, folder: Path, code: str, log: Path) -> list[float]:
    env = {**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(folder)}
    proc, base = pages._start_in(env, log, folder)
    try:
        return [sign_in(browser, base, code) for _ in range(SIGNINS)]
    finally:
        proc.terminate()
        proc.wait(10)


def run(report) -> None:
    from benchmarks.bench_annotation_browser import _study
    from medsim_annot.storage import dispose_all, get_engine
    from tests.streamlit_harness import CHROMIUM, chromium

    if not CHROMIUM.exists():
        print(f"  skipped: {CHROMIUM} not found")
        return
    with tempfile.TemporaryDirectory() as d, chromium() as browser:
        tmp = Path(d)
        baseline = baseline_tree(tmp, pages.BASELINE_REF)
        pg = postgres_base()
        stores = [("SQLite", None)] + ([("PostgreSQL", pg)] if pg else [])
        for store, pg_base in stores:
            with contextlib.ExitStack() as stack:
                url = (
                    stack.enter_context(throwaway_database(pg_base))
                    if pg_base
                    else f"sqlite:///{tmp / 'bench.db'}"
                )
                get_engine(url)
                _, codes = _study(url)
                dispose_all()
                print(f"  {store}: load average {loadavg()}", flush=True)
                new = _times(browser, url, pages.ROOT, codes["widget"], tmp / f"{store}-new.log")
                old = (
                    _times(browser, url, baseline, codes["rerun"], tmp / f"{store}-old.log")
                    if baseline is not None
                    else []
                )
                print(f"  load average after: {loadavg()}", flush=True)
            label = f"{store}, {SIGNINS} fresh browsers"

            def pct(xs, q):
                return float(np.percentile(xs, q)) if xs else None

            report(
                f"Sign-in Enter → first pair painted, median ({label})",
                pct(new, 50),
                "s",
                baseline=pct(old, 50),
            )
            p95 = pct(new, 95)
            report(
                f"Sign-in Enter → first pair painted, p95 ({label})",
                p95,
                "s",
                baseline=pct(old, 95),
                goal=f"≤ {GOAL} s",
                ok=p95 <= GOAL,
            )
            report(
                f"Sign-in Enter → first pair painted, first after the start ({store})",
                new[0],
                "s",
                baseline=old[0] if old else None,
            )
