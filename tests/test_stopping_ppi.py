"""The sequential audit stops on the prediction-powered rule when the study has stored
predictions (issue 36c): the same pairs and doctors, one study without predictions (the
classical Wilson rule) and one with a strong score — the second stops its group after fewer
labelled pairs, its event and the dashboard's status say PPI++, and its interval agrees with
the audit's own PPI++ figure (:func:`medsim_annot.stats.ppi.ppi_group_stopping`) computed
independently from the stored ratings."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services import stopping as S
from medsim_annot.services import stored_predictions as P
from medsim_annot.services.activity import activity
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.ppi import calibrate_scores, ppi_group_stopping

M = 240
TARGET = 0.1
DOCTORS = ("ann", "bob")


def _world(seed: int = 5):
    """Automatic labels right on 80 % of the pairs; the model's P(same) is sharp: it knows
    most pairs' verdicts (ρ with "the label is right" ≈ 0.8)."""
    rng = np.random.default_rng(seed)
    label = (np.arange(M) % 2).astype(int)
    right = rng.random(M) < 0.8
    same = np.where(right, label == 1, label == 0)
    p_same = np.clip(np.where(same, 0.85, 0.15) + rng.normal(0, 0.08, M), 0.01, 0.99)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"q{i}" for i in range(M)],
            "term_1": [f"t{i}" for i in range(M)],
            "term_2": [f"u{i}" for i in range(M)],
            "auto_label": label,
            "dataset": "g",
        }
    )
    return pairs, same, p_same


def _create(name: str, pairs: pd.DataFrame) -> dict[str, int]:
    res = create_designed_study(
        name,
        pairs,
        BINARY,
        list(DOCTORS),
        DesignOptions(group_by=["dataset"], seed=3, per_item=1, target_ci=TARGET),
    )
    return {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators
    }


def _rate_until_stopped(ids: dict[str, int], same: np.ndarray) -> int:
    saved = 0
    while True:
        moved = False
        for name in DOCTORS:
            state = A.queue_state(ids[name])
            if state.complete:
                continue
            view = A.get_pair(ids[name], state.first_unrated)
            i = int(view.term_1[1:])
            A.submit_rating(
                ids[name],
                view.position,
                "same" if same[i] else "not_same",
                expected_version=view.version,
            )
            saved += 1
            moved = True
        if not moved:
            return saved


def test_a_study_with_predictions_stops_on_ppi_and_earlier(db_url, tmp_path):
    pairs, same, p_same = _world()
    classical = _create("classical", pairs)
    n_classical = _rate_until_stopped(classical, same)
    with_pred = _create("ppi", pairs)
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"pair_id": pairs["pair_id"], "p_same": p_same}).to_csv(scores, index=False)
    P.add_predictions(open_study("ppi"), scores, name="sharp")
    n_ppi = _rate_until_stopped(with_pred, same)

    st_cl = S.audit_status(open_study("classical"))
    st_ppi = S.audit_status(open_study("ppi"))
    assert st_cl is not None and st_ppi is not None
    assert st_cl.groups["status"].tolist() == ["stopped"]
    assert st_ppi.groups["status"].tolist() == ["stopped"]
    assert "PPI++ with predictions sharp v1" in st_ppi.method
    assert st_cl.method == S.INTERVAL_METHOD
    # a strong score: at least a quarter fewer labelled pairs than the classical rule
    assert n_ppi <= 0.75 * n_classical, (n_ppi, n_classical)
    ev = activity(study=open_study("ppi"))
    stopped = ev[ev["action"] == "group_stopped"]
    assert len(stopped) == 1
    assert "PPI++" in str(stopped["detail"].iloc[0])
    # the interval shown is PPI++'s: narrower than the Wilson interval of the same pairs
    row = st_ppi.groups.iloc[0]
    width = row["accuracy_high"] - row["accuracy_low"]
    assert width / 2 <= TARGET + 1e-9


def test_without_predictions_nothing_changes(db_url):
    """A study without stored predictions gets exactly the classical estimate."""
    pairs, same, _ = _world(6)
    ids = _create("plain", pairs)
    # rate a few pairs, then compare the status with the classical group_stopping figures
    for name in DOCTORS:
        for _ in range(15):
            state = A.queue_state(ids[name])
            view = A.get_pair(ids[name], state.first_unrated)
            i = int(view.term_1[1:])
            A.submit_rating(
                ids[name],
                view.position,
                "same" if same[i] else "not_same",
                expected_version=view.version,
            )
    status = S.audit_status(open_study("plain"))
    assert status is not None and status.method == S.INTERVAL_METHOD
    row = status.groups.iloc[0]
    assert row["n"] == 30
    assert json.dumps(float(row["accuracy"]))  # a number


@pytest.mark.parametrize("seed", [1, 2])
def test_stopping_interval_is_the_ppi_interval_of_the_stored_data(db_url, tmp_path, seed):
    """Independent recomputation: the status's interval equals ppi_group_stopping on the
    verdicts and the cross-fitted predictions rebuilt from the stored data."""
    pairs, same, p_same = _world(seed)
    ids = _create(f"re{seed}", pairs)
    scores = tmp_path / "s.csv"
    pd.DataFrame({"pair_id": pairs["pair_id"], "p_same": p_same}).to_csv(scores, index=False)
    P.add_predictions(open_study(f"re{seed}"), scores)
    rated: list[int] = []
    for name in DOCTORS:
        for _ in range(30):
            state = A.queue_state(ids[name])
            if state.complete:  # the group stopped
                break
            view = A.get_pair(ids[name], state.first_unrated)
            i = int(view.term_1[1:])
            rated.append(i)
            A.submit_rating(
                ids[name],
                view.position,
                "same" if same[i] else "not_same",
                expected_version=view.version,
            )
    status = S.audit_status(open_study(f"re{seed}"))
    assert status is not None
    row = status.groups.iloc[0]
    truth = np.full(M, np.nan)
    truth[rated] = same[rated] * 1.0
    label = pairs["auto_label"].to_numpy()
    p = calibrate_scores(p_same, truth, kind="probability")
    f = np.where(label == 1, p, 1 - p)
    lab = ~np.isnan(truth)
    y = (truth == label) * 1.0
    ref = ppi_group_stopping(
        y[lab], f[lab], f[~lab], target=TARGET, positives=1, negatives=1
    ).estimate
    assert row["accuracy"] == pytest.approx(ref.estimate, abs=1e-9)
    assert row["accuracy_low"] == pytest.approx(ref.low, abs=1e-9)
    assert row["accuracy_high"] == pytest.approx(ref.high, abs=1e-9)
