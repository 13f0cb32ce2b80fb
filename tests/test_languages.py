"""A person's language in the store (set by an admin, chosen by the person, refused when the
app does not have it) and the study's own texts per language (each field falling back to the
study's own; a revised guideline falls back until translated again); their commands."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from data_schemas.errors import InputError
from data_schemas.scales import BINARY, RELATEDNESS_0_3
from data_schemas.texts import OptionText, StudyTexts
from medsim_annot.errors import UsageProblem
from medsim_annot.services import activity, drift
from medsim_annot.services import study_texts as texts_svc
from medsim_annot.services.people import adjudicators as adj_svc
from medsim_annot.services.people import admins, signin
from medsim_annot.services.people import language as svc
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.rating_queue import widget_setup
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine

PASSWORD = "a long enough admin password"


@pytest.fixture
def engine(backend_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    dispose_all()
    yield get_engine(backend_url)
    dispose_all()


def _study(engine, name="s", scale=BINARY, annotators=("ann", "bea")):
    pairs = pd.DataFrame(
        {"pair_id": ["p1", "p2"], "term_1": ["fever", "rash"], "term_2": ["pyrexia", "itch"]}
    )
    res = create_study(name, pairs, scale, list(annotators), engine=engine)
    return open_study(name, engine=engine), res


def _events(study, kind):
    log = activity.activity(study=study)
    return [json.loads(d) for d in log[log["action"] == kind]["detail"]]


# ------------------------------------------------------------------------ a person's language
def test_set_get_and_refuse_an_annotators_and_an_adjudicators_language(engine):
    study, _ = _study(engine)
    adj_svc.add_adjudicator(study, "judy")
    assert svc.annotator_language(study, "ann") is None
    assert svc.set_annotator_language(study, "ann", "de-AT") == "de"  # a tag: its language
    assert svc.annotator_language(study, "ann") == "de"
    assert svc.annotator_language(study, "bea") is None
    assert svc.set_adjudicator_language(study, "judy", "es") == "es"
    assert svc.adjudicator_language(study, "judy") == "es"
    assert svc.set_annotator_language(study, "bea", "qps-ploc") == "qps-ploc"  # tests' pseudo
    with pytest.raises(UsageProblem, match=r"'fr' is not a language of the app.*en, de, es"):
        svc.set_annotator_language(study, "ann", "fr")
    with pytest.raises(UsageProblem, match="no annotator named 'zed'"):
        svc.set_annotator_language(study, "zed", "de")
    assert svc.annotator_language(study, "ann") == "de"  # nothing changed by a refusal
    assert svc.set_annotator_language(study, "ann", "none") is None  # the browser's again
    assert svc.people_languages(study) == {
        "annotator": {"ann": None, "bea": "qps-ploc"},
        "adjudicator": {"judy": "es"},
    }
    events = _events(study, svc.EVENT)
    assert {"role": "annotator", "name": "ann", "language": "de", "own_choice": False} in events
    assert {"role": "adjudicator", "name": "judy", "language": "es", "own_choice": False} in events
    assert len(events) == 4  # the refusals left none


def test_an_admins_language_and_the_sign_in_reads_each_persons(engine):
    study, res = _study(engine)
    admins.add_admin("alice", password=PASSWORD, engine=engine)
    with pytest.raises(UsageProblem, match="no named admin 'bob'"):
        svc.set_admin_language("bob", "de", engine=engine)
    assert svc.set_admin_language("alice", "es", engine=engine) == "es"
    assert svc.admin_language("alice", engine=engine) == "es"
    alice = signin.sign_in_admin("alice", PASSWORD, client="t", engine=engine)
    assert alice is not None and svc.signed_in_language(alice, engine=engine) == "es"
    svc.set_annotator_language(study, "ann", "de")
    ann = authenticate_annotator(res["annotators"][0]["access_code"], engine=engine)
    assert ann is not None and svc.signed_in_language(ann, engine=engine) == "de"
    assert svc.annotator_language_by_id(ann.annotator_id, engine=engine) == "de"
    bea = authenticate_annotator(res["annotators"][1]["access_code"], engine=engine)
    assert bea is not None and svc.signed_in_language(bea, engine=engine) is None
    # The person's own choice is stored too (an admin without a row: session only).
    assert svc.choose_own_language(bea, "es", engine=engine)
    assert svc.annotator_language(study, "bea") == "es"
    assert not svc.choose_own_language(admins.AdminIdentity("admin", "named"), "de", engine=engine)
    own = [e for e in _events(study, svc.EVENT) if e["own_choice"]]
    assert own == [{"role": "annotator", "name": "bea", "language": "es", "own_choice": True}]


# ---------------------------------------------------------------------- the study's own texts
GERMAN = StudyTexts(
    question="Könnten diese beiden Begriffe austauschbar verwendet werden?",
    options={"same": OptionText(label="Gleich"), "not_same": OptionText(description="Nein.")},
)


def test_texts_fall_back_per_field_and_refuse_bad_input(engine):
    study, _ = _study(engine)
    texts_svc.set_texts(study, "de", GERMAN)
    scale = texts_svc.scale_in(study, "de")
    assert scale.question == GERMAN.question
    same, not_same, dont_know = scale.options
    assert (same.label, same.description) == ("Gleich", BINARY.options[0].description)
    assert (not_same.label, not_same.description) == ("Not same", "Nein.")
    assert (dont_know.label, dont_know.description) == (
        BINARY.options[2].label,
        BINARY.options[2].description,
    )
    assert [o.value for o in scale.options] == [o.value for o in BINARY.options]  # data stay
    assert texts_svc.guideline_in(study, "de") == study.guideline  # none given: the study's
    assert texts_svc.scale_in(study, "es") == study.scale  # no Spanish texts at all
    assert texts_svc.scale_in(study, "en") == study.scale
    # Bad input: nothing stored, the German texts stay.
    with pytest.raises(InputError, match=r"'maybe' is not a value of the binary scale"):
        texts_svc.set_texts(
            study, "de", StudyTexts(options={"maybe": OptionText(label="Vielleicht")})
        )
    with pytest.raises(UsageProblem, match="'xx' is not a language of the app"):
        texts_svc.set_texts(study, "xx", GERMAN)
    assert texts_svc.scale_in(study, "de").question == GERMAN.question
    assert texts_svc.text_languages(study) == ["de"]
    assert len(_events(study, texts_svc.EVENT)) == 1


def test_a_translated_guideline_holds_for_its_version_only(engine):
    study, _ = _study(engine, scale=RELATEDNESS_0_3)
    german = StudyTexts(
        guideline="### Wie verwandt sind diese beiden Begriffe?\n\nBewerten Sie 0 bis 3.",
        options={"2": OptionText(label="2 Verwandt")},  # a number's value, written as text
    )
    texts_svc.set_texts(study, "de", german)
    assert texts_svc.guideline_in(study, "de").startswith("### Wie verwandt")
    scale = texts_svc.scale_in(study, "de")
    assert scale.options[2].label == "2 Verwandt" and scale.options[1].label.startswith("1 ")
    drift.revise_guideline(study, "### Revised\n\nA clearer rule.", note="v2")
    study = study.reloaded()
    assert texts_svc.guideline_in(study, "de") == "### Revised\n\nA clearer rule."
    stored = texts_svc.stored_texts(study, "de")
    assert stored is not None and not stored.guideline_current
    assert (stored.guideline_version, stored.version_in_force) == (1, 2)
    assert texts_svc.scale_in(study, "de").options[2].label == "2 Verwandt"  # labels hold


def test_the_widget_setup_of_a_german_doctor_is_in_german(engine):
    study, res = _study(engine)
    texts_svc.set_texts(study, "de", GERMAN.model_copy(update={"guideline": "### Gleich?"}))
    ann = authenticate_annotator(res["annotators"][0]["access_code"], engine=engine)
    assert ann is not None
    setup = widget_setup(ann.annotator_id, credential=ann.credential_version, engine=engine)
    german = texts_svc.widget_setup_in(setup, study, "de")
    assert german.scale["question"] == GERMAN.question
    assert [o["label"] for o in german.scale["options"]] == ["Gleich", "Not same", "Don't know"]
    assert [o["key"] for o in german.scale["options"]] == ["1", "2", "3"]
    assert german.guideline == "### Gleich?" and german.total == setup.total
    assert texts_svc.widget_setup_in(setup, study, "en") == setup


# ----------------------------------------------------------------------------- the commands
def test_cli_lang_for_annotators_adjudicators_admins_and_study_texts(db_url, cli, tmp_path):
    engine = get_engine(db_url)
    study, _ = _study(engine)
    r = cli("annotator", "add", "s", "carl", "--lang", "de")
    assert r.exit_code == 0 and r.stdout.startswith("carl: ")
    assert svc.annotator_language(study, "carl") == "de"
    r = cli("annotator", "add", "s", "dora", "--lang", "fr")
    assert r.exit_code == 2 and "'fr' is not a language of the app" in r.stderr
    assert "dora" not in svc.people_languages(study)["annotator"]  # nobody was added
    assert cli("annotator", "language", "s", "carl", "es").stdout.strip() == "carl: es"
    assert cli("annotator", "language", "s", "carl").stdout.strip() == "carl: es"
    r = cli("adjudicator", "add", "s", "judy", "--lang", "es")
    assert r.exit_code == 0 and svc.adjudicator_language(study, "judy") == "es"
    assert (
        cli("adjudicator", "language", "s", "judy", "none").stdout.strip().startswith("judy: none")
    )
    admins.add_admin("alice", password=PASSWORD, engine=engine)
    assert cli("admin", "language", "alice", "de").stdout.strip() == "alice: de"
    assert cli("admin", "language", "nobody", "de").exit_code == 2

    good = tmp_path / "texts.yaml"
    good.write_text(
        yaml.safe_dump(
            {
                "question": "¿Podrían usarse indistintamente?",
                "options": {"same": {"label": "Igual"}},
            }
        ),
        encoding="utf-8",
    )
    r = cli("study", "texts", "s", "--lang", "es", "--file", good)
    assert r.exit_code == 0 and "stored the es texts of s" in r.stdout
    assert texts_svc.scale_in(study, "es").options[0].label == "Igual"
    bad = tmp_path / "bad.yaml"
    bad.write_text("options:\n  maybe: {label: Quizás}\nlabels: {}\n", encoding="utf-8")
    r = cli("study", "texts", "s", "--lang", "es", "--file", bad)
    assert r.exit_code == 2 and "bad.yaml" in r.stderr and "labels" in r.stderr
    r = cli("study", "texts", "s", "--lang", "fr", "--file", good)
    assert r.exit_code == 2 and "'fr' is not a language of the app" in r.stderr
    assert texts_svc.scale_in(study, "es").options[0].label == "Igual"  # nothing changed
    shown = json.loads(cli("study", "texts", "s", "--lang", "es", "--json").stdout)
    assert shown["question"] == "¿Podrían usarse indistintamente?"
    assert cli("study", "texts", "s").stdout.strip() == "es"
