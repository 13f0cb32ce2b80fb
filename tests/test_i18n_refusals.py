"""Refusals and lines that services hand to a page, in the page's language (issue 35): a
stored-predictions file's problems (Study setup → Predictions), the line that tells an
adjudicator the model's score (Adjudicate), a scores file for the dashboard's predictions
panel, the dashboard's pause of a drifting doctor without a reason (said on the page, not a
traceback). Where nothing sets a language (the CLI), English as before."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.errors import InputError
from data_schemas.scales import BINARY
from medsim_annot import i18n
from medsim_annot.embeddings.loaders import load_word_vectors
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as annotation_svc
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import predictions as predictions_svc
from medsim_annot.services import stored_predictions as P
from medsim_annot.services.activity import activity
from medsim_annot.services.people import code_sheet
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from tests import test_pages_dashboard as pages_dashboard

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE_KEY = "medsim_language"  # pages/_i18n.LANGUAGE_KEY


@pytest.fixture
def pred(db_url, tmp_path):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(4)],
            "term_1": [f"first {i}" for i in range(4)],
            "term_2": [f"second {i}" for i in range(4)],
            "auto_label": pd.array([i % 2 for i in range(4)], dtype="Int64"),
        }
    )
    create_study("pred", pairs, BINARY, ["doc", "other"])
    yield tmp_path
    dispose_all()


def _lines(exc: InputError, lang: str) -> list[str]:
    with i18n.language(lang):
        return exc.lines()


def test_stored_predictions_problems_in_german(pred):
    bad = pred / "bad.csv"
    pd.DataFrame({"pair_id": ["p0", "p1", "zz"], "cosine": [0.5, None, 0.2]}).to_csv(
        bad, index=False
    )
    with i18n.language("de"), pytest.raises(InputError) as info:
        P.add_predictions(open_study("pred"), bad)
    text = "\n".join(_lines(info.value, "de"))
    assert "pair_id 'zz' ist kein Paar der Studie" in text
    assert "der Score fehlt" in text
    assert "hat für 2 der 4 Paare der Studie keinen Score (p2, p3)" in text
    two = pred / "two.csv"
    pd.DataFrame({"pair_id": ["p0"], "a": [0.1], "b": [0.2]}).to_csv(two, index=False)
    with i18n.language("es"), pytest.raises(InputError) as info:
        P.add_predictions(open_study("pred"), two)
    assert "tiene 2 columnas de puntuación (a, b): elija una" in "\n".join(_lines(info.value, "es"))
    with pytest.raises(InputError) as info:  # the CLI: English
        P.add_predictions(open_study("pred"), two)
    assert "has 2 score columns (a, b): choose one" in "\n".join(info.value.lines())


def test_adjudicators_model_line_in_german(pred):
    scores = pred / "scores.csv"
    pd.DataFrame(
        {"pair_id": [f"p{i}" for i in range(4)], "cosine": [0.1, 0.25, 0.5, 0.875]}
    ).to_csv(scores, index=False)
    study = open_study("pred")
    P.add_predictions(study, scores, name="qqmodel")
    P.set_show_to_adjudicators(open_study("pred"), True)
    with i18n.language("de"):
        line = P.adjudicator_score(open_study("pred"), "p3")
    assert line == "Modell qqmodel (v1): 0,875"
    assert P.adjudicator_score(open_study("pred"), "p3") == "model qqmodel (v1): 0.875"


def test_predictions_panel_scores_file_problems_in_german(tmp_path):
    path = tmp_path / "scores.csv"
    pd.DataFrame({"pair_id": ["p0"], "a": [0.1], "b": [0.2]}).to_csv(path, index=False)
    with i18n.language("de"), pytest.raises(InputError) as info:
        predictions_svc.load_predictions(path, score_column="c")
    assert "hat keine Score-Spalte 'c' (Spalten: a, b)" in "\n".join(_lines(info.value, "de"))
    scores = predictions_svc.load_predictions(path, score_column="a")
    with i18n.language("de"), pytest.raises(InputError) as info:
        predictions_svc.align_predictions(scores, [f"p{i}" for i in range(1200)])
    text = "\n".join(_lines(info.value, "de"))
    assert "hat für 1.199 der 1.200 Paare keinen Score (p1, p2, p3, p4, p5 ...)" in text


def test_pause_without_reason_is_said_in_german(db_url, monkeypatch):
    """The pause form of a drifting doctor, sent without a reason: a German error on the
    page, nothing recorded (on main: the service's English refusal as a traceback)."""
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    drift_svc.clear_cache()
    pages_dashboard._store_drifty()
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.session_state["dashboard_study"] = "drifty"
    at.session_state[LANGUAGE_KEY] = "de"
    at.run()
    assert not at.exception, at.exception
    at.text_input(key="dashboard_pause_reason").set_value("  ")
    next(b for b in at.button if b.label == "Diese Ärztin/diesen Arzt pausieren").click().run()
    assert not at.exception, at.exception
    assert "Eine Pause braucht einen Grund" in [e.value for e in at.error]
    assert "annotator_paused" not in set(activity()["action"])


def test_codes_file_and_public_address_refusal_in_german(monkeypatch):
    """The codes shown once on Study setup (and downloaded as text) and the warning about a
    bad ``MEDSIM_PUBLIC_URL``, in the admin's language; names and codes as they are."""
    codes = [{"name": "dr_a", "access_code": "ABCD-EFGH"}]
    with i18n.language("de"):
        text = code_sheet.codes_text("ward-7", "https://annotate.example.org/", codes)
    assert text.splitlines()[:3] == [
        "Studie: ward-7",
        "Anmelden unter: https://annotate.example.org/",
        "Der eigene Zugangscode jeder Ärztin und jedes Arztes (bitte für sich behalten):",
    ]
    assert "dr_a: ABCD-EFGH" in text.splitlines()
    english = code_sheet.codes_text("ward-7", None, codes)
    assert english.startswith("Study: ward-7\nEach doctor's own access code")
    monkeypatch.setenv(code_sheet.PUBLIC_URL_ENV, "ftp://ward")
    with i18n.language("de"), pytest.raises(UsageProblem) as info:
        code_sheet.sign_in_address()
    assert str(info.value) == (
        "die öffentliche Adresse (MEDSIM_PUBLIC_URL) muss eine http- oder https-Adresse sein, "
        "nicht 'ftp://ward'"
    )


def test_embedding_file_problems_in_german(tmp_path):
    """Embedding scoring: an embedding that is a folder or cannot be read, in German (the
    page shows the problem under the file's name)."""
    with i18n.language("de"), pytest.raises(InputError) as info:
        load_word_vectors(tmp_path, cache_dir=tmp_path / "cache")
    assert "ist ein Ordner; ein Wort-Embedding ist eine einzelne Datei" in str(info.value)
    with i18n.language("de"), pytest.raises(InputError) as info:
        load_word_vectors(tmp_path / "none.vec", cache_dir=tmp_path / "cache")
    assert "Embedding-Datei nicht gefunden" in str(info.value)
    broken = tmp_path / "broken.vec"
    broken.write_text("3 2\nfever 0.1\n")
    with i18n.language("de"), pytest.raises(InputError) as info:
        load_word_vectors(broken, "word2vec", cache_dir=tmp_path / "cache")
    assert "keine lesbare word2vec-Embedding-Datei" in str(info.value), str(info.value)


def test_an_unknown_annotator_is_refused_in_german(pred):
    """What the ratings endpoint answers a widget whose doctor is gone (its ``reason``, shown
    by the widget) comes in the widget's language."""
    with i18n.language("de"), pytest.raises(UsageProblem) as info:
        annotation_svc.queue_state(987654)
    assert str(info.value) == "es gibt keine annotierende Person mit der ID 987654"
    with pytest.raises(UsageProblem, match="there is no annotator with id 987654"):
        annotation_svc.queue_state(987654)
