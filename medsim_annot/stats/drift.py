"""Quality over time: each doctor's ratings cut into windows (every *n* ratings in the order
they were made, or per day), the figures of each window, and the drift alert when a window
falls below the doctor's own first windows.

Per window: accuracy on check pairs with its Wilson interval, agreement with the majority of
the *other* raters on the same pair (their current ratings; a pair without such a majority
does not count), the don't-know share and the median seconds per pair. Imported ratings
(``source == "import"``) carry no real time or order, so every window skips them and
:attr:`Windows.notes` says how many.

The alert compares a window with the doctor's **baseline**, the pooled figure of their first
``baseline_windows`` judged windows: it is raised when the window's figure is more than
``margin`` (relative: 0.15 = 15%) below the baseline **and** the window's 95% Wilson
interval lies wholly below the baseline's, so that neither a few unlucky pairs in one window
nor a lucky start raise it. Both majority agreement and check accuracy are watched, each in the windows where
it rests on at least :data:`MIN_METRIC_N` answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.options import BASELINE_WINDOWS, DRIFT_MARGIN, QUALITY_WINDOW
from medsim_annot.i18n import N_, fmt_int, fmt_percent, t

from ._frame import check_frame
from .proportion import wilson_interval

#: Default window: every 50 ratings (Potato's agreement drift uses windows of this size).
WINDOW = 50
#: Default drift margin: a window 15% below the doctor's own baseline.
MARGIN = 0.15
#: Windows pooled into a doctor's baseline.
BASELINE = 2
#: A day window with fewer ratings than this is shown but not judged.
MIN_DAY_RATINGS = 10
#: A window's figure is judged only when it rests on at least this many answers (check
#: pairs answered, pairs with a majority of the others): at a 10% check rate a window of 50
#: holds about 5 check pairs, and one wrong answer among 5 is not drift.
MIN_METRIC_N = 10
BY = ("count", "day")
SOURCE = "source"
IMPORTED = "import"
GUIDELINE_VERSION = "guideline_version"

WINDOW_COLUMNS = [
    C.ANNOTATOR,
    "window",
    "start",
    "end",
    "n_ratings",
    "n_checks",
    "n_correct",
    "check_accuracy",
    "check_ci_low",
    "check_ci_high",
    "n_with_majority",
    "n_agree",
    "majority_agreement",
    "agreement_ci_low",
    "agreement_ci_high",
    "dont_know_share",
    "median_seconds",
    "guideline_version",
    "judged",
]
ALERT_COLUMNS = [
    C.ANNOTATOR,
    "window",
    "metric",
    "baseline",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "drop",
    "evidence",
]
METRICS = {
    "majority_agreement": (
        "n_agree",
        "n_with_majority",
        N_("agreement with the other raters' majority"),
    ),
    "check_accuracy": ("n_correct", "n_checks", N_("accuracy on check pairs")),
}


@dataclass(frozen=True)
class Windows:
    """Windows of every doctor (:data:`WINDOW_COLUMNS`, one row per doctor and window, in
    order) and plain notes on what was left out."""

    table: pd.DataFrame
    by: str
    size: int
    notes: tuple[str, ...] = field(default=())


def check_window(size: object) -> int:
    """*size* when it is an allowed window (a whole number of ratings, at least 1)."""
    return int(QUALITY_WINDOW.check(size))


def _wilson(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = np.full(len(n), np.nan)
    hi = np.full(len(n), np.nan)
    for j, (a, b) in enumerate(zip(k.tolist(), n.tolist())):
        if b > 0:
            lo[j], hi[j] = wilson_interval(int(a), int(b))
    return lo, hi


def _others_majority(ratings: pd.DataFrame) -> np.ndarray:
    """For each rating, the value the *other* raters of the pair hold in majority (more
    than half of their decisive current ratings), NaN when there is none.

    The current rating of a doctor on a pair is their latest; the majority of the others
    leaves the doctor's own current rating out."""
    n = len(ratings)
    if not n:
        return np.zeros(0)
    value = ratings[C.VALUE].to_numpy(dtype=np.float64, na_value=np.nan)
    # Integer codes instead of the texts: one factorize per column, then NumPy only.
    pid, _ = pd.factorize(ratings[C.PAIR_ID])
    aid, names = pd.factorize(ratings[C.ANNOTATOR])
    key = pid.astype(np.int64) * max(len(names), 1) + aid
    if C.RATED_AT in ratings.columns:
        # naive UTC: a tz-aware column's to_numpy() is one Timestamp object per rating
        t = pd.to_datetime(ratings[C.RATED_AT], utc=True).dt.tz_localize(None).to_numpy()
        order = np.lexsort((np.arange(n), t))  # by time, then as given (a stable sort)
    else:
        order = np.arange(n)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    # The current rating of each (pair, doctor): their last in that order.
    keys, inv = np.unique(key, return_inverse=True)
    last = np.full(len(keys), -1, dtype=np.int64)
    np.maximum.at(last, inv, rank)
    cur_v = value[order[last]]  # per (pair, doctor)
    decisive = ~np.isnan(cur_v)
    vals, vidx = np.unique(cur_v[decisive], return_inverse=True)
    nv = len(vals)
    if nv == 0:
        return np.full(n, np.nan)
    n_pairs = int(pid.max()) + 1
    key_pair = keys // max(len(names), 1)
    counts = (
        np.bincount(key_pair[decisive] * nv + vidx, minlength=n_pairs * nv)
        .reshape(n_pairs, nv)
        .astype(np.float64)
    )
    # the doctor's own current value on the pair, per rating
    mine = cur_v[inv]
    others = counts[pid].copy()
    has_own = ~np.isnan(mine)
    own_idx = np.searchsorted(vals, mine[has_own])
    others[np.flatnonzero(has_own), own_idx] -= 1.0
    total = others.sum(axis=1)
    best = others.argmax(axis=1)
    top = others[np.arange(len(others)), best]
    ok = (total > 0) & (top * 2 > total)
    return np.where(ok, vals[best], np.nan)


def quality_windows(
    ratings: pd.DataFrame,
    *,
    window: int = WINDOW,
    by: str = "count",
    answers: Mapping[str, float] | None = None,
    tolerance: float = 0.0,
    baseline_windows: int = BASELINE,
) -> Windows:
    """Each doctor's figures per window of *window* ratings (``by="count"``, in the order
    they were made) or per UTC day (``by="day"``).

    Parameters
    ----------
    ratings : DataFrame
        Every saved rating (``pair_id``, ``annotator``, ``value`` with NaN for no decision,
        ``rated_at``; optional ``elapsed_ms``, ``source``, ``guideline_version``).
    window : int
        Ratings per window (count windows); a whole number of at least 1.
    answers : mapping, optional
        Known answers of the check pairs (``pair_id`` to code).
    tolerance : float
        Graded scales: a check answer within *tolerance* of the known code is correct.
    baseline_windows : int
        How many first windows make the doctor's baseline (marks them in ``judged``' sense
        only: see :func:`drift_alerts`).

    Returns
    -------
    Windows
        ``judged`` is False for a window too small to judge (count: under half a window;
        day: under :data:`MIN_DAY_RATINGS` ratings).

    Examples
    --------
    >>> r = pd.DataFrame({"pair_id": ["a", "b", "c"], "annotator": "A", "value": [1.0, None, 0.0],
    ...                   "rated_at": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03"])})
    >>> w = quality_windows(r, window=2).table
    >>> w["n_ratings"].tolist(), w["dont_know_share"].tolist()
    ([2, 1], [0.5, 0.0])
    """
    check_frame(ratings)
    size = check_window(window)
    if by not in BY:
        raise ValueError(f"windows are by 'count' or 'day', not {by!r}")
    BASELINE_WINDOWS.check(baseline_windows)
    if C.RATED_AT not in ratings.columns:
        raise ValueError(
            "the ratings have no rated_at column: windows follow the order ratings were made"
        )
    notes: list[str] = []
    frame = ratings.reset_index(drop=True)
    if SOURCE in frame.columns:
        imported = frame[SOURCE].astype(str).eq(IMPORTED).to_numpy()
        if imported.any():
            n_imp = int(imported.sum())
            notes.append(
                t(
                    "{n} imported rating(s) have no real time or order and are left out of "
                    "the windows (they still count in the other figures).",
                    n=fmt_int(n_imp),
                )
            )
            frame = frame[~imported].reset_index(drop=True)
    majority = _others_majority(frame) if len(frame) else np.zeros(0)
    value = frame[C.VALUE].to_numpy(dtype=np.float64, na_value=np.nan)
    at = pd.to_datetime(frame[C.RATED_AT], utc=True).dt.tz_localize(None)  # naive UTC
    # Sorted by doctor (codes in the names' sorted order), time, then as given.
    a_code, a_names = pd.factorize(frame[C.ANNOTATOR].astype(str), sort=True)
    idx = np.lexsort((np.arange(len(frame)), at.to_numpy(), a_code))
    a_sorted = a_code[idx]
    who = np.asarray(a_names, dtype=object)[a_sorted]
    if by == "count":
        # position of each rating among its doctor's: its index minus where they start
        pos = np.arange(len(idx)) - np.searchsorted(a_sorted, a_sorted, side="left")
        win = pos // size
    else:
        day = at.to_numpy()[idx].astype("datetime64[D]")
        win = day
    v = value[idx]
    maj = majority[idx] if len(majority) else np.zeros(0)
    known = {str(k): float(x) for k, x in (answers or {}).items()}
    pid = frame[C.PAIR_ID].astype(str).to_numpy()[idx]
    truth = np.array([known.get(p, np.nan) for p in pid]) if known else np.full(len(idx), np.nan)
    is_check = ~np.isnan(truth)
    with np.errstate(invalid="ignore"):
        correct = is_check & ~np.isnan(v) & (np.abs(v - truth) <= tolerance)
        has_maj = ~np.isnan(maj) & ~np.isnan(v)
        agree = has_maj & (v == maj)
    elapsed = (
        pd.to_numeric(frame[C.ELAPSED_MS], errors="coerce").to_numpy(dtype=np.float64)[idx]
        if C.ELAPSED_MS in frame.columns
        else np.full(len(idx), np.nan)
    )
    gv = (
        pd.to_numeric(frame[GUIDELINE_VERSION], errors="coerce").to_numpy(dtype=np.float64)[idx]
        if GUIDELINE_VERSION in frame.columns
        else np.full(len(idx), np.nan)
    )
    work = pd.DataFrame(
        {
            C.ANNOTATOR: who,
            "window": win,
            "t": at.to_numpy()[idx],
            "dk": np.isnan(v),
            "check": is_check,
            "correct": correct,
            "has_maj": has_maj,
            "agree": agree,
            "sec": elapsed / 1000.0,
            "gv": gv,
        }
    )
    g = work.groupby([C.ANNOTATOR, "window"], sort=True)
    out = g.agg(
        start=("t", "min"),
        end=("t", "max"),
        n_ratings=("t", "size"),
        n_checks=("check", "sum"),
        n_correct=("correct", "sum"),
        n_with_majority=("has_maj", "sum"),
        n_agree=("agree", "sum"),
        dont_know_share=("dk", "mean"),
        median_seconds=("sec", "median"),
        guideline_version=("gv", "max"),
    ).reset_index()
    for c in ("n_ratings", "n_checks", "n_correct", "n_with_majority", "n_agree"):
        out[c] = out[c].astype("int64")
    nc, nm = out["n_checks"].to_numpy(), out["n_with_majority"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["check_accuracy"] = np.where(nc > 0, out["n_correct"] / np.maximum(nc, 1), np.nan)
        out["majority_agreement"] = np.where(nm > 0, out["n_agree"] / np.maximum(nm, 1), np.nan)
    out["check_ci_low"], out["check_ci_high"] = _wilson(out["n_correct"].to_numpy(), nc)
    out["agreement_ci_low"], out["agreement_ci_high"] = _wilson(out["n_agree"].to_numpy(), nm)
    need = size / 2 if by == "count" else MIN_DAY_RATINGS
    out["judged"] = out["n_ratings"].to_numpy() >= need
    if by == "day":
        out["window"] = pd.to_datetime(out["window"]).dt.date
    return Windows(out[WINDOW_COLUMNS], by, size, tuple(notes))


def _window_text(window: object) -> str:
    """A window as a sentence names it: its number, or its day (daily windows) as given."""
    if isinstance(window, (int, np.integer)):
        return fmt_int(int(window))
    return str(window)


def check_margin(margin: object) -> float:
    """*margin* when it is an allowed drift margin (strictly between 0 and 1)."""
    return float(DRIFT_MARGIN.check(margin))


def drift_alerts(
    windows: Windows, *, margin: float = MARGIN, baseline_windows: int = BASELINE
) -> pd.DataFrame:
    """The windows where a doctor falls more than *margin* below their own baseline.

    Parameters
    ----------
    windows : Windows
        From :func:`quality_windows`.
    margin : float
        Relative drop that raises the alert (0.15: a window below 85% of the baseline);
        strictly between 0 and 1.
    baseline_windows : int
        The doctor's first judged windows pooled into the baseline.

    Returns
    -------
    DataFrame
        :data:`ALERT_COLUMNS`, one row per (doctor, window, metric) raised, in order;
        ``evidence`` says it in one sentence.

    Notes
    -----
    For a metric with :math:`k_w` successes of :math:`n_w` in window *w* and a baseline
    :math:`b = \\sum_{w \\le B} k_w / \\sum_{w \\le B} n_w` over the first *B* judged windows,
    window *w > B* raises the alert when :math:`k_w/n_w < (1 - m)\\,b` and the upper end of
    its 95% Wilson interval is below the lower end of the baseline's. On the dashboard
    benchmark's synthetic study (3 steady doctors, 2,000 windows each) 16 of 6,000 windows
    raise it (0.3%).
    """
    m = check_margin(margin)
    b = int(BASELINE_WINDOWS.check(baseline_windows))
    rows = []
    table = windows.table
    for name, w in table[table["judged"]].groupby(C.ANNOTATOR, sort=True):
        w = w.reset_index(drop=True)
        if len(w) <= b:
            continue
        base, rest = w.iloc[:b], w.iloc[b:]
        for metric, (k_col, n_col, words) in METRICS.items():
            n_base = int(base[n_col].sum())
            if n_base == 0:
                continue
            level = float(base[k_col].sum()) / n_base
            base_low, _ = wilson_interval(int(base[k_col].sum()), n_base)
            # Only the windows below the margin can raise it (k / n is the same IEEE
            # division in NumPy and Python): the rest are looked at one by one.
            ns = rest[n_col].to_numpy(dtype=np.int64)
            ks = rest[k_col].to_numpy(dtype=np.int64)
            with np.errstate(invalid="ignore", divide="ignore"):
                below = (ns >= MIN_METRIC_N) & (ks / np.maximum(ns, 1) < (1.0 - m) * level)
            for _, row in rest.iloc[np.flatnonzero(below)].iterrows():
                n = int(row[n_col])
                if n < MIN_METRIC_N:
                    continue
                k = int(row[k_col])
                val = k / n
                lo, hi = wilson_interval(k, n)
                if val < (1.0 - m) * level and hi < base_low:
                    drop = 1.0 - val / level if level > 0 else np.nan
                    rows.append(
                        {
                            C.ANNOTATOR: name,
                            "window": row["window"],
                            "metric": metric,
                            "baseline": level,
                            "value": val,
                            "ci_low": lo,
                            "ci_high": hi,
                            "n": n,
                            "drop": drop,
                            "evidence": t(
                                "{name}: {what} {value} ({k} of {n}, 95% interval "
                                "{low}-{high}) in window {window}, {drop} below their first "
                                "{b} window(s) ({baseline}).",
                                name=name,
                                what=t(words),
                                value=fmt_percent(val),
                                k=fmt_int(k),
                                n=fmt_int(n),
                                low=fmt_percent(lo),
                                high=fmt_percent(hi),
                                window=_window_text(row["window"]),
                                drop=fmt_percent(drop),
                                b=fmt_int(b),
                                baseline=fmt_percent(level),
                            ),
                        }
                    )
    return pd.DataFrame(rows, columns=ALERT_COLUMNS)


def flagged(alerts: pd.DataFrame) -> list[str]:
    """The doctors with at least one alert, sorted."""
    return sorted(set(alerts[C.ANNOTATOR].astype(str))) if len(alerts) else []
