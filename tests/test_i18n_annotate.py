"""The sign-in page, the Annotate page and the ratings endpoint in the person's language:
German (texts and number formats) and the pseudo language (every visible text came through
the catalogue; the study's data — names, terms, the guideline, the scale's labels — are
excepted by rule: they are read from the store, not listed here)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from data_schemas.widget import MAX_BODY_BYTES, RATINGS_PATH, WidgetBoot
from medsim_annot import i18n, ratings_api
from medsim_annot.i18n.pseudo import is_pseudo
from medsim_annot.services.people import tokens
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.people.throttle import ThrottledError
from medsim_annot.services.rating_queue import widget_setup
from medsim_annot.services.studies import create_study
from medsim_annot.storage import dispose_all
from pages._i18n import LANGUAGE_KEY
from tests.conftest import ROOT

TIMEOUT = 30


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def _study(n=4):
    pairs = pd.DataFrame(
        {
            "pair_id": [f"P{i}" for i in range(n)],
            "term_1": [f"first {i}" for i in range(n)],
            "term_2": [f"second {i}" for i in range(n)],
        }
    )
    res = create_study("lang", pairs, BINARY, ["Dr Weiss"])
    return authenticate_annotator(res["annotators"][0]["access_code"])


def _texts(at) -> list[str]:
    """Every visible text of an AppTest run (labels, messages, markdown, captions)."""
    out: list[str] = []
    for kind in ("markdown", "caption", "title", "header", "info", "success", "error", "warning"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [b.label for b in at.button] + [w.label for w in at.text_input]
    out += [w.placeholder for w in at.text_input if w.placeholder]
    out += [w.label for w in at.toggle] + [e.label for e in at.expander]
    return out


def _app(lang: str | None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    if lang:
        at.session_state[LANGUAGE_KEY] = lang
    return at


def test_sign_in_page_in_german(db, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    at = _app("de").run()
    assert not at.exception
    assert [w.label for w in at.text_input] == ["Zugangscode"]
    assert [b.label for b in at.button] == ["Anmelden"]
    assert [w.label for w in at.toggle] == ["Studienadministration"]
    assert at.markdown[0].value.startswith("Ärztinnen und Ärzte bewerten")
    at.text_input(key="login_code").input("WRONG-CODE-0000-0000-0000-00")
    at.button[0].click().run()
    assert at.error[0].value.startswith("Dieser Zugangscode ist ungültig")
    at.toggle(key="login_admin_open").set_value(True).run()
    assert [w.label for w in at.text_input] == ["Zugangscode", "Admin-Name", "Admin-Passwort"]
    assert "mindestens 12 Zeichen" in at.info[0].value


def test_sign_in_page_in_the_pseudo_language(db, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    at = _app(i18n.PSEUDO).run()
    at.toggle(key="login_admin_open").set_value(True).run()
    texts = _texts(at)
    assert len(texts) >= 8
    assert [t for t in texts if not is_pseudo(t)] == []


def test_signed_in_sidebar_and_page_titles_in_german(db):
    ident = _study()
    at = _app("de")
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = ident
    at.run()
    assert not at.exception
    assert at.sidebar.caption[0].value == "Angemeldet als Dr Weiss"
    assert [b.label for b in at.sidebar.button] == ["Abmelden"]


def _annotate(lang: str):
    ident = _study()
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=TIMEOUT)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = ident
    at.session_state[LANGUAGE_KEY] = lang
    return at.run(), ident


def test_annotate_page_and_widget_boot_in_german(db):
    at, ident = _annotate("de")
    assert not at.exception
    assert at.markdown[0].value == "#### Guten Tag, Dr Weiss"
    assert at.expander[0].label == "Leitfaden und Skala"
    guide = "\n".join(m.value for m in at.markdown)
    assert "(Taste `Backspace`) zeigt das vorige Paar" in guide
    boot = WidgetBoot.model_validate(json.loads(at.get("bidi_component")[0].proto.json))
    assert (boot.lang, boot.dir, boot.locale) == ("de", "ltr", "de")
    assert boot.text.all_saved == "Alles gespeichert" and boot.text.back == "Zurück"
    assert boot.text.not_saved["other"] == "{n} nicht gespeichert"
    assert boot.practice_text.heading == "Übungspaar {n}"


def test_annotate_page_in_the_right_to_left_pseudo_language(db):
    at, ident = _annotate(i18n.PSEUDO_RTL)
    assert not at.exception
    boot = WidgetBoot.model_validate(json.loads(at.get("bidi_component")[0].proto.json))
    assert (boot.lang, boot.dir) == ("qps-plocm", "rtl")
    # The data of the study (the doctor's name, the scale's labels and descriptions) are
    # taken out by rule; every other text is pseudo-localised.
    setup = widget_setup(ident.annotator_id)
    data = [setup.guideline, ident.name]
    data += [f"**{o.label}**: {o.description}" for o in boot.scale.options]
    texts = _texts(at)
    for value in data:
        texts = [t.replace(value, "") for t in texts]
    texts = [t for t in texts if t.strip()]
    assert len(texts) >= 3
    assert [t for t in texts if not is_pseudo(t)] == []
    # Back points right in a right-to-left language.
    assert any("→" in t for t in texts)


# ---------------------------------------------------------------- the endpoint
def _client() -> TestClient:
    return TestClient(Starlette(routes=ratings_api.routes()))


def _post(token, body, lang_header=None, raw=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if lang_header:
        headers["Accept-Language"] = lang_header
    return _client().post(
        RATINGS_PATH, content=raw if raw is not None else json.dumps(body), headers=headers
    )


def test_endpoint_refusals_in_the_widget_language(db):
    ident = _study()
    token = tokens.mint_token(ident.annotator_id, ident.credential_version).token
    assert _post(token, {"need": 0}).status_code == 200
    entry = {"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 10}
    german = _post(token, {"pending": [entry], "lang": "de"}).json()
    assert german["refused"][0]["message"].startswith("die Taste wurde 10 ms nach dem")
    english = _post(token, {"pending": [{**entry, "seq": 2}]}).json()
    assert english["refused"][0]["message"].startswith("the key was pressed 10 ms after")
    spanish = _post(token, {"pending": [{**entry, "seq": 3}], "lang": "es-ES"}).json()
    assert spanish["refused"][0]["message"].startswith("la tecla se pulsó 10 ms después")
    # A language the app does not speak is refused (nothing stored), in the header's language.
    bad = _post(token, {"pending": [{**entry, "seq": 4}], "lang": "fr"}, "de")
    assert bad.status_code == 400 and bad.json()["error"] == "invalid"
    assert bad.json()["reason"] == "lang: fr ist keine Sprache dieser App"


def test_endpoint_errors_before_the_body_follow_accept_language(db):
    ident = _study()
    token = tokens.mint_token(ident.annotator_id, ident.credential_version).token
    missing = _post(None, {}, "de-AT,de;q=0.9,en;q=0.5").json()
    assert missing["reason"] == "ein Bewertungs-Token ist nötig (Authorization: Bearer)"
    assert _post(None, {}).json()["reason"].startswith("a ratings token is needed")
    # German number format in a reason: the body cap.
    big = _post(token, None, "de", raw=b"[" + b" " * (MAX_BODY_BYTES + 1) + b"]").json()
    assert big["error"] == "too_large"
    assert big["reason"] == "der Inhalt der Anfrage ist größer als 1.500.000 Bytes"


def test_sign_in_pauses_speak_the_language():
    with i18n.language("de"):
        assert str(ThrottledError(1200)) == (
            "zu viele fehlgeschlagene Anmeldungen: verlangsamt; versuchen Sie es in "
            "1.200 Sekunden erneut"
        )
        assert str(ThrottledError(1, busy=True)).endswith("in 1 Sekunde erneut")
    assert str(ThrottledError(2, locked=True)) == (
        "too many failed sign-ins: temporarily locked; try again in 2 seconds"
    )
