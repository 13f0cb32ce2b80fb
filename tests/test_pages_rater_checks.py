"""AppTest: Study setup's rater checks (check pairs from the pairs file served at a rate, the
minimum accuracy and the rushed threshold, stored as the CLI stores them) and the dashboard's
table of check pairs, rushed answers and pace with its warning."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from medsim_annot.services import annotation as A
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import quality as quality_svc
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import authenticate_annotator, issue_code
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT
from tests.test_rater_checks import _pairs

TIMEOUT = 120


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    dispose_all()
    dsvc.clear_cache()
    yield db_url
    dispose_all()


def _page(path: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    return at.run()


def test_setup_then_dashboard(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _pairs().to_csv(tmp_path / "data" / "pairs.csv", index=False)
    at = _page("pages/setup.py")
    assert not at.exception, at.exception
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.text_input(key="setup_name").input("checked").run()
    at.checkbox(key="setup_check_use_rate").check().run()
    at.slider(key="setup_check_rate").set_value(0.1).run()
    at.slider(key="setup_check_min_accuracy").set_value(0.75).run()
    at.number_input(key="setup_rushed_ms").set_value(2000).run()
    at.text_area(key="setup_annotators").input("ann\nbob").run()
    sizes = next(d.value for d in at.dataframe if "checks" in d.value.columns)
    assert sizes["checks"].tolist() == [4, 4]
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    info = open_study("checked")
    assert info.config["quality"] == {
        "rushed_ms": 2000,
        "check_min_accuracy": 0.75,
        "check_tolerance": 0.0,
    }
    assert (
        info.config["check_rate"] == 0.1
        and len(quality_svc.check_answers(open_study("checked"))) == 6
    )

    # bob answers every check pair wrongly and fast; the dashboard warns about him.
    for name in ("ann", "bob"):
        ann_id = authenticate_annotator(issue_code(open_study("checked"), name)).annotator_id
        for p in range(A.queue_state(ann_id).total):
            v = A.get_pair(ann_id, p)
            value = "same"
            if v.term_1.startswith("fever"):
                right = "same" if int(v.term_1.split()[1]) % 2 == 0 else "not_same"
                wrong = "not_same" if right == "same" else "same"
                value = wrong if name == "bob" else right
            A.submit_rating(ann_id, p, value, elapsed_ms=500 if name == "bob" else 5000)
    at = _page("pages/dashboard.py")
    assert not at.exception, at.exception
    assert any("bob answered 0 of 4 check pairs" in w.value for w in at.warning)
    table = next(d.value for d in at.dataframe if "pairs_per_hour" in d.value.columns
                 and "n_rushed" in d.value.columns).set_index("annotator")  # fmt: skip
    assert table.loc["bob", "rushed_rate"] == 1.0 and table.loc["ann", "check_accuracy"] == 1.0
    assert table.loc["ann", "median_seconds"] == 5.0
    # The admin lowers the rushed threshold and drops the warning on the dashboard itself.
    at.number_input(key="dashboard_rushed_ms").set_value(400)
    at.slider(key="dashboard_check_min_accuracy").set_value(0.0)
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not at.exception, at.exception
    assert quality_svc.study_settings(open_study("checked")) == quality_svc.QualitySettings(
        rushed_ms=400
    )
    assert not any("check pairs correctly" in w.value for w in at.warning)
    table = next(d.value for d in at.dataframe if "n_rushed" in d.value.columns)
    assert table["n_rushed"].sum() == 0
