"""A setting outside its allowed values on a page: the page shows the service's message,
which names the setting (never a command-line flag), and keeps running."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

TIMEOUT = 30


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def test_setup_shows_a_setting_out_of_range_by_its_name(db, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame(
        {"term_1": [f"a{i}" for i in range(6)], "term_2": [f"b{i}" for i in range(6)]}
    ).to_csv(data / "pairs.csv", index=False)
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(str(ROOT / "pages/setup.py"), default_timeout=TIMEOUT)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "admin"
    at.run()
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").set_value("data/pairs.csv").run()
    at.text_input(key="setup_name").input("too-many").run()
    at.radio(key="setup_design").set_value(
        "Each pair rated by k of the n annotators (balanced)"
    ).run()
    at.number_input(key="setup_k").set_value(5).run()  # more than the two annotators
    at.text_area(key="setup_annotators").input("d1\nd2").run()
    assert not at.exception
    shown = " ".join(e.value for e in at.error).replace("\\", "")  # markdown escapes
    assert "annotators per pair (per_item) must be a whole number between 1 and 2" in shown
    assert "--" not in shown
    assert at.button(key="setup_create").disabled
