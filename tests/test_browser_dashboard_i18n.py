"""What a German admin's browser shows on the Dashboard (issue 35): the browser's locale
(de-DE, no language of their own) makes the page German; the tables' numbers are drawn as
German writes them (``0,624`` in the grid, not ``0.624``), the headline too, and the charts'
axes use the decimal comma (plotly ``separators``).

Playwright drives Debian's chromium (tests/streamlit_harness.py). Skipped when
/usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1. Keyed selectors (never
English labels) find the sign-in form, so the test holds whatever language it is in.
"""

from __future__ import annotations

import os
import re

import pytest

from medsim_annot.services.demo import seed_demo
from medsim_annot.storage import dispose_all, get_engine
from tests.conftest import ROOT
from tests.streamlit_harness import (
    chromium,
    open_admin_form,
    require_chromium,
    streamlit_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PASSWORD = "browser-dashboard-i18n-pw"
CELLS = """(grid) => [...grid.querySelectorAll('[role="row"]')].map(
  (row) => [...row.querySelectorAll('[role="gridcell"], [role="columnheader"]')].map(
    (cell) => (cell.textContent || '').trim()))"""
GERMAN_DECIMAL = re.compile(r"^\d+,\d+$")


#: The tables the test reads have drawn their headers: a table's grid comes with its own
#: code chunk and draws after the script run ends, later still on a loaded machine.
GRIDS_DRAWN = """(names) => {
  const headers = [...document.querySelectorAll(
    '[data-testid="stDataFrame"] [role="columnheader"]')].map((c) => (c.textContent || '').trim());
  return names.every((name) => headers.includes(name));
}"""


def _tables(page, headers: list[str]) -> list[list[list[str]]]:
    page.wait_for_function(GRIDS_DRAWN, arg=headers, timeout=60000)
    grids = page.locator('[data-testid="stDataFrame"]')
    return [grids.nth(i).evaluate(CELLS) for i in range(grids.count())]


def test_german_browser_sees_german_numbers_on_the_dashboard(tmp_path):
    require_chromium()
    url = f"sqlite:///{tmp_path / 'medsim.db'}"
    seed_demo(engine=get_engine(url))
    dispose_all()
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
        page = browser.new_context(
            locale="de-DE", viewport={"width": 1400, "height": 1000}
        ).new_page()
        page.goto(base + "/")
        open_admin_form(page)
        field = page.locator(".st-key-login_password input")
        field.fill(PASSWORD, timeout=60000)
        field.press("Enter")
        page.get_by_test_id("stSidebarNav").locator('a[href$="/dashboard"]').click(timeout=60000)
        page.get_by_role("heading", name="QS-Dashboard").wait_for(timeout=60000)
        page.get_by_text("Automatische Labels gegen Mehrheit, je Gruppe").first.wait_for(
            timeout=120000
        )
        page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=120000)
        metrics = page.get_by_test_id("stMetricValue").all_inner_texts()
        tables = _tables(page, ["erledigt", "Genauigkeit"])
        ticks = page.locator(".js-plotly-plot .ytick text").all_text_contents()
    # The headline: alpha and the auto-label accuracy as 0,62 and 0,97.
    assert sum(bool(GERMAN_DECIMAL.match(m.strip())) for m in metrics) >= 2, metrics
    # The completion table's German headers, and the audit table's German numbers.
    headers = [t[0] for t in tables if t]
    assert any(
        h[:3] == ["", "Annotierende Person", "erledigt"]
        or h[:2] == ["Annotierende Person", "erledigt"]
        for h in headers
    ), headers
    audit = next(t for t in tables if t and "Genauigkeit" in t[0])
    col = audit[0].index("Genauigkeit")
    shown = [row[col] for row in audit[1:] if len(row) > col]
    assert shown and all(GERMAN_DECIMAL.match(v) for v in shown), shown
    assert not any("." in v for v in shown)
    # The charts' axes: 0,2 0,4 … (the decimal comma).
    assert any(re.fullmatch(r"0,\d", t) for t in ticks), ticks
    assert not any(re.fullmatch(r"0\.\d", t) for t in ticks), ticks
