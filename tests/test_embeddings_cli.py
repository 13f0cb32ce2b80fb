"""End to end: ``medsim score`` with small word2vec text and binary files written here, then
``medsim evaluate --scores A.csv B.csv --gold ... --json``."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from medsim_annot.embeddings.metrics import WORD_METRICS, word_pair_scores_reference
from medsim_annot.embeddings.tokenise import tokenise

WORDS = [
    "heart",
    "attack",
    "myocardial",
    "infarction",
    "fever",
    "pyrexia",
    "kidney",
    "renal",
    "failure",
    "disease",
    "acute",
    "chronic",
    "hypertension",
    "high",
    "blood",
    "pressure",
]
PAIRS = [
    ("p01", "Heart attack", "Myocardial infarction", "1"),
    ("p02", "fever", "pyrexia", "1"),
    ("p03", "kidney failure", "renal failure", "1"),
    ("p04", "fever", "chronic kidney disease", "0"),
    ("p05", "acute heart failure", "pyrexia", "0"),
    ("p06", "xyzzy", "fever", "0"),  # no known word in term_1
    ("p07", "heart disease", "renal disease", "0"),
    ("p08", "acute fever", "pyrexia", "1"),
    ("p09", "hypertension", "high blood pressure", "1"),
    ("p10", "blood pressure", "kidney disease", "0"),
    ("p11", "fever fever", "pyrexia", "1"),  # repeated word
    ("p12", "chronic renal failure", "chronic kidney disease", "1"),
]


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDSIM_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    V = rng.normal(size=(len(WORDS), 12)).astype(np.float32)
    txt = tmp_path / "vectors.txt"
    with open(txt, "w", encoding="utf-8") as fh:
        fh.write(f"{len(WORDS)} 12\n")
        for w, v in zip(WORDS, V):
            fh.write(w + " " + " ".join(repr(float(x)) for x in v) + "\n")
    binf = tmp_path / "vectors.bin"
    W = V * np.float32(-1.5) + np.float32(0.25)
    with open(binf, "wb") as fh:
        fh.write(f"{len(WORDS)} 12\n".encode())
        for w, v in zip(WORDS, W):
            fh.write(w.encode() + b" " + v.astype("<f4").tobytes() + b"\n")
    pairs = tmp_path / "pairs.csv"
    with open(pairs, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "term_1", "term_2", "auto_label"])
        w.writerows(PAIRS)
    return {"txt": txt, "bin": binf, "pairs": pairs, "V": V, "W": W, "dir": tmp_path}


def _expected(V):
    rows = {w: i for i, w in enumerate(WORDS)}
    t1 = [[rows[w] for w in tokenise(p[1]) if w in rows] for p in PAIRS]
    t2 = [[rows[w] for w in tokenise(p[2]) if w in rows] for p in PAIRS]
    return word_pair_scores_reference(V.astype(np.float64), t1, t2)


def test_score_and_evaluate_end_to_end(cli, files):
    d = files["dir"]
    a, b = d / "A.csv", d / "B.csv"
    r = cli("score", "--pairs", files["pairs"], "--embedding", files["txt"], "--out", a)
    assert r.exit_code == 0, r.stderr
    r = cli(
        "score",
        "--pairs",
        files["pairs"],
        "--embedding",
        files["bin"],
        "--format",
        "word2vec-binary",
        "--metrics",
        "avg_cos,fj,pair_tau",
        "--out",
        b,
    )
    assert r.exit_code == 0, r.stderr

    A = pd.read_csv(a)
    assert list(A.columns) == ["pair_id", *WORD_METRICS]
    assert A["pair_id"].tolist() == [p[0] for p in PAIRS]
    assert A.set_index("pair_id").loc["p06"].isna().all()  # not covered: NaN
    assert "NaN" in a.read_text(encoding="utf-8").splitlines()[6]  # written as NaN
    exp = _expected(files["V"])
    for m in WORD_METRICS:
        np.testing.assert_allclose(A[m].to_numpy(), exp[m], atol=1e-9, err_msg=m)
    B = pd.read_csv(b)
    assert list(B.columns) == ["pair_id", "avg_cos", "fj", "pair_tau"]
    expb = _expected(files["W"])
    np.testing.assert_allclose(B["fj"].to_numpy(), expb["fj"], atol=1e-9)

    r = cli("evaluate", "--scores", a, b, "--gold", files["pairs"], "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["task"] == "binary" and out["gold_source"] == "auto_label"
    assert out["n_gold"] == 12 and out["n_common"] == 11
    names = [m["method"] for m in out["methods"]]
    assert names == [f"A:{m}" for m in WORD_METRICS] + ["B:avg_cos", "B:fj", "B:pair_tau"]
    assert out["n_comparisons"] == 13 * 12 // 2 == len(out["comparisons"])
    for m in out["methods"]:
        assert m["coverage"] == pytest.approx(11 / 12)
        assert 0 <= m["auc"] <= 1 and 0 <= m["accuracy"] <= 1
        assert {"better_than", "worse_than", "threshold"} <= set(m)

    # human-readable table
    r = cli("evaluate", "--scores", a, "--gold", files["pairs"])
    assert r.exit_code == 0 and "A:fj" in r.stdout and "AUC" in r.stdout


def test_second_score_uses_the_cache(cli, files):
    d = files["dir"]
    for _ in range(2):
        r = cli(
            "score",
            "--pairs",
            files["pairs"],
            "--embedding",
            files["txt"],
            "--out",
            d / "A.parquet",
            "--metrics",
            "avg_cos",
        )
        assert r.exit_code == 0, r.stderr
    converted = list((d / "cache" / "embeddings").glob("vectors.txt-*"))
    assert len(converted) == 1
    assert pd.read_parquet(d / "A.parquet")["avg_cos"].isna().sum() == 1


def test_graded_evaluate_with_ratings(cli, files):
    d = files["dir"]
    a = d / "A.csv"
    assert (
        cli("score", "--pairs", files["pairs"], "--format", "levenshtein", "--out", a).exit_code
        == 0
    )
    ratings = d / "ratings.csv"
    rng = np.random.default_rng(1)
    with open(ratings, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "annotator", "rating"])
        for p in PAIRS:
            for ann in ("x", "y", "z"):
                w.writerow([p[0], ann, int(rng.integers(0, 4))])
    r = cli("evaluate", "--scores", a, "--gold", ratings, "--json", "--resamples", "199")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["task"] == "graded" and out["gold_source"] == "mean of ratings"
    m = out["methods"][0]
    assert m["method"] == "A:levenshtein" and m["coverage"] == 1.0
    assert m["rho_low"] <= m["rho"] <= m["rho_high"]


def test_bad_input_exits_2(cli, files):
    d = files["dir"]
    r = cli(
        "score",
        "--pairs",
        files["pairs"],
        "--embedding",
        files["txt"],
        "--metrics",
        "cosine",
        "--out",
        d / "x.csv",
    )
    assert r.exit_code == 2 and "cosine" in r.stderr
    assert not (d / "x.csv").exists()
    bad = d / "bad.csv"
    bad.write_text("pair_id,avg_cos\np01,high\n", encoding="utf-8")
    r = cli("evaluate", "--scores", bad, "--gold", files["pairs"])
    assert r.exit_code == 2 and "row 2" in r.stderr and "avg_cos" in r.stderr
    r = cli("score", "--pairs", files["pairs"], "--embedding", d / "nope.bin", "--out", d / "y.csv")
    assert r.exit_code == 2 and "not found" in r.stderr


def test_score_ehr_rel_file_as_pairs(cli, ehr_rel_a, tmp_path):
    out = tmp_path / "lev.csv"
    r = cli("score", "--pairs", ehr_rel_a, "--format", "char-ngram", "--out", out)
    assert r.exit_code == 0, r.stderr
    scores = pd.read_csv(out)
    assert list(scores.columns) == ["pair_id", "char_ngram"] and scores["char_ngram"].notna().all()
    r = cli("evaluate", "--scores", out, "--gold", ehr_rel_a, "--json", "--resamples", "199")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["task"] == "graded" and res["n_common"] == len(scores)
