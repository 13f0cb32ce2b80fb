"""Issue 34 item 13: adjudicators see the raters as Rater A, B, C by default (stable per
study, in the order the annotators were added); a study setting shows names; the gold
manifest records which."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.errors import UnknownOptionError
from data_schemas.scales import BINARY
from medsim_annot.services.adjudication import rater_names
from medsim_annot.services.annotation import submit_rating
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.people import adjudicators, signin
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

DOCTORS = ["Zoe Adams", "Bob Brown", "Ann Clark"]  # added in this order: A, B, C


@pytest.fixture
def study(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "term_1": ["fever", "cough"],
            "term_2": ["pyrexia", "rash"],
            "auto_label": [0, 0],
        }
    )
    res = create_study("s", pairs, BINARY, DOCTORS)
    # The majority (same) differs from the automatic label: the pairs need a decision.
    for i, a in enumerate(res["annotators"]):
        ident = authenticate_annotator(a["access_code"])
        assert ident is not None
        value = "same" if i != 1 else "not_same"
        for pos in range(2):
            submit_rating(
                ident.annotator_id, pos, value, comment=f"note by {a['name']}", elapsed_ms=900
            )
    yield open_study("s")
    dispose_all()


def test_pseudonyms_are_letters_in_the_order_annotators_were_added(study):
    shown = rater_names.shown_names(study)
    assert shown == {"Zoe Adams": "Rater A", "Bob Brown": "Rater B", "Ann Clark": "Rater C"}
    assert rater_names.rater_names(study.config) == "pseudonymous"


def test_as_shown_hides_names_and_orders_by_letter():
    pair = {"raters": [{"annotator": n, "rating": "same"} for n in sorted(DOCTORS)]}
    shown = {n: rater_names.pseudonym(i) for i, n in enumerate(DOCTORS)}
    out = rater_names.as_shown(pair, shown)
    assert [r["annotator"] for r in out["raters"]] == ["Rater A", "Rater B", "Rater C"]
    assert not any(n in json.dumps(out) for n in DOCTORS)


def _adjudicate_page(study) -> AppTest:
    out = adjudicators.add_adjudicator(study, "judge")
    judge = signin.sign_in_with_code(out.access_code, client="test")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["auth_role"] = "adjudicator"
    at.session_state["auth_identity"] = judge
    at.run()
    assert not at.exception, at.exception
    return at


def _sent_to_the_widget(at: AppTest) -> str:
    return json.dumps([str(e.proto) for e in at.get("bidi_component")] or [str(at._tree)])


def test_the_adjudicator_sees_rater_letters_not_names_by_default(study):
    at = _adjudicate_page(study)
    sent = _sent_to_the_widget(at)
    assert "Rater A" in sent and "Rater B" in sent and "Rater C" in sent
    for name in ("Zoe Adams", "Bob Brown", "Ann Clark"):
        assert name not in sent.replace("note by " + name, ""), name


def test_a_study_can_show_names_and_the_manifest_records_it(study, tmp_path):
    rater_names.set_rater_names(study, "named")
    study = open_study("s")
    at = _adjudicate_page(study)
    sent = _sent_to_the_widget(at)
    assert "Zoe Adams" in sent.replace("note by Zoe Adams", "") and "Rater A" not in sent
    res = export_gold(study, tmp_path / "gold.csv")
    assert res.manifest["adjudication"]["rater_names"] == "named"
    rater_names.set_rater_names(study, "pseudonymous")
    res = export_gold(open_study("s"), tmp_path / "gold2.csv")
    assert res.manifest["adjudication"]["rater_names"] == "pseudonymous"


def test_an_unknown_setting_is_refused(study):
    with pytest.raises(UnknownOptionError, match="rater names must be"):
        rater_names.set_rater_names(study, "initials")


def test_cli_sets_and_prints_the_setting(study, cli):
    assert cli("adjudicator", "rater-names", "s").stdout.strip() == "pseudonymous"
    assert cli("adjudicator", "rater-names", "s", "named").exit_code == 0
    assert cli("adjudicator", "rater-names", "s").stdout.strip() == "named"
    assert cli("adjudicator", "rater-names", "s", "initials").exit_code == 2
