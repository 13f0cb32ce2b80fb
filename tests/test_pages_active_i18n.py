"""The Dashboard of a study with an active prediction-powered design and of one whose model
is a rater beside the doctors (issue 35): the sequential audit's interval, the
prediction-powered audit's notes and the alternative-annotator test's reasons in the admin's
language — every visible text pseudo-localised in ``qps-ploc`` (the study's data excepted by
rule), German words and German numbers in German."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from medsim_annot import i18n
from medsim_annot.services import annotation as A
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services.active_serving import create_active_study
from medsim_annot.services.design import DesignOptions
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.ppi import ppi_audit
from medsim_annot.stats.rater_model import alt_test, model_as_rater
from medsim_annot.storage import dispose_all, get_engine
from tests.test_pages_dashboard_i18n import (
    GERMAN_DECIMAL,
    LANGUAGE_KEY,
    ROOT,
    _data_words,
    _escapes,
    _visible,
)

PER_GROUP = 50
MODEL = "qqmodel"


def _world(seed: int):
    """Two groups of pairs with an automatic label, the truth and a model's P(same): sure
    (and right) on three pairs in four, unsure elsewhere."""
    rng = np.random.default_rng(seed)
    rows, same, p = [], [], []
    for g in ("ga", "gb"):
        for i in range(PER_GROUP):
            label = i % 2
            sure = rng.random() < 0.75
            right = rng.random() < (0.99 if sure else 0.5)
            same.append((label == 1) == right)
            p.append((0.97 if label == 1 else 0.03) if sure else 0.5 + rng.normal(0, 0.05))
            rows.append(
                {
                    "pair_id": f"{g}{i}",
                    "term_1": f"{g}x{i}",
                    "term_2": f"{g}y{i}",
                    "auto_label": label,
                    "dataset": g,
                }
            )
    pairs = pd.DataFrame(rows)
    return pairs, dict(zip(pairs["term_1"], same, strict=True)), np.clip(p, 0.01, 0.99)


def _study(name: str, doctors: list[str], tmp_path, *, seed: int, noisy: str | None = None):
    """An active-serving study *name*, every served pair rated (the doctor *noisy* answers
    at random)."""
    pairs, same, p = _world(seed)
    scores = tmp_path / f"{name}-scores.csv"
    pd.DataFrame({"pair_id": pairs["pair_id"], "p_same": p}).to_csv(scores, index=False)
    res = create_active_study(
        name,
        pairs,
        BINARY,
        doctors,
        DesignOptions(
            group_by=["dataset"],
            seed=seed,
            per_item=2,
            target_ci=0.1,
            min_positives=2,
            min_negatives=2,
        ),
        scores,
        prediction_name=MODEL,
    )
    rng = np.random.default_rng(seed)
    for a in res.annotators:
        annotator = authenticate_annotator(a["access_code"]).annotator_id
        while not (state := A.queue_state(annotator)).complete:
            view = A.get_pair(annotator, state.first_unrated)
            truth = same[view.term_1]
            if a["name"] == noisy:
                truth = bool(rng.random() < 0.5)
            A.submit_rating(
                annotator,
                view.position,
                "same" if truth else "not_same",
                expected_version=view.version,
            )


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """``act3``: three doctors, one of them careless (so they agree little: the alt-test's
    margin warning); ``act2``: two doctors (the alt-test is inconclusive)."""
    tmp = tmp_path_factory.mktemp("active_i18n")
    url = f"sqlite:///{tmp / 'medsim.db'}"
    mp = pytest.MonkeyPatch()
    mp.setenv("MEDSIM_DATABASE_URL", url)
    mp.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    mp.syspath_prepend(str(ROOT))
    dispose_all()
    _study("act3", ["dr_a", "dr_b", "dr_c"], tmp, seed=3, noisy="dr_c")
    _study("act2", ["dr_d", "dr_e"], tmp, seed=4)
    yield url
    dispose_all()
    mp.undo()


def _page(study: str, lang: str) -> AppTest:
    dsvc.clear_cache()
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.session_state["dashboard_study"] = study
    at.session_state[LANGUAGE_KEY] = lang
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("study", ["act3", "act2"])
def test_active_study_dashboard_in_pseudo_language(studies, study):
    at = _page(study, i18n.PSEUDO)
    texts = _visible(at)
    escaped = _escapes(texts, [*_data_words(get_engine()), MODEL])
    assert not escaped, "\n".join(escaped)


def test_active_study_dashboard_in_german(studies):
    """German words and German numbers: the sequential audit's prediction-powered interval,
    the audit's intervals, the alt-test's margin warning (three doctors who agree little) and
    its inconclusive verdict (two doctors)."""
    at = _page("act3", "de")
    captions = [c.value for c in at.caption]
    assert any(
        "aktives PPI++ (mit inversen Ziehungswahrscheinlichkeiten gewichtet) mit den "
        "Vorhersagen qqmodel v1, 95 %" in c
        for c in captions
    ), captions
    warning = next(c for c in captions if c.startswith("Epsilon: die Ärztinnen und Ärzte"))
    assert re.search(r"Krippendorffs Alpha \d,\d\d < 0,5\)", warning), warning
    assert "von 0,2 lässt ein Modell bestehen" in warning and "(z. B. 0,1)" in warning
    audit = next(d.value for d in at.dataframe if "Schätzung" in d.value.columns)
    assert all(re.fullmatch(r"\[\d,\d{3}; \d,\d{3}\]", v) for v in audit["PPI++ 95%"]), audit
    assert all(GERMAN_DECIMAL.match(v) for v in audit["Schätzung"])
    # the HTML report of the same study names the interval the same way
    report = dsvc.html_report(open_study("act3"), lang="de")
    assert "Intervalle: aktives PPI++ (mit inversen Ziehungswahrscheinlichkeiten" in report
    two = _page("act2", "de")
    notes = [c.value for c in two.caption]
    assert any(
        n.startswith("Alt-Test: nicht schlüssig: Der Test braucht 3 oder mehr Ärztinnen und Ärzte")
        for n in notes
    ), notes
    sentence = next(t.value for t in two.text if t.value.startswith("Alternative-Annotator-Test"))
    assert "nicht schlüssig (nicht schlüssig: Der Test braucht 3" in sentence
    assert "inconclusive" not in " ".join([*notes, sentence])


# ---- the readings of the model as a rater, service by service ------------------------------
def _ratings(table: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"pair_id": f"p{i}", "annotator": a, "value": float(v)}
            for a, vals in table.items()
            for i, v in enumerate(vals)
            if v == v
        ]
    )


def test_model_rater_reasons_in_german():
    """The reasons of :func:`model_as_rater` and :func:`alt_test` that the predictions panel
    shows: German, numbers the German way, English unchanged where nothing sets a language."""
    nan = float("nan")
    # every doctor rated different pairs: nothing shared; one rated pair has no score
    r = _ratings({"A": [1, 0, nan, nan], "B": [nan, nan, 1, 0]})
    model = {"p0": 0.9, "p1": 0.1, "p2": 0.8}
    with i18n.language("de"):
        rater = model_as_rater(r, model)
        test = alt_test(r, model, min_items_per_rater=1200)
    assert (
        rater.reasons["model"] == "1 bewertetes Paar hat keinen Modell-Score und wird ausgelassen"
    )
    assert rater.reasons["model_loo_rho"].startswith("keine Ärztin und kein Arzt teilt zwei")
    assert test.reasons["alt_test"] == (
        "keine Ärztin und kein Arzt hat 1.200 Items gemeinsam mit einer weiteren Ärztin oder "
        "einem weiteren Arzt und dem Modell"
    )
    english = model_as_rater(r, model)
    assert english.reasons["model"] == "1 rated pair has no model score and is left out"
    rng = np.random.default_rng(0)
    truth = rng.random(60) < 0.5
    two = _ratings({a: truth.astype(float).tolist() for a in "AB"})
    scores = {f"p{i}": float(v) for i, v in enumerate(truth)}
    with i18n.language("es"):
        es = alt_test(two, scores)
    assert es.reasons["alt_test"].startswith("no concluyente: la prueba necesita 3 o más médicos")
    assert "3 or more doctors and there are 2" in alt_test(two, scores).reasons["alt_test"]


def test_stratified_sample_note_in_german():
    """The audit's note on a sample stratified by automatic label (the rated pairs mostly
    positive, the unrated mostly negative): German percentages."""
    m = 400
    auto = np.arange(m) % 2
    rated = np.flatnonzero(auto == 1)[:120].tolist() + np.flatnonzero(auto == 0)[:30].tolist()
    pairs = pd.DataFrame({"pair_id": [f"p{i}" for i in range(m)], "auto_label": auto})
    rng = np.random.default_rng(1)
    ratings = pd.DataFrame(
        [
            {
                "pair_id": f"p{i}",
                "annotator": a,
                "value": BINARY.code("same" if auto[i] else "not_same"),
            }
            for i in rated
            for a in "XYZ"
        ]
    )
    scores = rng.random(m)
    with i18n.language("de"):
        res = ppi_audit(pairs, ratings, BINARY, scores, by=[])
    assert re.match(
        "die bewerteten Paare sind zu 80\u00a0% positiv gelabelt, die unbewerteten zu 32\u00a0%:",
        res.reasons["sample"],
    ), res.reasons
    english = ppi_audit(pairs, ratings, BINARY, scores, by=[])
    assert english.reasons["sample"].startswith(
        "the rated pairs are 80% labelled positive, the unrated ones 32%:"
    )
