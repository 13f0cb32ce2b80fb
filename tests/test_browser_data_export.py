"""Real browser: a table's toolbar offers no CSV download of its own (that download writes
cells unescaped, so a doctor's comment ``=HYPERLINK(...)`` would run as a formula in a
spreadsheet); the app's escaped download buttons are the only way out. Skipped without
/usr/bin/chromium unless MEDSIM_REQUIRE_BROWSER=1."""

from __future__ import annotations

import os
import tomllib

import pytest

from tests.conftest import ROOT
from tests.streamlit_harness import chromium, require_chromium, start_streamlit

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SCRIPT = """
import pandas as pd
import streamlit as st

st.dataframe(pd.DataFrame({"comment": ['=HYPERLINK("http://evil.example","x")', "ok"]}),
             key="comments")
"""


def test_the_app_config_switches_off_the_table_export():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["disableDataExport"] is True


def test_dataframe_toolbar_has_no_csv_download(tmp_path):
    require_chromium()
    script = tmp_path / "table.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Run from the project folder, so its .streamlit/config.toml applies as in the app.
    proc, base = start_streamlit(env, tmp_path / "streamlit.log", script=str(script))
    try:
        with chromium() as browser:
            page = browser.new_page()
            page.goto(base + "/")
            table = page.get_by_test_id("stDataFrame")
            table.wait_for(timeout=60000)
            table.hover()
            toolbar = page.get_by_test_id("stElementToolbar")
            toolbar.first.wait_for(state="attached", timeout=30000)
            # The toolbar's actions are drawn together: once its search button is there, a
            # CSV download would be too.
            toolbar.first.get_by_role("button").first.wait_for(timeout=30000)
            names = [
                b.get_attribute("aria-label") or b.inner_text()
                for b in toolbar.first.get_by_role("button").all()
            ]
            assert names, "the table toolbar shows no action at all"
            assert page.get_by_role("button", name="Download as CSV").count() == 0
            assert page.get_by_label("Download as CSV").count() == 0
    finally:
        proc.terminate()
        proc.wait(10)
