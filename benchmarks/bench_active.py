"""Active serving with the prediction-powered stopping rule (issue 36): simulated sequential
audits of one group, each rule run on the same simulated group in the same run.

Rules, each checked after every label from the 20th on until its interval is within the
target (or the group has no pair left to serve):

- ``classical``: pairs served uniformly at random; the Wilson interval (binary) or the Wald
  interval (0–3), 97.5 % checked, 95 % reported (:func:`medsim_annot.design.adaptive`'s rule);
- ``ppi``: the same order; the PPI++ interval of
  :func:`medsim_annot.stats.ppi.ppi_from_sums` (score form for 0/1, Wald for 0–3), the
  predictions of the pairs not yet served as the unlabelled ones;
- ``active``: pairs drawn with :func:`medsim_annot.stats.active.sampling_probabilities` of the
  model's uncertainty (floor 0.2, expected share 0.5 of the group), served in random order
  among the drawn, the inverse-probability weighted PPI++ interval of
  :func:`medsim_annot.stats.active.active_from_sums`.

Settings (``N_SIMS`` ≥ 1,000 simulated studies each): groups of 400 and 5,000 pairs; binary
outcome (is the automatic label right? accuracy ≈ 0.87; target ±0.05) and a 0–3 relatedness
rating (the doctors' mean; target ±0.15, the same relative width); four scores:

- ``strong``: a calibrated prediction; most pairs are sure (binary: 80 % of the pairs right
  with probability 0.99, 20 % with 0.4, corr(f, Y) ≈ 0.7; 0–3: 70 % of the pairs with rating
  noise σ = 0.2, 30 % with σ = 1), the uncertainty is the prediction's own standard deviation;
- ``weak``: binary 80 % at 0.9 and 20 % at 0.65 (corr ≈ 0.28); 0–3 the mean seen through
  noise N(0, 1);
- ``noise``: a prediction independent of the outcome, uniform uncertainty;
- ``biased``: the strong prediction shifted (−0.15 binary, +0.4 on 0–3): informative but
  miscalibrated; the uncertainty is computed from the shifted prediction.

Figures, all seeded (``SEED``): coverage of the reported 95 % interval at the stopping time
(the truth is the group's own mean) ≥ 94 % in every setting (a setting fails when
significantly below: one-sided 1 % family-wise, Bonferroni over the settings); with the
strong score the median labels of ``active`` ≥ 50 % fewer than ``classical`` and ≥ 20 %
fewer than ``ppi``; with the noise score ``active`` no more than ``classical`` (median,
within Monte Carlo error: 5 %); the plan's labels for ``active`` and ``ppi``
(:func:`medsim_annot.stats.active.plan_labels`) within 10 % of the simulated median.

Simplification: the predictions are given calibrated (the store cross-fits them on the
labelled pairs); the doctors' verdict is the outcome itself (no rater error).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from medsim_annot.stats.active import (
    active_from_sums,
    plan_labels,
    sampling_probabilities,
)
from medsim_annot.stats.ppi import STOP_CONFIDENCE, ppi_from_sums

SEED = 20261127
N_SIMS = 1000
GROUPS = (400, 5000)
SCORES = ("strong", "weak", "noise", "biased")
SCALES = ("binary", "0-3")
TARGETS = {"binary": 0.05, "0-3": 0.15}
MIN_LABELS = 20
FLOOR = 0.1
SHARE = 0.25
#: Steps evaluated per simulated study (every rule stops well before in a group of 5,000).
HORIZON = 2000
MC_LEVEL = 0.01


@dataclass(frozen=True)
class Group:
    y: np.ndarray  # outcome of every pair
    f: np.ndarray  # prediction of every pair
    u: np.ndarray  # the model's uncertainty (sd of the outcome given the prediction)
    bounds: tuple[float, float]


def _rating_moments(m: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of clip(round(m + sd·e), 0, 3), e ~ N(0, 1)."""
    cuts = np.array([0.5, 1.5, 2.5])
    cdf = norm.cdf((cuts[None, :] - m[:, None]) / sd[:, None])
    probs = np.diff(np.concatenate([np.zeros((len(m), 1)), cdf, np.ones((len(m), 1))], axis=1))
    vals = np.arange(4.0)
    mean = probs @ vals
    var = probs @ vals**2 - mean**2
    return mean, np.sqrt(np.maximum(var, 0.0))


def make_group(rng: np.random.Generator, n: int, score: str, scale: str) -> Group:
    """One simulated group (see the module docstring)."""
    if scale == "binary":
        if score in ("strong", "biased"):
            q = np.where(rng.random(n) < 0.8, 0.99, 0.4)
        elif score == "weak":
            q = np.where(rng.random(n) < 0.8, 0.9, 0.65)
        else:
            q = np.full(n, 0.87)
        y = (rng.random(n) < q).astype(np.float64)
        if score == "noise":
            f = np.clip(0.87 + rng.uniform(-0.05, 0.05, n), 0, 1)
        elif score == "biased":
            f = np.clip(q - 0.15, 0.01, 0.99)
        else:
            f = q.copy()
        u = np.sqrt(f * (1 - f))
        if score == "noise":
            u = np.full(n, float(np.sqrt(0.87 * 0.13)))
        return Group(y, f, u, (0.0, 1.0))
    m = rng.uniform(0, 3, n)
    sd = np.where(rng.random(n) < 0.7, 0.2, 1.0) if score in ("strong", "biased") else np.ones(n)
    y = np.clip(np.round(m + sd * rng.standard_normal(n)), 0, 3)
    mean, spread = _rating_moments(m, sd)
    if score == "strong":
        f, u = mean, spread
    elif score == "biased":
        f, u = np.clip(mean + 0.4, 0, 3), spread
    elif score == "weak":
        # the mean seen through noise N(0, 1), calibrated: E[m | seen] shrinks by
        # Var m / (Var m + 1) = 0.75 / 1.75
        shrink = 0.75 / 1.75
        f = 1.5 + shrink * (m + rng.standard_normal(n) - 1.5)
        u = np.full(n, float(np.sqrt(np.mean((y - f) ** 2))))  # what a pilot estimates
    else:
        f = 1.5 + rng.uniform(-0.1, 0.1, n)
        u = np.full(n, float(np.std(y)))  # a constant prediction: the spread of the ratings
    return Group(y, f, u, (0.0, 3.0))


def _first_stop(hw_check: np.ndarray, target: float, n: np.ndarray) -> int:
    ok = (hw_check <= target + 1e-12) & (n >= MIN_LABELS)
    idx = np.flatnonzero(ok)
    return int(idx[0]) if len(idx) else len(n) - 1


def uniform_rules(g: Group, rng: np.random.Generator, target: float) -> dict[str, tuple]:
    """Classical and uniform PPI++ on one random order: (labels, covered) each."""
    big_n = len(g.y)
    order = rng.permutation(big_n)[: min(big_n, HORIZON)]
    y, f = g.y[order], g.f[order]
    n = np.arange(1, len(order) + 1, dtype=np.float64)
    sy, syy = np.cumsum(y), np.cumsum(y * y)
    sf, syf, sff = np.cumsum(f), np.cumsum(y * f), np.cumsum(f * f)
    tf, tff = g.f.sum(), (g.f * g.f).sum()
    nu = big_n - n
    interval = "score" if g.bounds == (0.0, 1.0) else "wald"
    args = (n, sy, syy, sf, syf, sff, nu, tf - sf, tff - sff)
    # the sequential rule's interval: the score form with its variance floor (ppi_group_stopping)
    rule = dict(interval=interval, bounds=g.bounds, floor=True)
    rep = ppi_from_sums(*args, confidence=0.95, **rule)
    chk = ppi_from_sums(*args, confidence=STOP_CONFIDENCE, lam=rep["lam"], **rule)
    # the classical rule's own interval: Wilson (the score form at λ = 0) / Wald
    cl_chk = ppi_from_sums(
        *args, confidence=STOP_CONFIDENCE, interval=interval, bounds=g.bounds, lam=0.0
    )
    cl_rep = ppi_from_sums(*args, confidence=0.95, interval=interval, bounds=g.bounds, lam=0.0)
    theta = float(g.y.mean())
    out = {}
    for name, c, r in (("classical", cl_chk, cl_rep), ("ppi", chk, rep)):
        k = _first_stop((c["high"] - c["low"]) / 2, target, n)
        out[name] = (int(n[k]), bool(r["low"][k] <= theta <= r["high"][k]))
    return out


def active_rule(g: Group, rng: np.random.Generator, target: float) -> tuple[int, bool]:
    """Active serving: (labels, covered)."""
    big_n = len(g.y)
    pi = sampling_probabilities(g.u, floor=FLOOR, share=SHARE)
    drawn = np.flatnonzero(rng.random(big_n) < pi)
    order = rng.permutation(drawn)[:HORIZON]
    y, f, w = g.y[order], g.f[order], 1.0 / pi[order]
    w2 = w * w
    n = np.arange(1, len(order) + 1, dtype=np.float64)
    sums = [
        n,
        np.cumsum(w),
        np.cumsum(w * y),
        np.cumsum(w * f),
        np.cumsum(w * y * y),
        np.cumsum(w2),
        np.cumsum(w2 * y),
        np.cumsum(w2 * f),
        np.cumsum(w2 * y * y),
        np.cumsum(w2 * f * f),
        np.cumsum(w2 * y * f),
    ]
    binary = g.bounds == (0.0, 1.0)
    common = dict(big_n=big_n, f_bar=float(g.f.mean()), var_f=float(g.f.var()), bounds=g.bounds)
    rep = active_from_sums(*sums, confidence=0.95, adjust=binary, **common)
    chk = active_from_sums(
        *sums, confidence=STOP_CONFIDENCE, lam=rep["lam"], adjust=binary, **common
    )
    k = _first_stop((chk["high"] - chk["low"]) / 2, target, n)
    theta = float(g.y.mean())
    return int(n[k]), bool(rep["low"][k] <= theta <= rep["high"][k])


def simulate(score: str, scale: str, big_n: int, sims: int, seed: int) -> dict:
    """*sims* simulated studies of one setting: per rule the labels at the stop and whether
    the 95 % interval covered the group's mean; and the plans."""
    rng = np.random.default_rng(seed)
    target = TARGETS[scale]
    labels: dict[str, list[int]] = {"classical": [], "ppi": [], "active": []}
    cover: dict[str, list[bool]] = {"classical": [], "ppi": [], "active": []}
    plans: dict[str, list[float]] = {"ppi": [], "active": [], "drawn": []}
    for _ in range(sims):
        g = make_group(rng, big_n, score, scale)
        for name, (k, c) in uniform_rules(g, rng, target).items():
            labels[name].append(k)
            cover[name].append(c)
        k, c = active_rule(g, rng, target)
        labels["active"].append(k)
        cover["active"].append(c)
        if len(plans["ppi"]) < 50:  # the plan is deterministic given the predictions
            pi = sampling_probabilities(g.u, floor=FLOOR, share=SHARE)
            adj = scale == "binary"
            plans["active"].append(
                plan_labels(g.f, g.u**2, pi, target=target, adjust=adj, active=True)
            )
            plans["ppi"].append(plan_labels(g.f, g.u**2, np.ones(big_n), target=target, score=adj))
            plans["drawn"].append(float(pi.sum()))
    return {
        "median": {k: float(np.median(v)) for k, v in labels.items()},
        "coverage": {k: float(np.mean(v)) for k, v in cover.items()},
        "plan": {k: float(np.median(v)) for k, v in plans.items()},
        "sims": sims,
    }


def _floor(settings: int, sims: int, goal: float = 0.94) -> float:
    z = float(norm.ppf(1 - MC_LEVEL / settings))
    return goal - z * math.sqrt(goal * (1 - goal) / sims)


def run(report) -> None:
    t0 = time.perf_counter()
    settings = [(s, sc, n) for sc in SCALES for n in GROUPS for s in SCORES]
    floor = _floor(len(settings) * 3, N_SIMS)
    worst = 1.0
    for i, (score, scale, big_n) in enumerate(settings):
        r = simulate(score, scale, big_n, N_SIMS, SEED + i)
        tag = f"{scale} N={big_n} {score}"
        med, cov, plan = r["median"], r["coverage"], r["plan"]
        for rule in ("classical", "ppi", "active"):
            ok = cov[rule] >= floor
            worst = min(worst, cov[rule])
            report(
                f"{tag}: coverage {rule}",
                100 * cov[rule],
                "%",
                goal=f">= 94% (MC floor {100 * floor:.1f}%)",
                ok=ok,
                lower_is_better=False,
            )
        report(f"{tag}: median labels classical", med["classical"], "labels")
        report(f"{tag}: median labels uniform PPI++", med["ppi"], "labels")
        if score == "strong":
            report(
                f"{tag}: median labels active (vs classical)",
                med["active"],
                "labels",
                baseline=med["classical"],
                goal="<= 50% of classical",
                ok=med["active"] <= 0.5 * med["classical"],
            )
            report(
                f"{tag}: median labels active (vs uniform PPI++)",
                med["active"],
                "labels",
                baseline=med["ppi"],
                goal="<= 80% of uniform PPI++",
                ok=med["active"] <= 0.8 * med["ppi"],
            )
        elif score == "noise":
            report(
                f"{tag}: median labels active (vs classical)",
                med["active"],
                "labels",
                baseline=med["classical"],
                goal="<= classical (+5% Monte Carlo)",
                ok=med["active"] <= 1.05 * med["classical"],
            )
        else:
            report(f"{tag}: median labels active", med["active"], "labels")
        if score in ("strong", "weak", "noise"):  # the plan assumes calibrated predictions
            for rule in ("ppi", "active"):
                if rule == "active" and med[rule] >= 0.95 * plan["drawn"]:
                    continue  # the group ran out of drawn pairs: nothing to plan against
                err = abs(plan[rule] - med[rule]) / med[rule]
                report(
                    f"{tag}: plan {rule} vs simulated median",
                    100 * err,
                    "% off",
                    goal="<= 10%",
                    ok=err <= 0.10,
                )
    report("worst coverage over all settings and rules", 100 * worst, "%", lower_is_better=False)
    report("benchmark time", time.perf_counter() - t0, "s")
