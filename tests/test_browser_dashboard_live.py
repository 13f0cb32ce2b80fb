"""The Dashboard's "Refresh every 30 s" (issue 32, bug 1), in chromium: with the live refresh
on, a rating saved through the ratings endpoint shows in the completion table once the
refresh interval has passed, without a click. (The refresh's fragment had drifted onto the
rater-check settings form, so the completion table was never re-read.)

The page runs on Playwright's clock (``page.clock``): Streamlit's frontend schedules the
fragment's reruns with ``setInterval``, so moving the page's clock 31 s forward fires the
product's own 30 s timer once, without waiting half a minute of real time. Served by the
run's shared app (tests/conftest.py ``served_app``; the study is named ``dash-live`` and
chosen in the page's study picker).

Playwright drives Debian's chromium (tests/streamlit_harness.py). Skipped when
/usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import time

import httpx
import pandas as pd
import pytest

from data_schemas.scales import BINARY
from data_schemas.widget import RATINGS_PATH
from medsim_annot.services.people import tokens
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.storage import dispose_all, get_engine
from tests.streamlit_harness import chromium, sign_in_admin

pytestmark = [pytest.mark.slow, pytest.mark.browser]

STUDY = "dash-live"
#: The refresh interval of the page (30 s) and a second more: how far the page's clock moves.
INTERVAL_MS = 31_000
#: Real seconds the refreshed table may take to arrive once the interval has passed.
WITHIN_S = 30.0


CELLS = """(grid) => [...grid.querySelectorAll('[role="row"]')].map(
  (row) => [...row.querySelectorAll('[role="gridcell"], [role="columnheader"]')].map(
    (cell) => (cell.textContent || '').trim()))"""


def _completion_rows(page) -> list[list[str]]:
    """The completion table (the first table of the page) as its cells' text, read from the
    grid's accessible table."""
    return page.locator('[data-testid="stDataFrame"]').first.evaluate(CELLS)


def _done_of(page, annotator: str) -> str | None:
    """The "done" cell of *annotator*'s row in the completion table, or None."""
    rows = _completion_rows(page)
    if not rows or "done" not in rows[0]:
        return None
    col = rows[0].index("done")
    for cells in rows[1:]:
        if annotator in cells and len(cells) > col:
            return cells[col]
    return None


def test_live_refresh_shows_a_new_rating_without_a_click(served_app):
    url = served_app["url"]
    eng = get_engine(url)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(6)],
            "term_1": [f"fever {i}" for i in range(6)],
            "term_2": [f"pyrexia {i}" for i in range(6)],
        }
    )
    res = create_study(STUDY, pairs, BINARY, ["ann", "bob"], engine=eng)
    code = next(a["access_code"] for a in res["annotators"] if a["name"] == "ann")
    ann = authenticate_annotator(code, engine=eng)
    token = tokens.mint_token(ann.annotator_id, ann.credential_version, engine=eng).token
    dispose_all()
    base = served_app["base"]
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.clock.install()  # time flows as usual until the test moves it on
        sign_in_admin(page, base, served_app["password"], timeout=60000)
        page.get_by_test_id("stSidebarNav").get_by_text("Dashboard", exact=True).click()
        page.get_by_role("heading", name="QA dashboard").wait_for(timeout=60000)
        page.locator(".st-key-dashboard_study").get_by_role("combobox").click()
        page.get_by_role("option", name=STUDY, exact=True).click()
        page.get_by_text("No ratings yet").first.wait_for(timeout=60000)
        deadline = time.monotonic() + 30
        while _done_of(page, "ann") != "0" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _done_of(page, "ann") == "0", _completion_rows(page)
        page.get_by_test_id("stCheckbox").filter(has_text="Refresh every 30 s").first.click()
        page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=60000)
        time.sleep(1.0)  # the run the switch started is over: what follows is the refresh

        # A rating saved through the endpoint, as the annotation widget saves it: the pairs
        # are fetched first (the endpoint takes a rating only of a pair it served).
        served = httpx.post(
            base + RATINGS_PATH,
            json={"need": -1},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert served.status_code == 200 and served.json()["window"], served.text
        entry = {"seq": 1, "position": 0, "value": "same", "elapsed_ms": 3000, "version": 0}
        r = httpx.post(
            base + RATINGS_PATH,
            json={"pending": [entry]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert r.status_code == 200 and r.json()["versions"] == {"1": 1}, r.text
        assert _done_of(page, "ann") == "0", "the table changed before the refresh was due"
        page.clock.fast_forward(INTERVAL_MS)  # the refresh interval passes; no click
        saved = time.monotonic()
        while time.monotonic() - saved < WITHIN_S and _done_of(page, "ann") != "1":
            time.sleep(0.5)
        shown = _done_of(page, "ann")
        waited = time.monotonic() - saved
        rows = _completion_rows(page)
        # The HTML report (a deferred download, behind the role guard) is still built.
        with page.expect_download(timeout=60000) as download:
            page.get_by_role("button", name="Download the HTML report").click()
        report = download.value.path().read_text(encoding="utf-8")
    assert "<html" in report.lower()
    assert shown == "1", (
        f"the completion table still shows {shown!r} done for ann {waited:.0f} s after the "
        f"refresh interval passed on the page's clock (live refresh on, no click): {rows}"
    )
