"""Rater checks that need no second rater: accuracy on check pairs (pairs with a known
answer, served blind among the others), rushed answers (faster than a threshold) and the
pace of work (median seconds per pair, pairs per hour).

Each function takes the ratings frame (``pair_id``, ``annotator``, ``value``; the time
checks also ``elapsed_ms``, the milliseconds the pair was on screen before the answer, NaN
when not measured) and returns one row per annotator, sorted by name.

Why these checks: a doctor's agreement with the other doctors cannot tell a careless doctor
from a hard pair, but a wrong answer on a pair whose answer is known (two SNOMED CT
synonyms of one concept are "same"), or an answer given faster than the two terms can be
read, can. Chiu et al. (2018) watched rating patterns during the survey and warned raters
who gave one rating ten times running; the checks here are the same kind of watch on the
answers themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.options import CHECK_TOLERANCE, PACE_PAUSE, RUSHED_THRESHOLD

from ._frame import check_frame
from .proportion import wilson_interval

#: An answer faster than this (milliseconds on the pair) is rushed, unless the study sets
#: another threshold: reading two clinical terms and deciding takes longer.
RUSHED_MS = 1500
#: Time on one pair beyond this counts as a pause, not work, in the pace: a pair left on
#: screen over lunch would otherwise halve a doctor's pairs per hour.
PAUSE_MS = 300_000

CHECK_COLUMNS = [C.ANNOTATOR, "n_checks", "n_correct", "check_accuracy", "ci_low", "ci_high"]
RUSHED_COLUMNS = [C.ANNOTATOR, "n_timed", "n_rushed", "rushed_rate"]
PACE_COLUMNS = [C.ANNOTATOR, "n_timed", "median_seconds", "pairs_per_hour"]


def _elapsed(ratings: pd.DataFrame) -> np.ndarray:
    if C.ELAPSED_MS not in ratings.columns:
        return np.full(len(ratings), np.nan)
    return pd.to_numeric(ratings[C.ELAPSED_MS], errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )


def _annotators(ratings: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Integer code per rating and the sorted annotator names (one factorize of the raw
    column: converting 100,000s of names to another string type costs more than the
    checks)."""
    codes, names = pd.factorize(ratings[C.ANNOTATOR], sort=True)
    return np.asarray(codes), np.asarray([str(n) for n in names], dtype=object)


def _check_threshold(threshold_ms: float) -> None:
    RUSHED_THRESHOLD.check(threshold_ms)


def rushed(ratings: pd.DataFrame, threshold_ms: float = RUSHED_MS) -> np.ndarray:
    """Whether each rating was made faster than *threshold_ms* (a rating without a
    measured time is never rushed).

    >>> r = pd.DataFrame({"pair_id": ["a", "b", "c"], "annotator": "A",
    ...                   "value": [1.0, 0.0, 1.0], "elapsed_ms": [400, 1500, None]})
    >>> rushed(r).tolist()
    [True, False, False]
    """
    _check_threshold(threshold_ms)
    e = _elapsed(ratings)
    with np.errstate(invalid="ignore"):
        return ~np.isnan(e) & (e < threshold_ms)


def rushed_rate(ratings: pd.DataFrame, threshold_ms: float = RUSHED_MS) -> pd.DataFrame:
    """Per annotator: ``n_timed`` (ratings with a measured time), ``n_rushed`` (of those,
    faster than *threshold_ms*) and ``rushed_rate`` (their ratio; NaN with no timed rating).

    >>> r = pd.DataFrame({"pair_id": list("abcd"), "annotator": ["A", "A", "A", "B"],
    ...                   "value": 1.0, "elapsed_ms": [400, 2000, 3000, None]})
    >>> rushed_rate(r).values.tolist()
    [['A', 3, 1, 0.3333333333333333], ['B', 0, 0, nan]]
    """
    check_frame(ratings)
    flag = rushed(ratings, threshold_ms)
    codes, names = _annotators(ratings)
    k = len(names)
    out = pd.DataFrame(
        {
            C.ANNOTATOR: names,
            "n_timed": np.bincount(codes[~np.isnan(_elapsed(ratings))], minlength=k),
            "n_rushed": np.bincount(codes[flag], minlength=k),
        }
    ).astype({"n_timed": "int64", "n_rushed": "int64"})
    timed = out["n_timed"].to_numpy(dtype=np.float64)
    out["rushed_rate"] = np.divide(
        out["n_rushed"].to_numpy(dtype=np.float64),
        timed,
        out=np.full(len(out), np.nan),
        where=timed > 0,
    )
    return out[RUSHED_COLUMNS]


def pace(ratings: pd.DataFrame, *, pause_ms: float = PAUSE_MS) -> pd.DataFrame:
    """Per annotator: ``n_timed``, ``median_seconds`` (median time on a pair) and
    ``pairs_per_hour`` (timed pairs per hour of time on pairs, each pair's time capped at
    *pause_ms*: longer is a pause). NaN for an annotator without a timed rating.

    Notes
    -----
    With :math:`t_i` the milliseconds on the annotator's timed pairs :math:`i = 1..n`,
    pairs per hour is :math:`n \\cdot 3.6\\times10^6 / \\sum_i \\min(t_i, \\text{pause})`,
    so 3,600 divided by it is the mean (capped) seconds per pair.

    >>> r = pd.DataFrame({"pair_id": list("abc"), "annotator": "A", "value": 1.0,
    ...                   "elapsed_ms": [2000, 4000, 6000]})
    >>> pace(r).values.tolist()
    [['A', 3, 4.0, 900.0]]
    """
    check_frame(ratings)
    PACE_PAUSE.check(pause_ms)
    e = _elapsed(ratings)
    codes, names = _annotators(ratings)
    k = len(names)
    timed = ~np.isnan(e)
    n = np.bincount(codes[timed], minlength=k)
    total = np.bincount(codes[timed], weights=np.minimum(e[timed], pause_ms), minlength=k)
    median = (
        pd.Series(e[timed]).groupby(codes[timed]).median().reindex(range(k)).to_numpy()
        if k
        else np.zeros(0)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        per_hour = np.where((n > 0) & (total > 0), n * 3_600_000.0 / total, np.nan)
    return pd.DataFrame(
        {
            C.ANNOTATOR: names,
            "n_timed": n.astype("int64"),
            "median_seconds": median.astype(np.float64) / 1000.0,
            "pairs_per_hour": per_hour.astype(np.float64),
        }
    )[PACE_COLUMNS]


def check_accuracy(
    ratings: pd.DataFrame,
    answers: Mapping[str, float] | pd.Series,
    *,
    tolerance: float = 0.0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per annotator, how many check pairs they answered and how many correctly.

    Parameters
    ----------
    ratings : DataFrame
        The ratings frame. Every rating of a check pair counts (a pair shown twice counts
        twice); ratings of other pairs are ignored.
    answers : mapping or Series
        The known answer of each check pair, ``pair_id`` to the scale's code.
    tolerance : float
        Graded scales: an answer within *tolerance* of the known code is correct (0: exact).
        A no-decision rating ("don't know", NaN) is never correct.
    confidence : float
        Of the Wilson score interval of the accuracy.

    Returns
    -------
    DataFrame
        ``annotator``, ``n_checks``, ``n_correct``, ``check_accuracy`` (NaN without a check
        pair), ``ci_low``, ``ci_high`` (Wilson; NaN without a check pair). Only annotators
        who rated at least one pair appear.

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. *JASA* 22(158), 209–212. Newcombe, R. G. (1998). Two-sided confidence
    intervals for the single proportion. *Statistics in Medicine* 17, 857–872.

    Examples
    --------
    Newcombe (1998), Table I: 81 correct of 263 gives the Wilson interval 0.2553 to 0.3662.

    >>> r = pd.DataFrame({"pair_id": [f"c{i}" for i in range(263)], "annotator": "A",
    ...                   "value": [1.0] * 81 + [0.0] * 182})
    >>> row = check_accuracy(r, {f"c{i}": 1.0 for i in range(263)}).iloc[0]
    >>> int(row.n_correct), round(float(row.ci_low), 4), round(float(row.ci_high), 4)
    (81, 0.2553, 0.3662)
    """
    check_frame(ratings)
    CHECK_TOLERANCE.check(tolerance)
    known = {str(p): float(v) for p, v in answers.items()}
    # Only the ratings of check pairs are looked up one by one (a vectorised isin first).
    pid = ratings[C.PAIR_ID]
    if not pd.api.types.is_string_dtype(pid):  # ids are compared as text
        pid = pid.astype(str)
    hit = np.asarray(pid.isin(list(known)), dtype=bool) if known else np.zeros(len(pid), bool)
    truth = np.full(len(pid), np.nan)
    truth[hit] = [known[str(p)] for p in pid[hit].tolist()]
    value = ratings[C.VALUE].to_numpy(dtype=np.float64, na_value=np.nan)
    is_check = ~np.isnan(truth)
    with np.errstate(invalid="ignore"):
        correct = is_check & ~np.isnan(value) & (np.abs(value - truth) <= tolerance)
    codes, names = _annotators(ratings)
    k = len(names)
    out = pd.DataFrame(
        {
            C.ANNOTATOR: names,
            "n_checks": np.bincount(codes[is_check], minlength=k).astype("int64"),
            "n_correct": np.bincount(codes[correct], minlength=k).astype("int64"),
        }
    )
    acc, lo, hi = [], [], []
    for k, n in zip(out["n_correct"], out["n_checks"]):
        if n == 0:
            acc.append(np.nan)
            lo.append(np.nan)
            hi.append(np.nan)
            continue
        a, b = wilson_interval(int(k), int(n), confidence=confidence)
        acc.append(k / n)
        lo.append(a)
        hi.append(b)
    out["check_accuracy"] = np.asarray(acc, dtype=np.float64)
    out["ci_low"] = np.asarray(lo, dtype=np.float64)
    out["ci_high"] = np.asarray(hi, dtype=np.float64)
    return out[CHECK_COLUMNS]


def below_threshold(accuracy: pd.DataFrame, min_accuracy: float | None) -> np.ndarray:
    """Whether each annotator's check accuracy is below *min_accuracy* (never without a
    threshold or without a check pair answered).

    >>> a = pd.DataFrame({"check_accuracy": [0.5, 0.9, float("nan")]})
    >>> below_threshold(a, 0.8).tolist()
    [True, False, False]
    """
    acc = accuracy["check_accuracy"].to_numpy(dtype=np.float64)
    if min_accuracy is None:
        return np.zeros(len(acc), dtype=bool)
    with np.errstate(invalid="ignore"):
        return ~np.isnan(acc) & (acc < float(min_accuracy))
