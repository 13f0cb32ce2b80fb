"""The gold table: one row per pair with every annotator's current rating, the verdict
(majority; mean and median on numeric scales), agreement flags, the model columns and the
provenance of each label (:func:`gold_table`, :func:`study_gold_table`).

The per-pair table is also what the dashboard's disagreement explorer shows, so the page and
the exported file can never disagree about a pair's flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.gold import (
    ADJUDICATION_REASON_COLUMN,
    ADJUDICATOR_COLUMN,
    AUDIT_LABELS,
    CALIBRATION_COLUMN,
    LABEL_COLUMN,
    LABEL_EVENT_COLUMN,
    LABEL_SOURCE_COLUMN,
    rater_column,
)

# The gold file's column names, as the dashboard and the pages import them from here.
from data_schemas.gold import FLAGS as FLAGS
from data_schemas.gold import MODEL_COLUMNS as MODEL_COLUMNS
from data_schemas.gold import RATER_PREFIX as RATER_PREFIX
from data_schemas.options import MAJORITY_RULES
from data_schemas.ratings import code_ratings as code_ratings  # the dashboard's import
from data_schemas.scales import Scale
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.quality import drop_rushed
from medsim_annot.stats import majority_vote
from medsim_annot.stats._frame import CodedRatings, coded_ratings
from medsim_annot.stats.aggregate import ModelGold, model_gold
from medsim_annot.stats.majority import Rule
from medsim_annot.storage import Engine


@dataclass
class GoldTable:
    """The per-pair table of a study and what it was built from.

    ``table``: one row per pair (see :func:`gold_table`); ``ratings``: the statistics'
    ratings frame; ``current``: current ratings (with comments); ``scale``; ``annotators``
    (sorted names that have at least one current rating).
    """

    table: pd.DataFrame
    ratings: pd.DataFrame
    current: pd.DataFrame
    scale: Scale
    annotators: list[str]
    #: Ratings left out as rushed before the table was built (``--exclude-rushed``).
    rushed_excluded: int = 0
    #: The codes of ``ratings`` (the latest rating per pair and annotator, of the study's
    #: pairs), which every statistic of the same ratings takes (None: not kept).
    codes: CodedRatings | None = field(default=None, repr=False, compare=False)


def _present_columns(pairs: pd.DataFrame, cols) -> list[str]:
    return [
        c for c in cols if c in pairs.columns and (pairs[c].astype("string").fillna("") != "").any()
    ]


def gold_table(
    pairs: pd.DataFrame,
    current: pd.DataFrame,
    scale: Scale,
    *,
    majority: str = "strict",
    coded: CodedRatings | None = None,
) -> GoldTable:
    """One row per pair with every annotator's current rating, the verdict and the flags.

    Parameters
    ----------
    pairs : DataFrame
        The study's pairs in file order (``pair_id``, ``term_1``, ``term_2``, optional
        ``auto_label``, concept ids, group columns and metadata columns).
    current : DataFrame
        Current ratings, long: ``pair_id``, ``annotator``, ``rating`` (scale value), and
        optionally ``rated_at``, ``unclear``, ``comment``.
    scale : Scale
        The study's scale.
    majority : {"strict", "decisive"}
        Majority rule (see :func:`medsim_annot.stats.majority_vote`).
    coded : CodedRatings, optional
        ``coded_ratings(current, scale)``, when the caller has built it (once per read);
        when every rated pair is among *pairs*, the table's ``codes`` are this very object.

    Returns
    -------
    GoldTable
        ``table`` columns, in order: ``pair_id``, ``term_1``, ``term_2``, the concept ids and
        group columns present, other metadata columns (e.g. EHR-Rel ``CUI_1``), ``auto_label``
        (when the study has automatic labels), ``rater_<name>`` per annotator (sorted by
        name; the scale value, empty when not rated), ``majority`` (scale value, empty when
        no value wins), ``mean`` and ``median`` (numeric scales), ``n_ratings`` (cast),
        ``n_decisive`` and the flags :data:`FLAGS`.

    Notes
    -----
    Flags, over the current ratings cast for the pair (no-decision ratings such as "don't
    know" count as a rating value of their own):

    * ``no_majority``: rated, but no value has the majority;
    * ``all_different``: at least two ratings and no two are the same;
    * ``unanimous``: at least two ratings, all identical and decisive;
    * ``unclear_any``: some annotator flagged the pair "unclear meaning";
    * ``auto_label_disagrees`` / ``verified``: the majority maps to the other / the same
      automatic label (scales with positive and negative values; both false when there is
      no majority or no automatic label).

    Examples
    --------
    >>> from data_schemas.scales import BINARY
    >>> pairs = pd.DataFrame({"pair_id": ["a", "b"], "term_1": ["x", "y"],
    ...                       "term_2": ["x2", "y2"], "auto_label": [1, 0]})
    >>> cur = pd.DataFrame({"pair_id": ["a", "a", "a", "b", "b", "b"],
    ...                     "annotator": ["A", "B", "C"] * 2,
    ...                     "rating": ["same", "same", "dont_know",
    ...                                "same", "not_same", "dont_know"]})
    >>> t = gold_table(pairs, cur, BINARY).table
    >>> t[["pair_id", "rater_C", "majority", "verified", "all_different"]].values.tolist()
    [['a', 'dont_know', 'same', True, False], ['b', 'dont_know', None, False, True]]
    """
    MAJORITY_RULES.check(majority)
    pairs = pairs.reset_index(drop=True)
    ids = pairs[C.PAIR_ID].astype(str).to_numpy()
    n = len(ids)
    cur = current.reset_index(drop=True)
    # Pair ids and annotators factorized once; the latest rating per (pair, annotator), the
    # rows' order, the annotators' columns and every statistic below work on those codes.
    every_rated = coded if coded is not None else coded_ratings(cur, scale)
    items = pd.Index(ids)
    # The distinct pair ids looked up, not every rating's.
    where = items.get_indexer(np.asarray(every_rated.items, dtype=object))
    row = where[every_rated.item] if len(every_rated) else np.zeros(0, dtype=np.int64)
    keep = row >= 0
    enc = every_rated.rows(keep)  # itself when every rated pair is a pair of the study
    latest, row = enc.frame, row[keep]
    ann_codes, anns = enc.annotator, enc.annotators
    annotators = [str(a) for a in anns]

    numeric = scale.numeric
    out = {}
    lead = [C.PAIR_ID, C.TERM_1, C.TERM_2]
    ids_groups = _present_columns(pairs, (C.CONCEPT_ID_1, C.CONCEPT_ID_2, *C.GROUP_COLUMNS))
    known = set(lead) | {C.AUTO_LABEL, C.CONCEPT_ID_1, C.CONCEPT_ID_2, *C.GROUP_COLUMNS}
    extra = [c for c in pairs.columns if c not in known]
    for c in lead + ids_groups + extra:
        out[c] = pairs[c] if c in pairs.columns else pd.Series([""] * n, dtype=object)
    has_label = C.AUTO_LABEL in pairs.columns and pairs[C.AUTO_LABEL].notna().any()
    label = (
        pd.to_numeric(pairs[C.AUTO_LABEL], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        if C.AUTO_LABEL in pairs.columns
        else np.full(n, np.nan)
    )
    if has_label:
        out[C.AUTO_LABEL] = pd.array(pairs[C.AUTO_LABEL].tolist(), dtype="Int64")

    # Each distinct rating value is converted once (100,000s of ratings on the dashboard);
    # a text column without missing values is factorized as it is (the same codes and
    # values, in order of first appearance, without an object array).
    if latest[C.RATING].dtype == "str" and not latest[C.RATING].hasnans:
        rcode, runiq = pd.factorize(latest[C.RATING])
        runiq = np.asarray(runiq, dtype=object)
    else:
        raw = latest[C.RATING].to_numpy(dtype=object)
        rcode, runiq = pd.factorize(raw, use_na_sentinel=False)
    if numeric:
        shown = np.array([float(v) for v in runiq], dtype=np.float64)
    else:
        shown = np.array([str(Scale.display(v)) for v in runiq] + [None], dtype=object)[:-1]
    for j, name in enumerate(annotators):
        sel = ann_codes == j
        col = np.full(n, np.nan) if numeric else np.full(n, None, dtype=object)
        col[row[sel]] = shown[rcode[sel]]
        out[rater_column(name)] = col if numeric else pd.Series(col, dtype=object)

    mv = majority_vote(enc, rule=cast(Rule, majority), numeric=numeric, items=items)
    major_code = mv["majority"].to_numpy(dtype=np.float64)
    n_cast = mv["n_ratings"].to_numpy(dtype=np.int64)
    code_to_value = scale.decisive_labels()
    mcode, muniq = pd.factorize(major_code, use_na_sentinel=False)
    if numeric:
        mval = np.array(
            [code_to_value.get(c, c) if not np.isnan(c) else np.nan for c in muniq],
            dtype=np.float64,
        )
        out["majority"] = mval[mcode] if len(mcode) else np.zeros(0)
        out["mean"] = mv["mean"].to_numpy(dtype=np.float64)
        out["median"] = mv["median"].to_numpy(dtype=np.float64)
    else:
        mtext = np.array(
            [None if np.isnan(c) else str(Scale.display(code_to_value[c])) for c in muniq] + [None],
            dtype=object,
        )[:-1]
        out["majority"] = pd.Series(
            mtext[mcode] if len(mcode) else np.zeros(0, dtype=object), dtype=object
        )
    out["n_ratings"] = n_cast
    out["n_decisive"] = mv["n_decisive"].to_numpy(dtype=np.int64)

    # Distinct rating values per pair (no decision is a value of its own).
    # (pair, value) combinations present: a small n x values table, not a sort.
    seen = np.zeros(n * (len(runiq) + 1), dtype=bool)
    seen[row.astype(np.int64) * (len(runiq) + 1) + rcode] = True
    n_distinct = seen.reshape(n, len(runiq) + 1).sum(axis=1)
    nd = latest[C.NO_DECISION].to_numpy(dtype=bool)
    n_nd = np.bincount(row[nd], minlength=n)
    unclear = (
        latest[C.UNCLEAR].to_numpy(dtype=bool)
        if C.UNCLEAR in latest.columns
        else np.zeros(len(latest), dtype=bool)
    )
    out["no_majority"] = (n_cast > 0) & np.isnan(major_code)
    out["all_different"] = (n_cast >= 2) & (n_distinct == n_cast)
    out["unanimous"] = (n_cast >= 2) & (n_distinct == 1) & (n_nd == 0)
    out["unclear_any"] = np.bincount(row[unclear], minlength=n) > 0
    if scale.has_polarity:
        pos, neg = scale.code(scale.positive), scale.code(scale.negative)
        truth = np.where(major_code == pos, 1.0, np.where(major_code == neg, 0.0, np.nan))
    else:
        truth = np.full(n, np.nan)
    both = ~np.isnan(truth) & ~np.isnan(label)
    out["auto_label_disagrees"] = both & (truth != label)
    out["verified"] = both & (truth == label)
    table = pd.DataFrame(out)
    cur_out = cur.copy()
    return GoldTable(table, latest.reset_index(drop=True), cur_out, scale, annotators, codes=enc)


def add_model_columns(gt: GoldTable, method: str, *, fit: ModelGold | None = None) -> int:
    """Add :data:`MODEL_COLUMNS` from a Dawid–Skene or MACE fit (crowd-kit) of the current
    ratings to ``gt.table`` (in place); returns how many pairs the model labels differently
    from the majority (pairs without a majority count when the model gives them a label).
    *fit*: ``model_gold(gt.ratings, method)`` when the caller has it already (fitting is the
    expensive part, so a caller that also shows the doctors' figures fits once)."""
    if fit is None:
        fit = model_gold(gt.ratings, method)
    table = gt.table
    by_pair = fit.labels.set_index(C.PAIR_ID)
    ids = table[C.PAIR_ID].astype(str)
    code = by_pair["label"].reindex(ids).to_numpy(dtype=np.float64)
    post = by_pair["posterior"].reindex(ids).to_numpy(dtype=np.float64)
    scale = gt.scale
    names: dict[float, str] = {}
    for o in scale.options:
        if o.code is not None and not scale.is_no_decision(o.value):
            names.setdefault(float(o.code), str(Scale.display(o.value)))
    label = pd.Series([None if np.isnan(c) else names.get(c) for c in code], dtype=object)
    major = table["majority"].astype(object).where(table["majority"].notna(), None)
    differs = np.array(
        [lab is not None and lab != maj for lab, maj in zip(label, major)], dtype=bool
    )
    table["model_label"] = label.to_numpy()
    table["model_posterior"] = np.round(post, 6)
    table["model_differs_from_majority"] = differs
    return int(differs.sum())


def add_provenance(
    gt: GoldTable,
    decisions: pd.DataFrame,
    *,
    tiebreak_pairs: set[str] | frozenset[str] = frozenset(),
    audit_label: str = "majority",
) -> None:
    """Add the provenance columns :data:`~data_schemas.gold.PROVENANCE_COLUMNS` to
    ``gt.table`` (in place, last but for the calibration flag): the final ``label`` and its ``label_source`` (see
    :data:`~data_schemas.gold.LABEL_SOURCES`), and for a pair with a decision (*decisions*:
    the current decision per pair, :func:`medsim_annot.services.adjudication.decisions.current_decisions`)
    the adjudicator, the reason and the id of the event that recorded it.

    The majority, the flags and the raters' columns stay the raters' own: agreement is
    computed on them. With *audit_label* ``adjudicated`` the audit flags ``verified`` and
    ``auto_label_disagrees`` compare the automatic label with the final label instead of the
    majority (so an adjudicated pair is audited on its decision).

    >>> from data_schemas.scales import BINARY
    >>> pairs = pd.DataFrame({"pair_id": ["a", "b", "c"], "term_1": ["x", "y", "z"],
    ...                       "term_2": ["x2", "y2", "z2"]})
    >>> cur = pd.DataFrame({"pair_id": ["a", "a", "b", "b", "c", "c", "c"],
    ...                     "annotator": ["A", "B", "A", "B", "A", "B", "C"],
    ...                     "rating": ["same", "same", "same", "not_same",
    ...                                "same", "not_same", "not_same"]})
    >>> gt = gold_table(pairs, cur, BINARY)
    >>> dec = pd.DataFrame({"pair_id": ["b"], "label": ["not_same"], "adjudicator": ["Dr K"],
    ...                     "reason": ["rater_error"], "event_id": [7]})
    >>> add_provenance(gt, dec, tiebreak_pairs={"c"})
    >>> gt.table[["label", "label_source", "adjudicator"]].values.tolist()
    [['same', 'unanimous', None], ['not_same', 'adjudicated', 'Dr K'], ['not_same', 'tiebreak', None]]
    """
    AUDIT_LABELS.check(audit_label)
    table = gt.table
    scale = gt.scale
    ids = table[C.PAIR_ID].astype(str).to_numpy()
    n = len(ids)
    major = table["majority"]
    has_major = major.notna().to_numpy()
    label = major.to_numpy(dtype=np.float64 if scale.numeric else object).copy()
    source = np.where(
        has_major,
        np.where(
            table["unanimous"].to_numpy(dtype=bool),
            "unanimous",
            np.where(np.isin(ids, list(tiebreak_pairs)), "tiebreak", "majority"),
        ),
        "unresolved",
    ).astype(object)
    if "model_label" in table.columns:
        model = table["model_label"].to_numpy(dtype=object)
        use = ~has_major & pd.notna(model)
        label[use] = model[use]
        source[use] = "model"
    who = np.full(n, None, dtype=object)
    why = np.full(n, None, dtype=object)
    event = pd.array([None] * n, dtype="Int64")
    if len(decisions):
        by_pair = decisions.set_index(decisions[C.PAIR_ID].astype(str))
        pos = pd.Index(by_pair.index).get_indexer(ids)
        hit = pos >= 0
        rows = by_pair.iloc[pos[hit]]
        decided = rows["label"].to_numpy(dtype=object)
        label[hit] = [float(v) for v in decided] if scale.numeric else decided
        source[hit] = "adjudicated"
        who[hit] = rows["adjudicator"].to_numpy(dtype=object)
        why[hit] = rows["reason"].to_numpy(dtype=object)
        event[hit] = rows["event_id"].astype("int64").to_numpy()
        if audit_label == "adjudicated" and scale.has_polarity and C.AUTO_LABEL in table.columns:
            auto = pd.to_numeric(table[C.AUTO_LABEL], errors="coerce").to_numpy(dtype=np.float64)
            pos_v, neg_v = str(Scale.display(scale.positive)), str(Scale.display(scale.negative))
            truth = np.array(
                [1.0 if str(v) == pos_v else 0.0 if str(v) == neg_v else np.nan for v in label]
            )
            both = hit & ~np.isnan(truth) & ~np.isnan(auto)
            verified = table["verified"].to_numpy(dtype=bool).copy()
            disagrees = table["auto_label_disagrees"].to_numpy(dtype=bool).copy()
            verified[hit] = both[hit] & (truth[hit] == auto[hit])
            disagrees[hit] = both[hit] & (truth[hit] != auto[hit])
            table["verified"] = verified
            table["auto_label_disagrees"] = disagrees
    table[LABEL_COLUMN] = label if scale.numeric else pd.Series(label, dtype=object)
    table[LABEL_SOURCE_COLUMN] = pd.Series(source, dtype=object)
    table[ADJUDICATOR_COLUMN] = pd.Series(who, dtype=object)
    table[ADJUDICATION_REASON_COLUMN] = pd.Series(why, dtype=object)
    table[LABEL_EVENT_COLUMN] = event
    if CALIBRATION_COLUMN in table.columns:  # the 2 + 1 calibration flag stays the last column
        table[CALIBRATION_COLUMN] = table.pop(CALIBRATION_COLUMN)


def study_gold_table(
    study: str,
    *,
    majority: str = "strict",
    engine: Engine | None = None,
    exclude_rushed_ms: int | None = None,
) -> GoldTable:
    """:func:`gold_table` of a stored study (its pairs and current ratings).

    A 2 + 1 study (``--per-item 2 --tiebreak``) gets one more column,
    :data:`~data_schemas.gold.CALIBRATION_COLUMN` (boolean, last): whether the
    pair is one of the calibration pairs every annotator rated — the pairs α, κ, ICC and W
    are computed on (as the dashboard does), so ``medsim agreement`` on the exported file
    reports the dashboard's figures.

    *exclude_rushed_ms*: leave out the ratings made faster than this many milliseconds
    (``--exclude-rushed``) before anything is computed; how many went is
    ``gt.rushed_excluded``."""
    info = studies_svc.get_study(study, engine=engine)
    pairs = studies_svc.pairs_frame(info)
    cur = studies_svc.current_ratings(info)
    dropped = 0
    if exclude_rushed_ms is not None:
        cur, dropped = drop_rushed(cur, exclude_rushed_ms)
    gt = gold_table(pairs, cur, info.scale, majority=majority)
    gt.rushed_excluded = dropped
    if info.config.get("tiebreak"):
        calib = set(agreement_svc.design_agreement_pairs(info.config, cur) or ())
        gt.table[CALIBRATION_COLUMN] = (
            gt.table[C.PAIR_ID].astype(str).isin(calib).to_numpy(dtype=bool)
        )
    return gt
