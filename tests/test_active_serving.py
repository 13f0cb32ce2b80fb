"""Active serving (issue 36d) through the services and the CLI: pairs drawn with a known
probability growing with the model's uncertainty, the probability recorded on every main
slot, undrawn pairs never served, the 2 + 1 design and check pairs kept, a pair never twice
to one doctor, three doctors rating at once with every save stored exactly once, and the
sequential audit stopping on the inverse-probability weighted rule."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services import stopping as S
from medsim_annot.services import stored_predictions as P
from medsim_annot.services.active_serving import create_active_study, draw_pairs
from medsim_annot.services.design import DesignOptions
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.active import DEFAULT_FLOOR
from medsim_annot.storage import get_engine

DOCTORS = ["ann", "bob", "cyd"]
PER_GROUP = 150


def _world(seed: int = 2):
    rng = np.random.default_rng(seed)
    rows, same, p = [], [], []
    for g in ("a", "b"):
        for i in range(PER_GROUP):
            label = i % 2
            sure = rng.random() < 0.75
            right = rng.random() < (0.99 if sure else 0.5)
            s = (label == 1) == right
            same.append(s)
            # the model is sure where the label is surely right, unsure elsewhere
            p.append((0.97 if label == 1 else 0.03) if sure else 0.5 + rng.normal(0, 0.05))
            rows.append(
                {
                    "pair_id": f"{g}{i}",
                    "term_1": f"{g}x{i}",
                    "term_2": f"{g}y{i}",
                    "auto_label": label,
                    "dataset": g,
                    "check_answer": "",
                }
            )
    for j in range(2):  # two check pairs with a known answer
        rows.append(
            {
                "pair_id": f"c{j}",
                "term_1": f"cx{j}",
                "term_2": f"cy{j}",
                "auto_label": 1,
                "dataset": "a",
                "check_answer": "same",
            }
        )
        same.append(True)
        p.append(0.9)
    return pd.DataFrame(rows), np.array(same), np.clip(np.array(p), 0.01, 0.99)


def _truth(same, term: str) -> str:
    ids = {f"{g}x{i}": k for k, (g, i) in enumerate((g, i) for g in "ab" for i in range(PER_GROUP))}
    if term.startswith("cx"):
        return "same"
    return "same" if same[ids[term]] else "not_same"


@pytest.fixture
def active(db_url, tmp_path):
    pairs, same, p = _world()
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"pair_id": pairs["pair_id"], "p_same": p}).to_csv(scores, index=False)
    res = create_active_study(
        "act",
        pairs,
        BINARY,
        DOCTORS,
        DesignOptions(group_by=["dataset"], seed=7, per_item=2, tiebreak=True, target_ci=0.1),
        scores,
        prediction_name="model",
    )
    ids = {a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators}
    return {"res": res, "ids": ids, "same": same, "url": db_url, "pairs": pairs}


def _slots(url: str) -> pd.DataFrame:
    with get_engine(url).connect() as conn:
        got = conn.exec_driver_sql(
            "SELECT a.annotator_id, i.pair_id, a.kind, a.draw_probability "
            "FROM assignments a JOIN items i ON i.id = a.item_id"
        ).all()
    return pd.DataFrame(got, columns=["annotator", "pair_id", "kind", "pi"])


def test_draw_is_recorded_and_undrawn_pairs_have_no_slot(active):
    cfg = active["res"].config["active"]
    assert cfg["pairs"] == 2 * PER_GROUP and 0 < cfg["drawn"] < cfg["pairs"]
    slots = _slots(active["url"])
    main = slots[slots["kind"] == "main"]
    drawn = set(main["pair_id"])
    assert len(drawn - {"c0", "c1"}) == cfg["drawn"]
    assert main["pi"].notna().all() and (main["pi"] > 0).all() and (main["pi"] <= 1).all()
    # each drawn pair to exactly two doctors (k = 2), never twice to one
    per_pair = main.groupby("pair_id")["annotator"].agg(["count", "nunique"])
    assert (per_pair["count"] == 2).all() and (per_pair["nunique"] == 2).all()
    # the check pairs are served as before, outside the draw
    checks = slots[slots["kind"] == "check"]
    assert set(checks["pair_id"]) <= {"c0", "c1"} and checks["pi"].isna().all()
    # the predictions are stored with the study
    s = P.stored_predictions(open_study("act"))
    assert s is not None and s.name == "model" and len(s) == 2 * PER_GROUP + 2


def test_uncertain_pairs_are_drawn_more_often():
    rng = np.random.default_rng(0)
    scores = np.where(rng.random(2000) < 0.5, 0.98, 0.5)
    got = draw_pairs(scores, ["g"] * 2000, seed=3)
    unsure, sure = scores == 0.5, scores == 0.98
    assert got.pi[unsure].min() > 2 * got.pi[sure].max()
    assert got.drawn[unsure].mean() > 2 * got.drawn[sure].mean()
    assert got.pi.min() >= DEFAULT_FLOOR * got.pi.max() / 2  # the floor keeps every pair
    # seeded: the same draw again
    again = draw_pairs(scores, ["g"] * 2000, seed=3)
    assert np.array_equal(got.drawn, again.drawn)


def _rate_queue(annotator: int, same, seen: list[str], errors: list[BaseException]) -> None:
    try:
        while True:
            state = A.queue_state(annotator)
            if state.complete:
                return
            view = A.get_pair(annotator, state.first_unrated)
            seen.append(view.term_1)
            A.submit_rating(
                annotator,
                view.position,
                _truth(same, view.term_1),
                expected_version=view.version,
            )
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def test_three_doctors_at_once_exactly_once_and_active_stop(active):
    seen: dict[str, list[str]] = {d: [] for d in DOCTORS}
    errors: list[BaseException] = []
    threads = [
        threading.Thread(
            target=_rate_queue, args=(active["ids"][d], active["same"], seen[d], errors)
        )
        for d in DOCTORS
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    hist = rating_history(open_study("act"))
    assert len(hist) == sum(len(v) for v in seen.values())  # every save once
    assert not hist.duplicated(subset=["annotator", "pair_id"]).any()
    slots = _slots(active["url"])
    drawn_terms = {
        p.replace(p[0], p[0] + "x", 1) for p in slots.loc[slots["kind"] == "main", "pair_id"]
    }
    served = {t for v in seen.values() for t in v if not t.startswith("cx")}
    assert served <= drawn_terms  # a pair not drawn is never served
    for v in seen.values():
        assert len(v) == len(set(v))  # never the same pair twice to one doctor
    status = S.audit_status(open_study("act"))
    assert status is not None and "active PPI++" in status.method
    assert set(status.groups["status"]) <= {"stopped", "serving"}


def test_cli_create_active(db_url, cli, tmp_path):
    pairs, _, p = _world(3)
    pf, sf = tmp_path / "pairs.csv", tmp_path / "scores.csv"
    pairs.drop(columns=["check_answer"]).to_csv(pf, index=False)
    pd.DataFrame({"pair_id": pairs["pair_id"], "p": p}).to_csv(sf, index=False)
    base = ["study", "create", "cli_act", "--pairs", pf, "--annotators", "x,y", "--seed", "5"]
    r = cli(*base, "--sampling", "active", "--target-ci", "0.1", "--group-by", "dataset")
    assert r.exit_code == 2 and "--predictions" in r.stderr
    r = cli(
        *base,
        "--sampling",
        "active",
        "--predictions",
        sf,
        "--target-ci",
        "0.1",
        "--group-by",
        "dataset",
    )
    assert r.exit_code == 0, r.stderr
    assert "active serving:" in r.stdout and "pairs drawn" in r.stdout
    assert P.prediction_versions(open_study("cli_act"))[0].pairs == len(pairs)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"pair_id": ["nope"], "p": [0.3]}).to_csv(bad, index=False)
    r = cli(
        "study", "create", "cli_bad", "--pairs", pf, "--annotators", "x,y",
        "--sampling", "active", "--predictions", bad, "--target-ci", "0.1",
        "--group-by", "dataset",
    )  # fmt: skip
    assert r.exit_code == 2 and "bad.csv" in r.stderr
    listed = cli("study", "list", "--json")
    assert "cli_bad" not in listed.stdout  # nothing was created
