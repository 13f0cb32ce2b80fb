"""The Dashboard's figures and tables never wait for its charts, and the charts arriving move
nothing (issue 38, section 1).

A fresh server, a small study (200 pairs x 3 ratings), Debian's chromium with a window tall
enough (1280 x 3200) that the first charts and what follows them are on screen, where a move
counts as a layout shift. The probe of ``benchmarks/_paint.py`` (also the benchmark's) marks,
from the click on "Dashboard", the frame that paints the headline figures and the one that
paints the first chart, and records every layout shift. The chart code is made to hold the
main thread for 1.5 s when it first runs (as on a busy machine), so what waits for it shows
whatever the load. Before pages/_charts.py (charts inline with the text, bcf7401) this test
failed: the headline figures were painted in the same frame as the first chart, 4.3 s after
the click, held back by the chart code's run.

The sections below the charts (quality over time, practice, the model of the doctors,
adjudication, the disagreement explorer) are drawn after the paint too, by the same rerun
of the page as the charts, below everything else but the predictions panel (so that the
page's first run does not wait for them): they must show, after the headline, and their
arrival is counted in the layout shift.

Skipped when /usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import os
import time

import pytest

from benchmarks import _paint
from benchmarks import bench_admin_pages as bench
from tests.conftest import ROOT
from tests.streamlit_harness import chromium, require_chromium, sign_in_admin, streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PASSWORD = "browser-charts-pw"
N_ITEMS = 200
#: Layout-shift score allowed after the headline is painted (a shift that moves a tenth of
#: the window by a tenth of its height scores 0.01; a chart replacing a skeleton of another
#: height scored well above this).
MAX_SHIFT = 0.005
#: How long the chart code's first run holds the main thread in the test (ms).
SLOW_MS = 1500

#: Headings of the sections drawn after the paint, below the charts.
LATER = ("Quality over time", "Disagreement explorer")
PREDICTIONS = "Predictions: prediction-powered audit and the model as a rater"

SLOTS = '[class*="st-key-dashboard_fig_"][class*="_slot"]'
#: The charts the small study's Dashboard draws (five at 200 items): waited for before the
#: shifts are summed.
MIN_CHARTS = 5


def _drawn(page) -> int:
    """Charts drawn on the page."""
    return (
        page.locator('[data-testid="stPlotlyChart"]').filter(has=page.locator(".main-svg")).count()
    )


def _filled(page) -> tuple[int, int]:
    """(chart slots on the page, slots holding a drawn chart)."""
    return page.evaluate(
        """(sel) => {
          const slots = [...document.querySelectorAll(sel)];
          return [slots.length,
                  slots.filter(s => s.querySelector('[data-testid="stPlotlyChart"] .main-svg')).length];
        }""",
        SLOTS,
    )


def _slow_chart_code(route) -> None:
    """Streamlit's plotly chunk, made to hold the main thread for SLOW_MS when it runs (as
    its first run does on a busy machine), so the test does not depend on the machine's
    load to see what waits for it."""
    response = route.fetch()
    hold = f"{{const t = performance.now(); while (performance.now() - t < {SLOW_MS}) {{}}}}\n"
    route.fulfill(response=response, body=hold + response.text())


def test_dashboard_text_paints_before_charts_and_charts_move_nothing(tmp_path):
    require_chromium()
    url = f"sqlite:///{tmp_path / 'medsim.db'}"
    bench.seed_study(url, N_ITEMS)
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": url,
        "MEDSIM_ADMIN_PASSWORD": PASSWORD,
        "PYTHONPATH": str(ROOT),
    }
    with (
        streamlit_server(env, tmp_path / "streamlit.log") as base,
        chromium() as browser,
    ):
        page = browser.new_context(viewport={"width": 1280, "height": 3200}).new_page()
        page.route("**/PlotlyChart.*.js", _slow_chart_code)
        sign_in_admin(page, base, PASSWORD)
        _paint.install(page)
        _paint.watch(page, bench.paint_targets("Dashboard"), "QA dashboard")
        page.get_by_test_id("stSidebarNav").get_by_text("Dashboard", exact=True).click()
        got = _paint.marks(page, ["main", "chart", "explorer"])
        deadline = time.monotonic() + 60
        while _drawn(page) < MIN_CHARTS and time.monotonic() < deadline:
            time.sleep(0.2)
        page.get_by_role("heading", name=PREDICTIONS).wait_for(timeout=60000)
        page.wait_for_timeout(1000)  # anything still moving after the last chart is counted
        shift = _paint.shift_after(page, got["main"] + bench.ONE_FRAME)
        slots, filled = _filled(page)
        later = [page.get_by_role("heading", name=h).count() for h in LATER]
    assert got["main"] < got["chart"], (
        f"headline at {got['main']:.3f} s, chart {got['chart']:.3f} s"
    )
    assert got["main"] < got["explorer"], (
        f"headline at {got['main']:.3f} s, disagreement explorer {got['explorer']:.3f} s"
    )
    assert all(later), dict(zip(LATER, later))
    assert shift <= MAX_SHIFT, f"layout shift after the headline painted: {shift:.4f}"
    assert slots >= MIN_CHARTS and filled == slots, f"{filled} of {slots} chart slots drawn"
