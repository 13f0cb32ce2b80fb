"""The plain computations the statistics' coded path is checked against: each figure from
the ratings frame itself (strings, pandas group-bys, the packages that define the
coefficients), sharing nothing with :mod:`medsim_annot.stats` but the frame.

- :func:`plain_dashboard`: every dashboard table from the plain figures, in line;
- :func:`intra_rater_consistency`, :func:`straight_lining`, :func:`dont_know_share`,
  :func:`majority_vote`: the rater-quality checks and the majority by group-bys on strings;
- :func:`krippendorff_alpha`: the ``krippendorff`` package on the items x annotators matrix.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.pairs import group_columns
from data_schemas.ratings import code_ratings
from data_schemas.scales import Scale
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services.dashboard.tables import Dashboard
from medsim_annot.services.gold.table import gold_table
from medsim_annot.services.quality import QualitySettings, rater_checks, warnings_of
from medsim_annot.stats._frame import level_of


# --------------------------------------------------------------------------- rater quality
def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows by annotator name, then ``rated_at`` (missing times last), then row."""
    df = frame.reset_index(drop=True).copy()
    df["_row"] = np.arange(len(df))
    if C.RATED_AT not in df.columns:
        df[C.RATED_AT] = pd.NaT
    return df.sort_values([C.ANNOTATOR, C.RATED_AT, "_row"], kind="stable", na_position="last")


def _key(frame: pd.DataFrame) -> pd.Series:
    if C.RATING in frame.columns:
        return frame[C.RATING].astype(str)
    return frame[C.VALUE].astype("float64").map(lambda v: "nd" if np.isnan(v) else repr(v))


def intra_rater_consistency(history: pd.DataFrame, level) -> pd.DataFrame:
    """Per annotator: their first and second ratings of a pair, matched by a pandas index
    of (annotator, pair id); alpha of the two occasions by the ``krippendorff`` package."""
    df = _ordered(history)
    df["_occ"] = df.groupby([C.ANNOTATOR, C.PAIR_ID], sort=False).cumcount().to_numpy()
    df["_key"] = _key(df)
    first = df[df["_occ"] == 0].set_index([C.ANNOTATOR, C.PAIR_ID])
    second = df[df["_occ"] == 1].set_index([C.ANNOTATOR, C.PAIR_ID])
    rows = []
    for ann, sec in second.groupby(level=0, sort=True):
        fst = first.loc[sec.index]
        same = fst["_key"].to_numpy() == sec["_key"].to_numpy()
        data = np.vstack([fst[C.VALUE].to_numpy(dtype=float), sec[C.VALUE].to_numpy(dtype=float)])
        rows.append((ann, len(sec), float(same.mean()), krippendorff_alpha(data, level)))
    return pd.DataFrame(
        rows, columns=[C.ANNOTATOR, "n_duplicates", "exact_agreement", "krippendorff_alpha"]
    )


def straight_lining(ratings: pd.DataFrame, *, min_run: int = 10) -> pd.DataFrame:
    """Runs of equal consecutive rating texts per annotator, by comparing strings."""
    df = _ordered(ratings)
    keys = _key(df)
    key, ann = keys.to_numpy(), df[C.ANNOTATOR].to_numpy()
    cols = [C.ANNOTATOR, C.RATING, "length", "first_pair_id", "start", "end"]
    if len(df) == 0:
        return pd.DataFrame(columns=cols)
    runs = []
    start = 0
    for i in range(1, len(df) + 1):
        if i == len(df) or key[i] != key[i - 1] or ann[i] != ann[i - 1]:
            if i - start >= min_run:
                runs.append(
                    (
                        ann[start],
                        key[start],
                        i - start,
                        df[C.PAIR_ID].iloc[start],
                        df[C.RATED_AT].iloc[start],
                        df[C.RATED_AT].iloc[i - 1],
                    )
                )
            start = i
    if not runs:
        return pd.DataFrame(
            {
                C.ANNOTATOR: np.zeros(0, dtype=object),
                C.RATING: np.zeros(0, dtype=object),
                "length": np.zeros(0, dtype=np.int64),
                "first_pair_id": df[C.PAIR_ID].iloc[:0].to_numpy(),
                "start": df[C.RATED_AT].iloc[:0].to_numpy(),
                "end": df[C.RATED_AT].iloc[:0].to_numpy(),
            }
        )
    at = df[C.RATED_AT].dtype
    return pd.DataFrame(runs, columns=cols).astype({"length": np.int64, "start": at, "end": at})


def dont_know_share(ratings: pd.DataFrame) -> pd.DataFrame:
    nd = (
        ratings[C.NO_DECISION].astype(bool)
        if C.NO_DECISION in ratings.columns
        else ratings[C.VALUE].isna()
    )
    g = pd.DataFrame({C.ANNOTATOR: ratings[C.ANNOTATOR].to_numpy(), "nd": nd.to_numpy()})
    out = g.groupby(C.ANNOTATOR, sort=True)["nd"].agg(["size", "sum"]).reset_index()
    out.columns = [C.ANNOTATOR, "n_ratings", "n_no_decision"]
    out["dont_know_share"] = out["n_no_decision"] / out["n_ratings"]
    return out


# --------------------------------------------------------------------------- agreement
def krippendorff_alpha(data: np.ndarray | pd.DataFrame, level) -> float:
    """The ``krippendorff`` package's alpha (NaN where it is undefined) of reliability data
    (annotators x items) or of a ratings frame."""
    if isinstance(data, pd.DataFrame):
        data = data.pivot_table(
            index=C.ANNOTATOR, columns=C.PAIR_ID, values=C.VALUE, aggfunc="first", dropna=False
        ).to_numpy(dtype=float)
    data = np.asarray(data, dtype=float)
    values = np.unique(data[~np.isnan(data)])
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    paired = data[:, pairable]
    if len(values) < 2 or len(np.unique(paired[~np.isnan(paired)])) < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level_of(level)))


def majority_vote(ratings: pd.DataFrame, *, rule: str = "strict") -> pd.Series:
    """The majority code per pair by counting each pair's ratings (NaN: no value wins)."""
    out = {}
    for pid, g in ratings.groupby(C.PAIR_ID, sort=True):
        decisive = g[C.VALUE].dropna()
        base = len(g) if rule == "strict" else len(decisive)
        counts = decisive.value_counts()
        win = counts[counts * 2 > base]
        out[pid] = float(win.index[0]) if len(win) else np.nan
    return pd.Series(out, name="majority", dtype="float64")


# --------------------------------------------------------------------------- the dashboard
def plain_dashboard(
    pairs: pd.DataFrame,
    current: pd.DataFrame,
    scale: Scale,
    *,
    history: pd.DataFrame | None = None,
    check_answers: dict[str, str] | None = None,
) -> Dashboard:
    """Every dashboard table in line, each statistic given its own frame (so coding its
    own), the history's checks by the plain functions above."""
    settings = QualitySettings()
    gt = gold_table(pairs, current, scale)
    ratings = gt.ratings
    report, basis = agreement_svc.design_agreement(ratings, scale)
    reasons: dict[str, str] = {}
    audit = None
    has_labels = C.AUTO_LABEL in pairs.columns and pairs[C.AUTO_LABEL].notna().any()
    if not scale.has_polarity:
        reasons["audit"] = f"the {scale.name} scale has no positive/negative values"
    elif not has_labels:
        reasons["audit"] = "the pairs have no automatic labels"
    else:
        audit = agreement_svc.audit_report(pairs, ratings, scale, by=group_columns(pairs))
    if history is not None and len(history):
        hist = history.sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable")
        hist = hist if C.VALUE in hist.columns else code_ratings(hist, scale)
        checks_of = hist
    else:
        hist, checks_of = ratings, current
    hist = _naive_times(hist)
    cons = intra_rater_consistency(hist, scale)
    # The library's consistency frame has a reason column: NaN alphas give theirs.
    lib = agreement_svc.rater_quality_report(ratings, scale, history=hist, iaa=report.per_annotator)
    checked = (lib.consistency, straight_lining(hist))
    pd.testing.assert_frame_equal(
        lib.consistency.drop(columns="reason"), cons, check_dtype=False, obj="consistency"
    )
    quality = agreement_svc.rater_quality_report(
        ratings, scale, history=hist, iaa=report.per_annotator, checked=checked
    )
    pd.testing.assert_frame_equal(
        quality.per_annotator[list(dont_know_share(ratings).columns)],
        dont_know_share(ratings),
        check_dtype=False,
        obj="dont_know_share",
    )
    checks = rater_checks(checks_of, scale, check_answers or {}, settings)
    return Dashboard(
        "",
        scale,
        "binary" if scale.has_polarity else "graded",
        (0, 0),
        report,
        audit,
        quality,
        gt,
        0,
        reasons,
        agreement_basis=basis,
        rater_checks=checks,
        check_warnings=tuple(warnings_of(checks, settings)),
        quality_settings=settings,
    )


def _naive_times(hist: pd.DataFrame) -> pd.DataFrame:
    if C.RATED_AT in hist.columns and isinstance(hist[C.RATED_AT].dtype, pd.DatetimeTZDtype):
        return hist.assign(
            **{C.RATED_AT: hist[C.RATED_AT].dt.tz_convert("UTC").dt.tz_localize(None)}
        )
    return hist
