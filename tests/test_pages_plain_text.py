"""Texts from an uploaded file or a user reach Study setup's messages as plain text: a group
value written as markdown (an image beacon, a phishing link) shows as typed."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

BEACON = "![x](http://evil.example/beacon.png)"
PHISH = "[re-enter your password](http://evil.example/login)"


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    dispose_all()
    yield db_url
    dispose_all()


def _rendered_markdown(at: AppTest) -> list[str]:
    out = []
    for kind in ("warning", "error", "success", "info", "caption", "markdown"):
        out += [e.value for e in getattr(at, kind)]
    return out


def test_sampling_warnings_quote_file_values_as_plain_text(db, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame(
        {
            "term_1": [f"a{i}" for i in range(6)],
            "term_2": [f"b{i}" for i in range(6)],
            "auto_label": [1, 0, 1, 0, 1, 1],
            "dataset": [BEACON] * 3 + [PHISH] * 3,
        }
    ).to_csv(data / "pairs.csv", index=False)
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(str(ROOT / "pages" / "setup.py"), default_timeout=60)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    at.run()
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").set_value("data/pairs.csv").run()
    at.text_input(key="setup_name").input("s").run()
    at.radio(key="setup_sampling").set_value("Stratified sample per group").run()
    at.number_input(key="setup_pos").set_value(2).run()
    at.number_input(key="setup_neg").set_value(2).run()
    at.multiselect(key="setup_group_by").set_value(["dataset"]).run()
    at.checkbox(key="setup_allow_fewer").check().run()
    at.text_area(key="setup_annotators").input("d1").run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("evil" in w for w in warnings), warnings  # the warning quotes the value...
    for text in _rendered_markdown(at):
        # ...but no markdown link or image survives: every bracket and parenthesis escaped
        assert BEACON not in text and PHISH not in text and "](http" not in text, text


def test_adjudicate_page_shows_study_and_adjudicator_names_as_typed(db, monkeypatch):
    """Issue 34 item 10: the Adjudicate page's caption quoted the study and adjudicator names
    as markdown; an imported name like ``![x](http://…)`` loaded an outside image."""
    from data_schemas.scales import BINARY
    from medsim_annot.services.people import adjudicators, signin
    from medsim_annot.services.studies import create_study
    from medsim_annot.services.study_handle import open_study

    monkeypatch.syspath_prepend(str(ROOT))
    study_name = "![y](beacon)"
    pairs = pd.DataFrame({"pair_id": ["p1", "p2"], "term_1": ["a", "b"], "term_2": ["c", "d"]})
    create_study(study_name, pairs, BINARY, ["d1", "d2"])
    out = adjudicators.add_adjudicator(open_study(study_name), BEACON)
    judge = signin.sign_in_with_code(out.access_code, client="test")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["auth_role"] = "adjudicator"
    at.session_state["auth_identity"] = judge
    at.run()
    assert not at.exception, at.exception
    texts = _rendered_markdown(at)
    assert any("evil" in t for t in texts), texts  # the name is shown...
    for text in texts:
        # ...as typed: no image or link survives
        assert BEACON not in text and study_name not in text and "](http" not in text, text
