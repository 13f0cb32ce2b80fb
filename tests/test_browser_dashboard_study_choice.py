"""A study picked right after the Dashboard loads is the study whose figures it shows (issue
38, section 1), in chromium.

The Dashboard's first run of a page view draws no chart; the browser's paint report, a
rerun, draws them (pages/_charts.py). When that report was a fragment's rerun, one reaching
the server just as a run ended made Streamlit drop the rest of that run: an admin who picked
a study just after the page loaded saw the picker on the new study and the headline figures
of the old one (tests/test_browser_first_day_numbers.py failed 1 run in 12 so).

Here, in one server, a fresh session each round (each is a new page view with its own paint
report) opens the Dashboard and picks the first-day study after a delay that sweeps the
moments around the report (from at once to after the charts came), then picks the default
study back; every time, once the page has settled, the headline's "Rated pairs" must be the
picked study's and the picker must name it.

Skipped when /usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from medsim_annot.services import studies as studies_svc
from medsim_annot.storage import dispose_all, get_engine
from tests.conftest import ROOT
from tests.streamlit_harness import (
    chromium,
    require_chromium,
    settled,
    sign_in_admin,
    streamlit_server,
)
from tests.test_dashboard_headline import STUDY as FIRST_DAY
from tests.test_dashboard_headline import make_first_day

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PASSWORD = "browser-study-choice-pw"
#: The first-day study's headline (tests/test_dashboard_headline.py, computed there by hand).
FIRST_DAY_RATED = "1 / 15"
#: Milliseconds between the Dashboard's heading showing and the admin's pick, one round
#: each: at once, while the first run ends, about when the paint report leaves, after it.
DELAYS_MS = (0, 0, 50, 100, 150, 200, 300, 400, 600, 800, 1200, 2000)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    tmp = tmp_path_factory.mktemp("browser_study_choice")
    url = f"sqlite:///{tmp / 'medsim.db'}"
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": url,
        "MEDSIM_ADMIN_PASSWORD": PASSWORD,
        "PYTHONPATH": str(ROOT),
    }
    subprocess.run(
        [sys.executable, "-m", "medsim_annot", "demo"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=180,
    )
    make_first_day(get_engine(url))
    default = studies_svc.list_studies(engine=get_engine(url))[0].study  # the picker's first
    dispose_all()
    with streamlit_server(env, tmp / "streamlit.log") as base:
        yield base, default


def _rated(page) -> str:
    metric = page.get_by_test_id("stMetric").filter(has_text="Rated pairs").first
    metric.wait_for(timeout=60000)
    return metric.get_by_test_id("stMetricValue").inner_text()


def _picked(page) -> str:
    """The study the picker shows (the value of its combobox)."""
    return page.locator(".st-key-dashboard_study").get_by_role("combobox").input_value()


def _calm(page) -> None:
    """Settled, and still settled a moment later (a paint report's rerun may start late)."""
    for _ in range(2):
        page.wait_for_timeout(600)
        settled(page, 120000)


def _pick(page, study: str) -> None:
    page.locator(".st-key-dashboard_study").get_by_role("combobox").click()
    page.get_by_role("option", name=study, exact=True).click()


def _shows(page, study: str, other: str) -> bool:
    """Whether the picker names *study* (and not *other*)."""
    text = _picked(page)
    return study in text and other not in text


def test_a_study_picked_right_after_the_load_is_the_one_shown(server):
    server, default = server
    with chromium() as browser:
        # The default study's headline, from a page left alone (no pick to race).
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        sign_in_admin(page, server, PASSWORD, timeout=60000)
        page.get_by_test_id("stSidebarNav").get_by_text("Dashboard", exact=True).click()
        page.get_by_role("heading", name="QA dashboard").wait_for(timeout=60000)
        _calm(page)
        assert _shows(page, default, FIRST_DAY), _picked(page)
        default_rated = _rated(page)
        page.context.close()
        assert default != FIRST_DAY and default_rated != FIRST_DAY_RATED

        wrong = []
        for delay in DELAYS_MS:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            sign_in_admin(page, server, PASSWORD, timeout=60000)
            page.get_by_test_id("stSidebarNav").get_by_text("Dashboard", exact=True).click()
            page.locator(".st-key-dashboard_study").get_by_role("combobox").wait_for(timeout=60000)
            if delay:
                page.wait_for_timeout(delay)
            _pick(page, FIRST_DAY)
            _calm(page)
            shown = (_shows(page, FIRST_DAY, default), _rated(page))
            if shown != (True, FIRST_DAY_RATED):
                wrong.append((delay, "first pick", shown))
            _pick(page, default)
            _calm(page)
            shown = (_shows(page, default, FIRST_DAY), _rated(page))
            if shown != (True, default_rated):
                wrong.append((delay, "picked back", shown))
            assert page.get_by_test_id("stException").count() == 0
            page.context.close()
    assert not wrong, (
        f"headline not the picked study's (delay ms, when, (picker right, rated)): {wrong}"
    )
