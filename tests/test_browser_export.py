"""Real-browser test: the admin signs in, opens Export, prepares a gold export and
downloads the file and its manifest; both match ``medsim export gold`` run on the same
database (the file byte for byte, the manifest except for the export time).

Playwright drives Debian's chromium (launch arguments and server fixture as in
tests/test_browser_annotate.py). Skipped when /usr/bin/chromium is missing, unless
MEDSIM_REQUIRE_BROWSER=1 (CI), which makes a missing browser a failure.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from medsim_annot.services.demo import seed_demo
from medsim_annot.storage import dispose_all, get_engine
from tests.conftest import ROOT
from tests.streamlit_harness import choose_study, chromium, sign_in_admin

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: This module's copy of the demo's studies in the shared server's store.
STUDY = "export-demo-binary"


@pytest.fixture(scope="module")
def server(served_app, tmp_path_factory):
    """The run's shared app server (tests/conftest.py ``served_app``); this module's
    studies there are the demo's, named export-demo-binary and export-demo-relatedness."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEDSIM_ADMIN_PASSWORD", served_app["password"])  # no demo password set
        made = seed_demo(
            only_if_empty=False,
            engine=get_engine(served_app["url"]),
            names=(STUDY, "export-demo-relatedness"),
        )
    dispose_all()
    assert made["studies"][0]["study"] == STUDY, made["studies"][0]
    tmp = tmp_path_factory.mktemp("browser_export")
    return {**served_app, "tmp": tmp}


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _sign_in_admin(page, server) -> None:
    sign_in_admin(page, server["base"], server["password"], timeout=30000)


def test_admin_downloads_gold_export_matching_cli(server, browser):
    tmp = server["tmp"]
    page = browser.new_context(accept_downloads=True).new_page()
    _sign_in_admin(page, server)
    page.get_by_test_id("stSidebarNav").get_by_text("Export", exact=True).click()
    page.get_by_role("heading", name="Gold export").wait_for(timeout=30000)
    choose_study(page, "export_study", STUDY)
    page.get_by_role("radio", name="A majority", exact=True).check(force=True)
    page.get_by_role("button", name="Prepare export").click()
    page.get_by_text("96 of 120 pairs ready").wait_for(timeout=60000)
    # Download names carry a random part per session, so a link cannot be guessed from the content.
    name_re = re.compile(r"^Download gold-export-demo-binary-[0-9a-f]{16}\.csv$")
    with page.expect_download(timeout=30000) as dl:
        page.get_by_role("button", name=name_re).click()
    assert re.fullmatch(r"gold-export-demo-binary-[0-9a-f]{16}\.csv", dl.value.suggested_filename)
    browser_file = tmp / "browser-gold.csv"
    dl.value.save_as(browser_file)
    with page.expect_download(timeout=30000) as dl:
        page.get_by_role(
            "button",
            name=re.compile(r"^Download gold-export-demo-binary-[0-9a-f]{16}\.csv\.manifest"),
        ).click()
    browser_manifest = tmp / "browser-gold.manifest.json"
    dl.value.save_as(browser_manifest)

    cli_file = tmp / "gold-export-demo-binary.csv"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "medsim_annot",
            "export",
            "gold",
            STUDY,
            "--out",
            str(cli_file),
            "--require-majority",
            "--min-ratings",
            "1",  # the page's default (the CLI has no minimum unless given one)
        ],
        cwd=ROOT,
        env=server["env"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert browser_file.read_bytes() == cli_file.read_bytes()
    ours = json.loads(browser_manifest.read_text(encoding="utf-8"))
    theirs = json.loads(
        (tmp / "gold-export-demo-binary.csv.manifest.json").read_text(encoding="utf-8")
    )
    assert ours["sha256"] == theirs["sha256"]
    assert ours.pop("exported_at") and theirs.pop("exported_at")
    assert ours.pop("file") == dl.value.suggested_filename.removesuffix(".manifest.json")
    assert theirs.pop("file") == "gold-export-demo-binary.csv"
    assert ours == theirs
    assert ours["counts"]["exported"] == 96


def test_admin_sees_the_dashboard(server, browser):
    page = browser.new_context().new_page()
    _sign_in_admin(page, server)
    page.get_by_test_id("stSidebarNav").get_by_text("Dashboard", exact=True).click()
    page.get_by_role("heading", name="QA dashboard").wait_for(timeout=30000)
    choose_study(page, "dashboard_study", STUDY)
    page.get_by_role("heading", name="Automatic labels vs majority").wait_for(timeout=60000)
    # Completion is a table (names as text, never markdown that could become a link).
    page.get_by_test_id("stDataFrame").first.wait_for(timeout=30000)
    assert page.get_by_test_id("stMarkdownContainer").filter(has_text="dr_ahmed: 100").count() == 0
    page.get_by_role("heading", name="Disagreement explorer").wait_for(timeout=30000)
    charts = page.get_by_test_id("stPlotlyChart")
    charts.first.wait_for(timeout=60000)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stPlotlyChart\"]').length >= 4",
        timeout=60000,
    )
    assert page.get_by_test_id("stException").count() == 0
