"""Adaptive designs: ratings spent and accuracy of the gold labels in 200 simulated
studies with synthetic doctors whose truth is known.

Each study: 4 groups of 150 binary pairs (75 labelled positive, 75 negative by the generator)
of different difficulty; the automatic labels are right with a group-specific rate (0.97,
0.95, 0.90, 0.80: the group's true accuracy is the share of its pairs whose label equals the
truth); three doctors, two good and one weak, each with a per-rating error rate that grows
with the group's difficulty and a don't-know rate: a good doctor errs on 1–5 % of pairs and
says don't know on 2 %, the weak one errs three times as often and says don't know on 4 %.
That gives a nominal Krippendorff's alpha of about 0.8 over a study, a little below the 0.85
of the doctors of Schulz & Juric (AAAI 2020, §4; lowest dataset 0.65). Every doctor's rating of every pair is drawn once, so the designs
below see the same judgements and differ only in which ones they collect:

(a) all rate all (the AAAI 2020 design): 3 ratings per pair;
(b) 2 + 1 with a 10 % calibration set: calibration pairs rated by all three; every other
    pair by two (balanced 2-of-3), plus the third doctor where
    :func:`~medsim_annot.design.adaptive.needs_tiebreak` says the two do not agree;
(c) (b) plus sequential stopping at ±0.05: pairs served group-interleaved, after each verdict
    :func:`~medsim_annot.design.adaptive.group_stopping` decides whether the group stops.

Goals: (b) gives the same majority label as (a) on every pair with >= 25 % fewer ratings;
(c) every group's accuracy estimate is within 0.05 of its true accuracy in >= 95 % of the 200
studies, with fewer ratings than (b); Dawid–Skene (crowd-kit) on the (a) ratings is at least
as accurate against the truth as the majority.

The design logic runs in memory through the same pure functions the service calls
(``medsim_annot.design.adaptive``, ``balanced_k_of_n``, ``majority_from_counts``), not
through the database: the store's part (one tiebreak slot per pair under concurrency) is
proven by the tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from medsim_annot.design import balanced_k_of_n
from medsim_annot.design.adaptive import (
    choose_tiebreak_annotator,
    group_stopping,
    needs_tiebreak,
)
from medsim_annot.stats.majority import majority_from_counts

SEED = 20261123
N_STUDIES = 200
GROUP_SIZE = 150  # pairs per group (half labelled positive)
#: (true accuracy of the automatic labels, a good doctor's error rate) per group.
GROUPS = {
    "easy-a": (0.97, 0.01),
    "easy-b": (0.95, 0.02),
    "hard-a": (0.90, 0.03),
    "hard-b": (0.80, 0.05),
}
#: Doctors: (error multiplier, don't-know rate); the last one is the weak doctor.
DOCTORS = {"dr_a": (1.0, 0.02), "dr_b": (1.0, 0.02), "dr_weak": (3.0, 0.04)}
CALIBRATION = 0.10
TARGET = 0.05


@dataclass
class Study:
    """One simulated study: per pair its group, automatic label, truth and every doctor's
    rating (1.0 / 0.0, NaN for don't know)."""

    group: np.ndarray  # (P,) int
    auto: np.ndarray  # (P,) int
    truth: np.ndarray  # (P,) int
    ratings: np.ndarray  # (P, D) float
    true_accuracy: np.ndarray  # (G,)


def make_study(rng: np.random.Generator) -> Study:
    group, auto, truth, ratings = [], [], [], []
    true_acc = []
    for g, (acc, err) in enumerate(GROUPS.values()):
        a = np.repeat([1, 0], GROUP_SIZE // 2)
        right = rng.random(GROUP_SIZE) < acc
        t = np.where(right, a, 1 - a)
        true_acc.append(float((a == t).mean()))
        r = np.empty((GROUP_SIZE, len(DOCTORS)))
        for d, (mult, dk) in enumerate(DOCTORS.values()):
            wrong = rng.random(GROUP_SIZE) < min(err * mult, 0.5)
            v = np.where(wrong, 1 - t, t).astype(float)
            v[rng.random(GROUP_SIZE) < dk] = np.nan
            r[:, d] = v
        group.append(np.full(GROUP_SIZE, g))
        auto.append(a)
        truth.append(t)
        ratings.append(r)
    return Study(
        np.concatenate(group),
        np.concatenate(auto),
        np.concatenate(truth),
        np.vstack(ratings),
        np.asarray(true_acc),
    )


def majority(ratings: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Strict majority (``majority_from_counts``, the audit's rule) of the collected ratings
    (*mask*: which doctor's rating of each pair was collected)."""
    cast = mask.sum(axis=1)
    ones = ((ratings == 1) & mask).sum(axis=1)
    zeros = ((ratings == 0) & mask).sum(axis=1)
    return majority_from_counts(np.stack([zeros, ones], axis=1), cast, np.array([0.0, 1.0]))


def design_all(study: Study) -> np.ndarray:
    return np.ones_like(study.ratings, dtype=bool)


def design_two_plus_one(study: Study, seed: int) -> np.ndarray:
    """2 + 1 with the calibration set: which doctor's rating of each pair is collected.

    Calibration pairs (10 %, drawn with *seed*) go to all three; every other pair to two
    (:func:`balanced_k_of_n`), plus the doctor :func:`choose_tiebreak_annotator` picks when
    :func:`needs_tiebreak` says the two do not agree. Which ratings a pair collects does not
    depend on when it is served, so design (c) reuses this mask."""
    n_pairs, n_doc = study.ratings.shape
    names = list(DOCTORS)
    index = {n: i for i, n in enumerate(names)}
    rng = np.random.default_rng(seed)
    calib = np.zeros(n_pairs, dtype=bool)
    calib[rng.choice(n_pairs, size=int(round(CALIBRATION * n_pairs)), replace=False)] = True
    main = np.flatnonzero(~calib).tolist()
    who = balanced_k_of_n(len(main), names, 2, seed=seed)
    mask = np.zeros((n_pairs, n_doc), dtype=bool)
    mask[calib] = True
    remaining = dict.fromkeys(names, 0)
    for pair_who in who:
        for a in pair_who:
            remaining[a] += 1
    for pair, (first, second) in zip(main, who):
        i, j = index[first], index[second]
        mask[pair, [i, j]] = True
        remaining[first] -= 1
        remaining[second] -= 1
        if needs_tiebreak(study.ratings[pair, i], study.ratings[pair, j]):
            third = choose_tiebreak_annotator(remaining, {first, second})
            if third is not None:
                mask[pair, index[third]] = True
    return mask, calib


def sequential(
    study: Study, mask: np.ndarray, calib: np.ndarray, labels: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Design (c): calibration pairs first, then the groups interleaved in *order*; after each
    verdict :func:`group_stopping` decides whether the group stops (its remaining pairs are
    withdrawn). Returns the pairs served and each group's accuracy estimate at the end."""
    n_groups = len(GROUPS)
    served = calib.copy()
    stats = np.zeros((n_groups, 6), dtype=np.int64)  # n, correct, pos, neg, pred_pos, true_pos
    stopped = np.zeros(n_groups, dtype=bool)

    def verdict(pair: int) -> None:
        m = labels[pair]
        if np.isnan(m):
            return
        g, a = study.group[pair], study.auto[pair]
        stats[g] += (1, int(a == m), int(a == 1), int(a == 0), int(a == 1), int(a == 1 and m == 1))

    for pair in np.flatnonzero(calib).tolist():
        verdict(pair)
    queues = [
        [p for p in order.tolist() if study.group[p] == g and not calib[p]] for g in range(n_groups)
    ]
    cursor = [0] * n_groups
    active = True
    while active:
        active = False
        for g in range(n_groups):
            if stopped[g] or cursor[g] >= len(queues[g]):
                continue
            pair = queues[g][cursor[g]]
            cursor[g] += 1
            served[pair] = True
            verdict(pair)
            active = True
            n, correct, pos, neg, pp, tp = stats[g].tolist()
            est = group_stopping(
                correct,
                n,
                predicted_positive=pp,
                true_positive=tp,
                positives=pos,
                negatives=neg,
                target=TARGET,
            )
            stopped[g] = est.stop
    estimates = np.array([s[1] / s[0] if s[0] else np.nan for s in stats])
    return served, estimates


def group_accuracy(study: Study, labels: np.ndarray) -> np.ndarray:
    out = []
    for g in range(len(GROUPS)):
        sel = (study.group == g) & ~np.isnan(labels)
        out.append(float((study.auto[sel] == labels[sel]).mean()) if sel.any() else np.nan)
    return np.asarray(out)


def dawid_skene_labels(study: Study, mask: np.ndarray, kind: str = "dawid-skene") -> np.ndarray:
    from crowdkit.aggregation import MACE, DawidSkene

    pairs, docs = np.nonzero(mask & ~np.isnan(study.ratings))
    df = pd.DataFrame(
        {"task": pairs, "worker": docs, "label": study.ratings[pairs, docs].astype(int)}
    )
    model = DawidSkene(n_iter=100) if kind == "dawid-skene" else MACE(n_restarts=1, random_state=0)
    labels = model.fit_predict(df)
    out = np.full(len(study.truth), np.nan)
    out[labels.index.to_numpy()] = labels.to_numpy(dtype=float)
    return out


def simulate(
    n_studies: int = N_STUDIES, seed: int = SEED, *, dawid_skene_every: int = 1, mace_every: int = 0
) -> dict:
    """Run *n_studies* simulated studies; returns the figures of the module docstring."""
    rng = np.random.default_rng(seed)
    n_groups = len(GROUPS)
    out = {
        "ratings": {"a": 0, "b": 0, "c": 0},
        "pairs": 0,
        "identical_b": 0,
        "studies": n_studies,
        "within_c": np.zeros(n_groups, dtype=np.int64),
        "within_c_all": 0,
        "within_b": np.zeros(n_groups, dtype=np.int64),
        "gold_right": {"majority": 0, "dawid-skene": 0, "mace": 0},
        "gold_pairs": 0,
        "mace_pairs": 0,
        "mace_majority": 0,
    }
    for s in range(n_studies):
        study = make_study(rng)
        order = rng.permutation(len(study.truth))
        mask_a = design_all(study)
        mask_b, calib = design_two_plus_one(study, seed + s)
        maj_a = majority(study.ratings, mask_a)
        maj_b = majority(study.ratings, mask_b)
        served, est_c = sequential(study, mask_b, calib, maj_b, order)
        mask_c = mask_b & served[:, None]
        out["pairs"] += len(study.truth)
        out["ratings"]["a"] += int(mask_a.sum())
        out["ratings"]["b"] += int(mask_b.sum())
        out["ratings"]["c"] += int(mask_c.sum())
        out["identical_b"] += int(np.array_equal(maj_a, maj_b, equal_nan=True))
        within = np.abs(est_c - study.true_accuracy) <= TARGET
        out["within_c"] += within
        out["within_c_all"] += int(within.all())
        out["within_b"] += np.abs(group_accuracy(study, maj_b) - study.true_accuracy) <= TARGET
        if dawid_skene_every and s % dawid_skene_every == 0:
            out["gold_pairs"] += len(study.truth)
            out["gold_right"]["majority"] += int((maj_a == study.truth).sum())
            labels = dawid_skene_labels(study, mask_a, "dawid-skene")
            out["gold_right"]["dawid-skene"] += int((labels == study.truth).sum())
        if mace_every and s % mace_every == 0:
            out["mace_pairs"] += len(study.truth)
            out["mace_majority"] += int((maj_a == study.truth).sum())
            labels = dawid_skene_labels(study, mask_a, "mace")
            out["gold_right"]["mace"] += int((labels == study.truth).sum())
    return out


def run(report) -> None:
    t0 = time.perf_counter()
    # Dawid-Skene on every 10th study, MACE (slower) on every 40th: crowd-kit's EM takes
    # about as long per study as the rest of the simulation of 200.
    res = simulate(N_STUDIES, dawid_skene_every=10, mace_every=40)
    elapsed = time.perf_counter() - t0
    n = res["studies"]
    ra, rb, rc = (res["ratings"][k] for k in "abc")
    report(
        f"simulated studies ({len(GROUPS)} groups x {GROUP_SIZE} pairs, 3 doctors)", n, "studies"
    )
    report("(a) all rate all: ratings per study", ra / n, "ratings")
    saving_b = 1 - rb / ra
    report(
        "(b) 2+1, 10% calibration: ratings per study",
        rb / n,
        "ratings",
        baseline=ra / n,
        goal=">= 25% fewer than (a)",
        ok=saving_b >= 0.25,
    )
    report(
        "(b) studies whose majority labels equal (a)'s on every pair",
        res["identical_b"] / n * 100,
        "%",
        goal="100%",
        ok=res["identical_b"] == n,
        lower_is_better=False,
    )
    report(
        "(c) 2+1 + stopping at ±0.05: ratings per study",
        rc / n,
        "ratings",
        baseline=rb / n,
        goal="fewer than (b)",
        ok=rc < rb,
    )
    for g, name in enumerate(GROUPS):
        share = res["within_c"][g] / n
        report(
            f"(c) group {name} (accuracy {GROUPS[name][0]:.2f}): estimate within ±{TARGET} of "
            "the truth",
            share * 100,
            "% of studies",
            baseline=res["within_b"][g] / n * 100,
            goal=">= 95% (baseline: (b), every pair rated)",
            ok=share >= 0.95,
            lower_is_better=False,
        )
    report(
        "(c) all four groups within ±0.05 at once",
        res["within_c_all"] / n * 100,
        "% of studies",
        lower_is_better=False,
    )
    for kind, pairs, right_m in (
        ("dawid-skene", res["gold_pairs"], res["gold_right"]["majority"]),
        ("mace", res["mace_pairs"], res["mace_majority"]),
    ):
        acc, acc_m = res["gold_right"][kind] / pairs, right_m / pairs
        report(
            f"gold labels equal to the truth, {kind} (crowd-kit) on (a)'s ratings "
            f"({pairs // (GROUP_SIZE * len(GROUPS))} studies)",
            acc * 100,
            "% of pairs",
            baseline=acc_m * 100,
            goal=">= majority (baseline)" if kind == "dawid-skene" else None,
            ok=acc >= acc_m if kind == "dawid-skene" else None,
            lower_is_better=False,
        )
    report("simulation time", elapsed, "s")
