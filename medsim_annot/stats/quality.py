"""Rater quality (Chiu et al. 2018 practice): intra-rater consistency on items shown twice,
straight-lining (runs of identical consecutive ratings), "don't know" share, and outlier
annotators by leave-one-out IAA-1."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.scales import Scale

from ._frame import CodedRatings, check_frame, coded, frame_of
from .alpha import krippendorff_alpha
from .simlex import simlex_agreement

MIN_RUN = 10


def _with_order(rows: CodedRatings) -> pd.DataFrame:
    """The frame of *rows* ordered by annotator (name order), then ``rated_at`` (missing
    times last), then row, sorted on integers; ``_row`` numbers the rows of the frame."""
    df = rows.frame.reset_index(drop=True).copy()
    df["_row"] = np.arange(len(df))
    if C.RATED_AT not in df.columns:
        df[C.RATED_AT] = pd.NaT
    at = df[C.RATED_AT]
    if not pd.api.types.is_datetime64_any_dtype(at):
        at = pd.to_datetime(at, utc=True)
    t = np.asarray(at.array.asi8)
    t = np.where(at.isna().to_numpy(), np.iinfo(np.int64).max, t)
    return df.take(np.lexsort((t, rows.annotator)))  # lexsort is stable: row order breaks ties


def _occurrence(df: pd.DataFrame, rows: CodedRatings) -> np.ndarray:
    """The how-many-th rating of its (annotator, pair) each row of *df* is (0-based, in the
    order of *df*, whose ``_row`` indexes the rows of *rows*):
    ``groupby([annotator, pair_id]).cumcount()`` on integer codes."""
    at = df["_row"].to_numpy()
    key = _pair_key(rows.item[at], rows.annotator[at])
    o = np.argsort(key, kind="stable")
    ks = key[o]
    n = len(ks)
    start = np.ones(n, dtype=bool)
    start[1:] = ks[1:] != ks[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    occ = np.empty(n, dtype=np.int64)
    occ[o] = np.arange(n) - first
    return occ


def _pair_key(pair: np.ndarray, who: np.ndarray) -> np.ndarray:
    """One integer per (annotator, pair)."""
    return who * (int(pair.max()) + 1 if len(pair) else 1) + pair


def _coded_rows(data: pd.DataFrame | CodedRatings) -> CodedRatings:
    """*data* coded (its rows as they are: a history keeps every rating)."""
    if not isinstance(data, CodedRatings):
        check_frame(data)
    return coded(data)


def _key(frame: pd.DataFrame) -> pd.Series:
    """What "identical rating" means: the raw rating when present, else the code (NaN for
    no decision compares equal to NaN)."""
    if C.RATING in frame.columns:
        return frame[C.RATING].astype(str)
    return frame[C.VALUE].astype("float64").map(lambda v: "nd" if np.isnan(v) else repr(v))


def intra_rater_consistency(
    history: pd.DataFrame | CodedRatings, level: Scale | str
) -> pd.DataFrame:
    """Agreement of each annotator with themself on items they rated twice.

    Parameters
    ----------
    history : DataFrame or CodedRatings
        All saved ratings (or their codes) (not only the latest), with ``pair_id``, ``annotator``, ``value``
        and ``rated_at`` (and ``rating``): a duplicate slot is the same ``pair_id`` rated
        again by the same annotator. The first two ratings (by ``rated_at``) are compared.
    level : Scale or level name
        For the alpha between the first and the second rating.

    Returns
    -------
    DataFrame
        Per annotator with duplicates: ``annotator``, ``n_duplicates``, ``exact_agreement``
        (share of identical ratings, "don't know" twice counts as identical) and
        ``krippendorff_alpha`` (occasions as two raters; NaN with ``reason`` if undefined).

    Notes
    -----
    Test-retest agreement: :math:`\\frac{1}{D}\\sum_d [x_{d,1} = x_{d,2}]` and alpha over
    the D duplicated items with the two occasions as observers.

    References
    ----------
    Chiu, B., Pyysalo, S., Vulić, I., & Korhonen, A. (2018). Bio-SimVerb and Bio-SimLex.
    BMC Bioinformatics, 19, 33. https://doi.org/10.1186/s12859-018-2039-z

    Examples
    --------
    >>> h = pd.DataFrame({"pair_id": ["p1", "p2", "p1", "p2"], "annotator": ["A"] * 4,
    ...                   "value": [1.0, 0.0, 1.0, 1.0],
    ...                   "rated_at": pd.to_datetime([1, 2, 3, 4], unit="D", utc=True)})
    >>> intra_rater_consistency(h, "nominal")[["annotator", "n_duplicates", "exact_agreement"]]
      annotator  n_duplicates  exact_agreement
    0         A             2              0.5
    """
    hist = _coded_rows(history)
    df = _with_order(hist)
    df["_occ"] = _occurrence(df, hist)
    df["_key"] = _key(df)
    rows = []
    for ann, fst, sec in _repeats(df, hist):
        same = fst["_key"].to_numpy() == sec["_key"].to_numpy()
        est = krippendorff_alpha(
            np.vstack([fst[C.VALUE].to_numpy(dtype=float), sec[C.VALUE].to_numpy(dtype=float)]),
            level,
        )
        rows.append((ann, len(sec), float(same.mean()), est.value, est.reason))
    return pd.DataFrame(
        rows,
        columns=[C.ANNOTATOR, "n_duplicates", "exact_agreement", "krippendorff_alpha", "reason"],
    )


def _repeats(df: pd.DataFrame, rows: CodedRatings):
    """Per annotator (in name order): the annotator, their first ratings of the pairs they
    rated twice and the second ones (aligned, in the order of the second ones), matched on
    integer codes."""
    occ = df["_occ"].to_numpy()
    at = df["_row"].to_numpy()
    who = rows.annotator[at]
    key = _pair_key(rows.item[at], who)
    at_second = np.flatnonzero(occ == 1)
    if not len(at_second):
        return
    at_first = np.flatnonzero(occ == 0)
    by_key = np.argsort(key[at_first], kind="stable")
    match = at_first[by_key[np.searchsorted(key[at_first], key[at_second], sorter=by_key)]]
    order = np.argsort(who[at_second], kind="stable")  # annotators in name order
    sec_rows, fst_rows, sec_who = at_second[order], match[order], who[at_second][order]
    bounds = np.flatnonzero(np.diff(sec_who)) + 1
    for s_part, f_part in zip(np.split(sec_rows, bounds), np.split(fst_rows, bounds)):
        sec = df.iloc[s_part]
        yield sec[C.ANNOTATOR].iloc[0], df.iloc[f_part], sec


def straight_lining(
    ratings: pd.DataFrame | CodedRatings, *, min_run: int = MIN_RUN
) -> pd.DataFrame:
    """Runs of *min_run* or more identical consecutive ratings by one annotator.

    Ratings are ordered by ``rated_at`` per annotator (rows without a time keep file order,
    after the timed ones). Returns one row per run: ``annotator``, ``rating``, ``length``,
    ``first_pair_id``, ``start``, ``end`` (times). *ratings*: a frame or its codes.

    Examples
    --------
    >>> r = pd.DataFrame({"pair_id": [f"p{i}" for i in range(12)], "annotator": "A",
    ...                   "value": [0.0] + [1.0] * 10 + [0.0]})
    >>> straight_lining(r)[["annotator", "rating", "length"]].values.tolist()
    [['A', '1.0', 10]]
    """
    rows = _coded_rows(ratings)
    df = _with_order(rows)
    keys = _key(df)
    # Consecutive equal ratings compared on integer codes (equal texts, equal codes).
    key = np.asarray(pd.factorize(keys)[0])
    who = rows.annotator[df["_row"].to_numpy()]
    change = (key[1:] != key[:-1]) | (who[1:] != who[:-1])
    if len(df) == 0:
        return pd.DataFrame(
            columns=[C.ANNOTATOR, C.RATING, "length", "first_pair_id", "start", "end"]
        )
    new = np.ones(len(df), dtype=bool)
    new[1:] = change
    run_id = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    lengths = np.bincount(run_id)
    long = np.flatnonzero(lengths >= min_run)
    s = starts[long]
    e = s + lengths[long] - 1
    return pd.DataFrame(
        {
            C.ANNOTATOR: df[C.ANNOTATOR].iloc[s].to_numpy(),
            C.RATING: keys.iloc[s].to_numpy(),
            "length": lengths[long],
            "first_pair_id": df[C.PAIR_ID].iloc[s].to_numpy(),
            "start": df[C.RATED_AT].iloc[s].to_numpy(),
            "end": df[C.RATED_AT].iloc[e].to_numpy(),
        }
    )


def dont_know_share(ratings: pd.DataFrame | CodedRatings) -> pd.DataFrame:
    """Per annotator: ``n_ratings``, ``n_no_decision`` and ``dont_know_share`` (their ratio).

    Examples
    --------
    >>> r = pd.DataFrame({"pair_id": ["a", "b", "c", "d"], "annotator": ["A"] * 4,
    ...                   "value": [1.0, float("nan"), 0.0, 1.0]})
    >>> dont_know_share(r)["dont_know_share"].tolist()
    [0.25]

    *ratings*: a frame or its codes (counted on the annotator codes).
    """
    enc = coded(ratings)
    frame = enc.frame
    nd = (
        frame[C.NO_DECISION].to_numpy(dtype=bool)
        if C.NO_DECISION in frame.columns
        else np.isnan(enc.value)
    )
    k = enc.n_annotators
    out = pd.DataFrame(
        {
            C.ANNOTATOR: pd.Series(np.asarray(enc.annotators, dtype=object), dtype=object),
            "n_ratings": np.bincount(enc.annotator, minlength=k).astype(np.int64),
            "n_no_decision": np.bincount(enc.annotator[nd], minlength=k).astype(np.int64),
        }
    )
    out["dont_know_share"] = out["n_no_decision"] / out["n_ratings"]
    return out


def outlier_annotators(
    ratings: pd.DataFrame, *, z: float = 2.0, min_gap: float = 0.1, iaa: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Annotators whose IAA-1 is far below the others' (leave-one-out).

    For annotator *a* with IAA-1 :math:`x_a`, the others' IAA-1 values have mean
    :math:`\\mu_{-a}` and standard deviation :math:`s_{-a}`; *a* is an outlier when
    :math:`x_a < \\mu_{-a} - \\max(z\\,s_{-a},\\ \\text{min\\_gap})`. The floor *min_gap*
    keeps a tight group (tiny :math:`s_{-a}`) from flagging ordinary spread.

    *iaa*: the annotators' IAA-1 already computed for these *ratings* (a frame with
    ``annotator`` and ``iaa_1``, e.g. ``AgreementReport.per_annotator`` or
    ``simlex_agreement(ratings).per_annotator``), so that it is not computed twice.

    Returns
    -------
    DataFrame
        ``annotator``, ``iaa_1``, ``others_mean``, ``others_sd``, ``gap``, ``outlier``.

    Examples
    --------
    >>> from medsim_annot.stats import ratings_from_matrix
    >>> m = [[0, 0, 0, 3], [1, 1, 1, 0], [2, 2, 3, 1], [3, 3, 3, 2], [1, 2, 1, 3]]
    >>> outlier_annotators(ratings_from_matrix(m, annotators="ABCD"))["outlier"].tolist()
    [False, False, False, True]
    """
    per = (
        simlex_agreement(ratings).per_annotator
        if iaa is None
        else iaa.sort_values(C.ANNOTATOR, kind="stable")
    )
    x = per["iaa_1"].to_numpy(dtype=float)
    rows = []
    for i, ann in enumerate(per[C.ANNOTATOR]):
        others = np.delete(x, i)
        others = others[~np.isnan(others)]
        mu = float(others.mean()) if len(others) else np.nan
        sd = float(others.std(ddof=1)) if len(others) > 1 else 0.0
        gap = mu - x[i]
        flag = bool(len(others) > 0 and not np.isnan(x[i]) and gap > max(z * sd, min_gap))
        rows.append((ann, x[i], mu, sd, gap, flag))
    return pd.DataFrame(
        rows, columns=[C.ANNOTATOR, "iaa_1", "others_mean", "others_sd", "gap", "outlier"]
    )


@dataclass
class RaterQuality:
    """Per-annotator quality: ``per_annotator`` (don't-know share, IAA-1, outlier flag,
    duplicates and their agreement, longest run) plus the ``runs`` of straight-lining."""

    per_annotator: pd.DataFrame
    runs: pd.DataFrame
    consistency: pd.DataFrame
    reasons: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "per_annotator": self.per_annotator.to_dict(orient="records"),
            "runs": self.runs.astype({"start": str, "end": str}).to_dict(orient="records")
            if len(self.runs)
            else [],
        }


def history_checks(
    history: pd.DataFrame | CodedRatings, level: Scale | str, *, min_run: int = MIN_RUN
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two checks of :func:`rater_quality` that read the rating history:
    (:func:`intra_rater_consistency`, :func:`straight_lining`). They need neither the
    current ratings nor the IAA, so a caller may compute them beside those (the dashboard
    does, in a second thread) and hand them to :func:`rater_quality` as *checked*. The
    history is coded once for both."""
    hist = _coded_rows(history)
    return intra_rater_consistency(hist, level), straight_lining(hist, min_run=min_run)


def rater_quality(
    ratings: pd.DataFrame | CodedRatings,
    level: Scale | str,
    *,
    history: pd.DataFrame | CodedRatings | None = None,
    min_run: int = MIN_RUN,
    iaa: pd.DataFrame | None = None,
    checked: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> RaterQuality:
    """All rater-quality checks in one table.

    *ratings* is the current ratings frame; *history* (all saved ratings, with repeats) is
    used for duplicates and runs when given, else *ratings*. *iaa*: the IAA-1 per annotator
    already computed for *ratings* (see :func:`outlier_annotators`). *ratings* and
    *history* may be frames or their codes. *checked*:
    ``history_checks(history or ratings, level, min_run=min_run)`` when the caller has
    computed it.
    """
    hist = ratings if history is None else history
    share = dont_know_share(ratings)
    out = outlier_annotators(frame_of(ratings), iaa=iaa)[[C.ANNOTATOR, "iaa_1", "outlier"]]
    cons, runs = checked if checked is not None else history_checks(hist, level, min_run=min_run)
    longest = (
        runs.groupby(C.ANNOTATOR)["length"].max().rename("longest_run")
        if len(runs)
        else pd.Series(dtype="int64", name="longest_run")
    )
    per = (
        share.merge(out, on=C.ANNOTATOR, how="left")
        .merge(cons[[C.ANNOTATOR, "n_duplicates", "exact_agreement"]], on=C.ANNOTATOR, how="left")
        .merge(
            longest.reset_index().rename(columns={"index": C.ANNOTATOR}), on=C.ANNOTATOR, how="left"
        )
    )
    per["n_duplicates"] = per["n_duplicates"].fillna(0).astype("int64")
    per["longest_run"] = per["longest_run"].fillna(0).astype("int64")
    per["outlier"] = per["outlier"].fillna(False).astype(bool)
    reasons = {}
    if per["n_duplicates"].sum() == 0:
        reasons["intra_rater"] = "no item was rated twice by the same annotator"
    return RaterQuality(per, runs, cons, reasons)
