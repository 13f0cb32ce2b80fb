"""AppTest of the embedding-scoring page: admin only; on the demo study's verified subset the
lexical baselines give exactly the numbers of the scoring service (and so of the CLI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas import columns as C
from medsim_annot.errors import UsageProblem
from medsim_annot.services import scoring
from medsim_annot.services.gold import filters as filters_svc
from medsim_annot.services.gold import table as table_svc
from medsim_annot.services.study_handle import open_study

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def app_db(demo_db_url, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.delenv("MEDSIM_EMBEDDINGS_DIR", raising=False)
    return demo_db_url


def _page(state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "scoring.py"), default_timeout=180)
    for k, v in (state or {}).items():
        at.session_state[k] = v
    return at.run()


def test_refuses_non_admins(app_db):
    for state in ({"auth_role": "annotator"}, None):
        at = _page(state)
        assert not at.exception
        assert any("for the study admin" in e.value for e in at.error)
        assert len(at.selectbox) == 0 and len(at.button) == 0


def test_lexical_baselines_on_verified_subset_match_service(app_db):
    at = _page({"auth_role": "admin"})
    assert not at.exception, at.exception
    assert at.selectbox(key="scoring_study").value == "demo-binary"
    at.button(key="scoring_run").click().run()
    assert not at.exception, at.exception
    shown = at.dataframe[0].value.set_index("method")
    # The same computation through the services.
    table = table_svc.study_gold_table(open_study("demo-binary"))
    kept, _ = filters_svc.apply_filters(table.table, only_verified=True, require_majority=True)
    pairs = kept[[C.PAIR_ID, C.TERM_1, C.TERM_2]].reset_index(drop=True)
    frames = {m: scoring.score_pairs(pairs, None, m) for m in ("levenshtein", "char-ngram")}
    expected = scoring.evaluate_scores(frames, kept, n_resamples=2000).methods.set_index("method")
    assert list(shown.index) == list(expected.index)
    np.testing.assert_allclose(
        shown["auc"].astype(float), expected["auc"].astype(float), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(shown["accuracy"].astype(float), expected["accuracy"].astype(float))
    assert 0.5 < float(shown["auc"].max()) <= 1.0


def test_worst_errors_refuse_a_result_of_another_task():
    """A graded result never reads a binary gold's thresholds (issue 33, item 1: the page
    crashed with KeyError 'threshold' when a file was uploaded after scoring)."""
    ids = [f"p{i}" for i in range(8)]
    scores = {"lex": pd.DataFrame({C.PAIR_ID: ids, "s": np.linspace(0, 1, 8)})}
    graded = pd.DataFrame({C.PAIR_ID: ids, "mean": [0, 1, 2, 3, 0, 1, 2, 3]})
    binary = pd.DataFrame({C.PAIR_ID: ids, "majority": [0, 1, 0, 1, 0, 1, 0, 1]})
    result = scoring.evaluate_scores(scores, graded, task="graded", n_resamples=50)
    with pytest.raises(UsageProblem, match="graded task"):
        scoring.pair_errors(scores, binary, "lex:s", result)
