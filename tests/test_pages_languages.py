"""A person's language on the pages (AppTest): the sign-in puts the stored language in the
session, which beats the browser's; the sidebar choice takes effect at once and is stored;
the Annotate widget and the Adjudicate page get the study's texts in the page's language;
Study setup sets a person's language and the study's texts, in German and pseudo-localised."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.adjudicator_widget import AdjudicatorData
from data_schemas.scales import BINARY
from data_schemas.texts import OptionText, StudyTexts
from data_schemas.widget import WidgetBoot
from medsim_annot import i18n
from medsim_annot.i18n.pseudo import is_pseudo
from medsim_annot.services import study_texts as texts_svc
from medsim_annot.services.people import adjudicators as adj_svc
from medsim_annot.services.people import admins
from medsim_annot.services.people import language as language_svc
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from pages import _i18n, _languages
from pages._i18n import LANGUAGE_KEY
from tests.conftest import ROOT

TIMEOUT = 60
PASSWORD = "apptest-admin-password"
GERMAN = StudyTexts(
    question="Könnten diese beiden Begriffe austauschbar verwendet werden?",
    guideline="### Sind diese Begriffe gleich?\n\nUrteilen Sie nach Ihrer klinischen Lesart.",
    options={
        "same": OptionText(label="Gleich", description="Die Begriffe bedeuten dasselbe."),
        "not_same": OptionText(label="Nicht gleich"),
        "dont_know": OptionText(label="Weiß nicht"),
    },
)


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    dispose_all()
    yield db_url
    dispose_all()


def _study(name="s", annotators=("ann", "bea")):
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(4)],
            "term_1": [f"fever {i}" for i in range(4)],
            "term_2": [f"pyrexia {i}" for i in range(4)],
        }
    )
    res = create_study(name, pairs, BINARY, list(annotators))
    return open_study(name), {a["name"]: a["access_code"] for a in res["annotators"]}


def _app(locale: str = "en-US") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.context = {"locale": locale}
    return at


def _sign_in_with_code(code: str, locale: str = "en-US") -> AppTest:
    at = _app(locale).run()
    at.text_input(key="login_code").input(code)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def _sign_in_as_admin(name: str) -> AppTest:
    at = _app().run()
    at.toggle(key="login_admin_open").set_value(True).run()
    at.text_input(key="login_admin_name").input(name)
    at.text_input(key="login_password").input(PASSWORD)
    at.button[1].click().run()
    assert not at.exception, at.exception
    return at


def _selector(at: AppTest):
    return at.selectbox(key=_languages.SELECTOR)


def test_a_german_doctor_with_an_english_browser_gets_german(db):
    study, codes = _study()
    language_svc.set_annotator_language(study, "ann", "de")
    at = _sign_in_with_code(codes["ann"], locale="en-US")
    assert at.session_state["auth_role"] == "annotator"
    assert at.session_state[LANGUAGE_KEY] == "de"  # the profile's, not the browser's
    assert _selector(at).label == "Sprache" and _selector(at).value == "de"
    # Bea has none: her pages follow the browser (Spanish here), then English.
    at = _sign_in_with_code(codes["bea"], locale="es-ES")
    assert LANGUAGE_KEY not in at.session_state
    assert _selector(at).label == "Idioma" and _selector(at).value == _languages.BROWSER
    at = _sign_in_with_code(codes["bea"], locale="en-US")
    assert _selector(at).label == "Language"


def test_an_admin_and_an_adjudicator_sign_in_to_their_stored_language(db, monkeypatch):
    study, _ = _study()
    admins.add_admin("alice", password=PASSWORD)
    language_svc.set_admin_language("alice", "es")
    at = _sign_in_as_admin("alice")
    assert at.session_state["auth_role"] == "admin" and at.session_state[LANGUAGE_KEY] == "es"
    assert _selector(at).label == "Idioma"
    judy = adj_svc.add_adjudicator(study, "judy")
    language_svc.set_adjudicator_language(study, "judy", "de")
    at = _sign_in_with_code(judy.access_code)
    assert at.session_state["auth_role"] == "adjudicator"
    assert at.session_state[LANGUAGE_KEY] == "de"


def _boot(at: AppTest) -> WidgetBoot:
    return WidgetBoot.model_validate(json.loads(at.get("bidi_component")[0].proto.json))


def test_the_sidebar_choice_takes_effect_at_once_and_persists(db, monkeypatch):
    # (AppTest drops what app.py drew in the sidebar from a run's tree once the run reruns,
    # so each choice is made on the run right after a sign-in.)
    study, codes = _study()
    texts_svc.set_texts(study, "es", StudyTexts(options={"same": OptionText(label="Igual")}))
    at = _sign_in_with_code(codes["bea"])
    assert _selector(at).label == "Language" and _boot(at).scale.options[0].label == "Same"
    _selector(at).set_value("es").run()
    assert not at.exception, at.exception
    assert at.session_state[LANGUAGE_KEY] == "es"
    assert _boot(at).scale.options[0].label == "Igual"  # this very run
    assert language_svc.annotator_language(study, "bea") == "es"
    # The next sign-in, with a German browser, starts in Spanish.
    at = _sign_in_with_code(codes["bea"], locale="de-DE")
    assert at.session_state[LANGUAGE_KEY] == "es" and _selector(at).label == "Idioma"
    # Back to the browser's language: stored as none. (AppTest formats the options again in
    # the test's own thread: it must see the language and browser the page saw.)
    with monkeypatch.context() as patch, i18n.language("es"):
        patch.setattr(_i18n, "browser_language", lambda: "de")
        _selector(at).set_value(_languages.BROWSER).run()
    assert LANGUAGE_KEY not in at.session_state
    assert language_svc.annotator_language(study, "bea") is None
    # An admin's choice: the page they are on turns German at once, and it is stored.
    admins.add_admin("alice", password=PASSWORD)
    at = _sign_in_as_admin("alice")
    assert "Languages" in [h.value for h in at.subheader]
    _selector(at).set_value("de").run()
    assert not at.exception, at.exception
    assert "Sprachen" in [h.value for h in at.subheader]
    assert language_svc.admin_language("alice") == "de"


def test_the_widget_boot_of_a_german_doctor_carries_the_german_texts(db):
    study, codes = _study()
    texts_svc.set_texts(study, "de", GERMAN)
    language_svc.set_annotator_language(study, "ann", "de")
    at = _sign_in_with_code(codes["ann"])
    boot = _boot(at)
    assert boot.scale.question == GERMAN.question
    assert [o.label for o in boot.scale.options] == ["Gleich", "Nicht gleich", "Weiß nicht"]
    assert boot.scale.options[0].description == "Die Begriffe bedeuten dasselbe."
    assert boot.scale.options[1].description == BINARY.options[1].description  # falls back
    assert [o.key for o in boot.scale.options] == ["1", "2", "3"]  # keys unchanged
    assert [o.value for o in boot.scale.options] == ["same", "not_same", "dont_know"]
    assert any("Sind diese Begriffe gleich?" in m.value for m in at.markdown)
    # An English doctor of the same study sees the study's own texts.
    at = _sign_in_with_code(codes["bea"])
    boot = _boot(at)
    assert [o.label for o in boot.scale.options] == ["Same", "Not same", "Don't know"]


def test_the_adjudicate_page_shows_the_labels_in_the_page_language(db):
    study, _ = _study()
    texts_svc.set_texts(study, "es", StudyTexts(options={"same": OptionText(label="Igual")}))
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=TIMEOUT)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity(name="Dr Lead", via="named")
    at.session_state[LANGUAGE_KEY] = "es"
    at.run()
    assert not at.exception, at.exception
    data = AdjudicatorData.model_validate(json.loads(at.get("bidi_component")[0].proto.json))
    assert data.labels == {"same": "Igual", "not_same": "Not same", "dont_know": "Don't know"}


def _setup(lang: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "setup.py"), default_timeout=TIMEOUT)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "admin"
    at.session_state[LANGUAGE_KEY] = lang
    return at.run()


def _people_table(at: AppTest) -> pd.DataFrame:
    """The languages section's table of people (AppTest keeps no key of a dataframe): the
    one whose first column holds the study's people."""
    for frame in at.dataframe:
        value = frame.value
        if len(value.columns) == 3 and set(value.iloc[:, 0]) >= {"ann", "bea"}:
            return value
    raise AssertionError("no table of people's languages")


def _section_texts(at: AppTest, study_id: int) -> list[str]:
    """Every visible text of the languages section of Study setup (its own widgets by key)."""
    # The section is the last of the page: its heading and its expander come last.
    texts = [at.subheader[-1].value, at.expander[-1].label, at.caption[-1].value]
    mine = ("setup_lang_", f"setup_texts_{study_id}_", f"setup_texts_language_{study_id}")
    for kind in ("selectbox", "text_input", "text_area"):
        texts += [w.label for w in getattr(at, kind) if (w.key or "").startswith(mine)]
    texts += [w.placeholder for w in at.selectbox if (w.key or "").startswith(mine)]
    table = _people_table(at)
    texts += list(table.columns) + list(table.iloc[:, 1])
    return texts


def test_setup_sets_a_language_and_the_texts_in_german(db):
    study, _ = _study()
    at = _setup("de")
    assert not at.exception, at.exception
    assert "Sprachen" in [h.value for h in at.subheader]
    table = _people_table(at)
    assert list(table.columns) == ["Person", "Rolle", "Sprache"]
    assert list(table["Sprache"]) == ["Sprache des eigenen Browsers"] * 2
    with i18n.language("de"):  # AppTest formats the options again in the test's thread
        at.selectbox(key="setup_lang_person").set_value(1)
        at.selectbox(key="setup_lang_code").set_value("es")
        at.button[[b.label for b in at.button].index("Sprache festlegen")].click().run()
    assert not at.exception, at.exception
    assert any("Sprache von bea auf Español gesetzt." in s.value for s in at.success)
    assert language_svc.annotator_language(study, "bea") == "es"
    assert list(_people_table(at)["Sprache"]) == ["Sprache des eigenen Browsers", "Español"]
    # The study's German texts: one field per text.
    key = f"setup_texts_{study.id}_de"
    at.text_input(key=f"{key}_question").input(GERMAN.question)
    at.text_input(key=f"{key}_label_same").input("Gleich")
    at.text_area(key=f"{key}_guideline").input(GERMAN.guideline)
    with i18n.language("de"):
        at.button[[b.label for b in at.button].index("Texte speichern (Deutsch)")].click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Texte gespeichert (Deutsch).") for s in at.success)
    scale = texts_svc.scale_in(study, "de")
    assert scale.question == GERMAN.question and scale.options[0].label == "Gleich"
    assert scale.options[1].label == "Not same"
    assert texts_svc.guideline_in(study, "de") == GERMAN.guideline


def _without(text: str, data: list[str]) -> str:
    for word in data:
        text = text.replace(word, "")
    return text


def test_setup_languages_section_is_pseudo_localised(db):
    study, _ = _study()
    adj_svc.add_adjudicator(study, "judy")
    at = _setup("qps-ploc")
    assert not at.exception, at.exception
    texts = _section_texts(at, study.id)
    assert len(texts) > 10
    # Data by rule: the people's names and the scale's option values.
    data = sorted({"ann", "bea", "judy", *(str(o.value) for o in BINARY.options)}, key=len)
    escaped = [x for x in texts if not is_pseudo(_without(x, data[::-1]))]
    assert not escaped, escaped
