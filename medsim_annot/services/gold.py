"""Gold-subset export: one row per pair with every annotator's current rating, the verdict
(majority; mean and median on numeric scales), agreement flags, filters applied in a fixed
order, and a manifest beside the file that makes the export reproducible.

The per-pair table (:func:`gold_table`) is also what the dashboard's disagreement explorer
shows, so the page and the exported file can never disagree about a pair's flags.

Filters run in this fixed order (only those asked for; counts before and after each go
into the manifest):

1. ``min_ratings`` — keep pairs with at least *K* ratings cast (no-decision ratings count);
2. ``exclude_unclear`` — drop pairs that any annotator flagged "unclear meaning";
3. ``require_majority`` — keep pairs with a majority verdict (:func:`medsim_annot.stats.majority_vote`);
4. ``exclude_all_different`` — drop pairs whose ratings are all different;
5. ``only_verified`` — keep pairs whose majority equals the automatic label.

The file is a deterministic function of the study's pairs, current ratings and the
options: the same inputs give a byte-identical file. The export time lives only in the
manifest (``FILE.manifest.json``), which also holds the SHA-256 of the file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

import medsim_annot
from data_schemas import columns as C
from data_schemas.errors import InputError
from data_schemas.gold import (
    ADJUDICATION_REASON_COLUMN,
    ADJUDICATOR_COLUMN,
    AUDIT_LABELS,
    CALIBRATION_COLUMN,
    FILTER_ORDER,
    HF_MANIFEST,
    LABEL_COLUMN,
    LABEL_EVENT_COLUMN,
    LABEL_SOURCE_COLUMN,
    GoldFilters,
    gold_manifest,
    label_source_counts,
    manifest_path,
    rater_column,
)

# The gold file's column names, as the dashboard and the pages import them from here.
from data_schemas.gold import FLAGS as FLAGS
from data_schemas.gold import MODEL_COLUMNS as MODEL_COLUMNS
from data_schemas.gold import RATER_PREFIX as RATER_PREFIX
from data_schemas.options import MAJORITY_RULES
from data_schemas.ratings import code_ratings as code_ratings  # the dashboard's import
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.io import FORMATS, format_of, write_atomic, write_table
from medsim_annot.services import adjudication as adjudication_svc
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.stats import majority_vote
from medsim_annot.stats._frame import CodedRatings, coded_ratings
from medsim_annot.stats.aggregate import ModelGold, check_method, model_gold
from medsim_annot.stats.alpha import alpha_with_interval
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
    the current decision per pair, :func:`medsim_annot.services.adjudication.current_decisions`)
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
    pairs = studies_svc.pairs_frame(study, engine=engine)
    cur = studies_svc.current_ratings(study, engine=engine)
    dropped = 0
    if exclude_rushed_ms is not None:
        from medsim_annot.services.quality import drop_rushed

        cur, dropped = drop_rushed(cur, exclude_rushed_ms)
    gt = gold_table(pairs, cur, info.scale, majority=majority)
    gt.rushed_excluded = dropped
    if info.config.get("tiebreak"):
        calib = set(agreement_svc.design_agreement_pairs(info.config, cur) or ())
        gt.table[CALIBRATION_COLUMN] = (
            gt.table[C.PAIR_ID].astype(str).isin(calib).to_numpy(dtype=bool)
        )
    return gt


def design_manifest(config: dict, table: pd.DataFrame) -> dict:
    """The design entry of a gold manifest: k of n, the 2 + 1 tiebreak, calibration pairs,
    and what agreement on the file is computed on.

    >>> t = pd.DataFrame({"pair_id": ["a", "b"], "calibration": [True, False]})
    >>> d = design_manifest({"per_item": 2, "annotators": 3, "tiebreak": {"tolerance": 0}}, t)
    >>> d["tiebreak"], d["calibration_pairs"], d["agreement_basis"]
    ({'tolerance': 0}, 1, 'calibration')
    """
    col = CALIBRATION_COLUMN
    n_calib = int(table[col].sum()) if col in table.columns else None
    return {
        "per_item": config.get("per_item"),
        "annotators": config.get("annotators"),
        "tiebreak": config.get("tiebreak"),
        "calibration_pairs": n_calib if n_calib is not None else config.get("calibration"),
        "agreement_basis": "calibration" if n_calib else "all",
    }


def filter_gold(gt: GoldTable, filters: GoldFilters) -> tuple[pd.DataFrame, list[dict]]:
    """:func:`apply_filters` on *gt*'s table, with ``only_verified`` possible exactly when the
    table has automatic labels and the scale positive and negative values (every export)."""
    has_label = C.AUTO_LABEL in gt.table.columns and gt.scale.has_polarity
    return apply_filters(gt.table, has_auto_label=has_label, **filters.asked())


def apply_filters(
    table: pd.DataFrame,
    *,
    require_majority: bool = False,
    exclude_unclear: bool = False,
    exclude_all_different: bool = False,
    only_verified: bool = False,
    min_ratings: int | None = None,
    has_auto_label: bool = True,
) -> tuple[pd.DataFrame, list[dict]]:
    """Apply the export filters in the fixed order :data:`FILTER_ORDER`.

    Returns the kept rows (file order) and one step per filter asked for:
    ``{"filter", "value", "before", "after"}``.

    Examples
    --------
    >>> t = pd.DataFrame({"n_ratings": [3, 1, 3], "no_majority": [False, False, True],
    ...                   "unclear_any": [False] * 3, "all_different": [False, False, True],
    ...                   "verified": [True, False, False]})
    >>> kept, steps = apply_filters(t, min_ratings=2, require_majority=True)
    >>> [(s["filter"], s["before"], s["after"]) for s in steps]
    [('min_ratings', 3, 2), ('require_majority', 2, 1)]
    """
    if min_ratings is not None and (int(min_ratings) != min_ratings or min_ratings < 1):
        raise UsageProblem(f"--min-ratings must be a whole number of at least 1, not {min_ratings}")
    if only_verified and not has_auto_label:
        raise UsageProblem(
            "--only-verified keeps pairs whose majority equals the automatic "
            "label, but this study has no automatic labels (or its scale has no "
            "positive/negative values)"
        )
    asked = {
        "min_ratings": min_ratings,
        "exclude_unclear": exclude_unclear,
        "require_majority": require_majority,
        "exclude_all_different": exclude_all_different,
        "only_verified": only_verified,
    }
    keep = np.ones(len(table), dtype=bool)
    steps = []
    for name in FILTER_ORDER:
        value = asked[name]
        if value is None or value is False:
            continue
        before = int(keep.sum())
        if name == "min_ratings":
            keep &= table["n_ratings"].to_numpy() >= int(value)
        elif name == "exclude_unclear":
            keep &= ~table["unclear_any"].to_numpy(dtype=bool)
        elif name == "require_majority":
            keep &= ~table["no_majority"].to_numpy(dtype=bool) & (table["n_ratings"].to_numpy() > 0)
        elif name == "exclude_all_different":
            keep &= ~table["all_different"].to_numpy(dtype=bool)
        else:
            keep &= table["verified"].to_numpy(dtype=bool)
        steps.append(
            {
                "filter": name,
                "value": int(value) if name == "min_ratings" else True,
                "before": before,
                "after": int(keep.sum()),
            }
        )
    return table[keep].reset_index(drop=True), steps


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _alpha(ratings: pd.DataFrame, scale: Scale) -> tuple[float | None, str | None]:
    if ratings.empty:
        return None, "no ratings"
    rep = agreement_svc.agreement_report(ratings, scale)
    value = float(rep.krippendorff_alpha)
    if np.isnan(value):
        return None, rep.reasons.get("krippendorff_alpha", "undefined")
    return value, None


# ---- export ------------------------------------------------------------------------------------
#: How often the export reads the study again when a rating is saved while it reads.
SNAPSHOT_ATTEMPTS = 5
HF_LICENSE_DEFAULT = "other"
#: Bootstrap resamples and seed of the Hugging Face card's alpha intervals (fixed, so the card
#: is reproducible).
ALPHA_RESAMPLES = 1000
ALPHA_SEED = 0
#: Above this many pairs the card's intervals are percentile intervals: BCa's jackknife
#: (one alpha per left-out pair) takes most of the export's time on large studies.
ALPHA_BCA_MAX_ITEMS = 5_000


@dataclass(frozen=True)
class HfOptions:
    """Options of the Hugging Face dataset folder (``--format hf``): the licence (hub
    identifier), a seeded train/test split stratified by the group columns, and the test
    share of each group."""

    license: str = HF_LICENSE_DEFAULT
    split: bool = False
    seed: int = 0
    test_size: float = 0.2


@dataclass
class GoldSnapshot:
    """What one export is built from, read as one consistent state of the study: the study,
    its per-pair table and the ratings version (count, highest rating id) the table was built
    from, so the manifest never disagrees with the file."""

    study: str
    info: studies_svc.StudyInfo
    gt: GoldTable
    version: tuple[int, int]
    #: The adjudicators' decisions (history; :func:`adjudication_svc.decisions_frame`).
    decisions: pd.DataFrame | None = None

    def provenance(self, audit_label: str = "majority") -> dict:
        """Add the provenance columns to the table (:func:`add_provenance`); returns the
        manifest's ``adjudication`` entry (the decisions the labels were built from)."""
        history = self.decisions if self.decisions is not None else pd.DataFrame()
        current = adjudication_svc.current_decisions(history) if len(history) else history
        add_provenance(
            self.gt,
            current,
            tiebreak_pairs=adjudication_svc.tiebreak_pair_ids(self.gt.current),
            audit_label=audit_label,
        )
        return {
            "decisions": int(len(history)),
            "decided_pairs": int(len(current)),
            "max_decision_id": int(history["decision_id"].max()) if len(history) else None,
            "audit_label": audit_label,
            "agreement_basis": "raters' own answers (decisions are not ratings)",
        }


def gold_snapshot(
    study: str,
    *,
    majority: str = "strict",
    engine: Engine | None = None,
    exclude_rushed_ms: int | None = None,
) -> GoldSnapshot:
    """:func:`study_gold_table` of *study* with the ratings version it was built from.

    Ratings are append-only, so an unchanged version before and after the read means no
    rating was saved in between; otherwise the study is read again (at most
    :data:`SNAPSHOT_ATTEMPTS` times)."""
    for _ in range(SNAPSHOT_ATTEMPTS):
        before = studies_svc.ratings_version(study, engine=engine)
        gt = study_gold_table(
            study, majority=majority, engine=engine, exclude_rushed_ms=exclude_rushed_ms
        )
        decisions = adjudication_svc.decisions_frame(study, engine=engine)
        after = studies_svc.ratings_version(study, engine=engine)
        if before == after:
            info = studies_svc.get_study(study, engine=engine)
            return GoldSnapshot(study, info, gt, after, decisions)
    raise UsageProblem(
        f"ratings of '{study}' were saved throughout the export's {SNAPSHOT_ATTEMPTS} reads; "
        "export again when annotation pauses"
    )


def _filters_of(filters: GoldFilters | None, options: dict) -> GoldFilters:
    if filters is not None and options:
        raise TypeError("give the filters either as GoldFilters or as keywords, not both")
    if filters is not None:
        return filters
    unknown = sorted(set(options) - {*FILTER_ORDER, "majority", "exclude_rushed", "rushed_ms"})
    if unknown:
        raise TypeError(f"export_gold() got an unexpected keyword argument '{unknown[0]}'")
    return GoldFilters(**options)


def export_gold(
    study: str,
    out: str | Path,
    fmt: str | None = None,
    *,
    filters: GoldFilters | None = None,
    aggregate: str = "majority",
    hf: HfOptions | None = None,
    audit_label: str = "majority",
    engine: Engine | None = None,
    now: dt.datetime | None = None,
    **filter_options,
) -> dict:
    """Export the gold subset of *study*: a file *out* with ``out.manifest.json`` beside it,
    or (format ``hf``) a Hugging Face dataset folder *out*.

    Parameters
    ----------
    study : str
        Study name.
    out : path
        Output file; its format is *fmt* or comes from the extension (csv, tsv, jsonl,
        parquet). With *fmt* ``hf``, the folder to write.
    fmt : str, optional
        csv, tsv, jsonl, parquet or hf.
    filters : GoldFilters, optional
        The filters, applied in the order of :data:`FILTER_ORDER` (see the module docstring),
        and the majority rule. The same can be given as keywords (``min_ratings=2``, ...).
    aggregate : {"majority", "dawid-skene", "mace"}
        ``majority`` (default, the paper-compatible verdict) or a model of the annotators
        (crowd-kit, nominal scales only; :func:`medsim_annot.stats.aggregate.model_gold`),
        which adds the columns ``model_label``, ``model_posterior`` and
        ``model_differs_from_majority`` (the filters still use the majority). File formats
        only: the hf format is refused with a model aggregate.
    hf : HfOptions, optional
        Options of the hf format; a split is refused with a file format.
    audit_label : {"majority", "adjudicated"}
        What the audit flags ``verified`` and ``auto_label_disagrees`` compare the automatic
        label with (:func:`add_provenance`); recorded in the manifest's ``adjudication``.
    now : datetime, optional
        Export time written to a file's manifest (default: the current UTC time). The hf
        folder holds no clock time.

    Returns
    -------
    dict
        The manifest (:func:`data_schemas.gold.gold_manifest`). A file's adds ``file``,
        ``format``, ``aggregate``, ``design`` (:func:`design_manifest`),
        ``krippendorff_alpha_reasons``, ``formula_escaping``, ``exported_at`` and ``sha256``;
        its ``counts`` are ``pairs``, ``rated``, ``exported``, ``annotators``, ``ratings``;
        ``krippendorff_alpha`` is ``study`` (all current ratings) and ``exported`` (the
        ratings of the exported pairs), null with a reason when undefined. The hf folder's
        (:func:`_write_hf`) adds ``format``, ``license``, ``split`` and ``files``.

    Notes
    -----
    CSV/TSV cells starting with ``=``, ``+``, ``-`` or ``@`` are prefixed with ``'``
    (:func:`medsim_annot.io.escape_formula`) against spreadsheet formula injection; numbers
    are written as numbers. Nothing is written when an option is invalid. Every export is
    recorded in the event log.
    """
    chosen = _filters_of(filters, filter_options)
    MAJORITY_RULES.check(chosen.majority)
    AUDIT_LABELS.check(audit_label)
    out = Path(out)
    if fmt == "hf":
        kind = "hf"
        if aggregate != "majority":
            raise UsageProblem(
                f"--aggregate {aggregate} applies to the file formats (csv, tsv, jsonl, "
                "parquet); the hf dataset carries the majority verdict only"
            )
        if out.exists() and not out.is_dir():
            raise UsageProblem(f"--out {out} is a file; the hf format writes a folder")
    else:
        kind = format_of(out, fmt)
        if kind not in FORMATS:
            raise InputError.single(f"unknown format '{kind}'", file=str(out))
        if hf is not None and hf.split:
            raise UsageProblem("--split applies to --format hf only")
    if chosen.exclude_rushed and chosen.rushed_ms is None:
        from dataclasses import replace

        from medsim_annot.services.quality import study_settings

        chosen = replace(chosen, rushed_ms=study_settings(study, engine=engine).rushed_ms)
    snap = gold_snapshot(
        study,
        majority=chosen.majority,
        engine=engine,
        exclude_rushed_ms=chosen.rushed_ms if chosen.exclude_rushed else None,
    )
    if kind == "hf":
        manifest, digest, n_kept = _write_hf(snap, out, chosen, hf or HfOptions(), audit_label)
    else:
        manifest = _write_file(snap, out, kind, chosen, aggregate, now, audit_label)
        digest, n_kept = manifest["sha256"], manifest["counts"]["exported"]
    from medsim_annot.services.admins import record_event

    record_event(
        "gold_exported",
        study=study,
        detail={"file": out.name, "format": kind, "pairs": n_kept, "sha256": digest},
        engine=engine,
    )
    return manifest


def _write_file(
    snap: GoldSnapshot,
    out: Path,
    kind: str,
    filters: GoldFilters,
    aggregate: str,
    now: dt.datetime | None,
    audit_label: str = "majority",
) -> dict:
    """Write the file and its manifest; returns the manifest."""
    gt = snap.gt
    scale = gt.scale
    check_method(aggregate, scale.level)
    differs = None
    if aggregate != "majority":
        differs = add_model_columns(gt, aggregate)
    adjudication = snap.provenance(audit_label)
    kept, steps = filter_gold(gt, filters)
    write_table(kept, out, kind)
    digest = sha256_file(out)
    alpha_all, why_all = _alpha(gt.ratings, scale)
    sub = gt.ratings[gt.ratings[C.PAIR_ID].isin(set(kept[C.PAIR_ID].astype(str)))]
    alpha_sub, why_sub = _alpha(sub, scale)
    when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    manifest = gold_manifest(
        study=snap.study,
        scale=scale,
        filters=filters.manifest(),
        filter_steps=steps,
        counts={
            "pairs": int(len(gt.table)),
            "rated": int((gt.table["n_ratings"] > 0).sum()),
            "exported": int(len(kept)),
            "annotators": len(gt.annotators),
            "ratings": int(len(gt.ratings)),
            **({"rushed_excluded": gt.rushed_excluded} if filters.exclude_rushed else {}),
            **({"model_differs_from_majority": differs} if differs is not None else {}),
            "label_source": label_source_counts(kept[LABEL_SOURCE_COLUMN]),
        },
        alpha={"study": alpha_all, "exported": alpha_sub},
        ratings_version=snap.version,
        columns=[str(c) for c in kept.columns],
        software_version=medsim_annot.__version__,
        after={
            "scale": {"file": out.name, "format": kind},
            "filters": {
                "aggregate": aggregate,
                "design": design_manifest(snap.info.config, kept),
            },
            "ratings_version": {"adjudication": adjudication},
            "krippendorff_alpha": {
                "krippendorff_alpha_reasons": {
                    k: v for k, v in (("study", why_all), ("exported", why_sub)) if v
                }
            },
            "columns": {"formula_escaping": kind in ("csv", "tsv")},
            "software_version": {
                "exported_at": when.isoformat().replace("+00:00", "Z"),
                "sha256": digest,
            },
        },
    )
    write_atomic(manifest_path(out), json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def _card_alpha(ratings: pd.DataFrame, scale: Scale) -> dict:
    return alpha_with_interval(
        ratings,
        scale,
        n_resamples=ALPHA_RESAMPLES,
        seed=ALPHA_SEED,
        bca_max_items=ALPHA_BCA_MAX_ITEMS,
    )


def _last_rated(ratings: pd.DataFrame) -> str | None:
    if ratings.empty or C.RATED_AT not in ratings.columns:
        return None
    latest = pd.to_datetime(ratings[C.RATED_AT], utc=True).max()
    return None if pd.isna(latest) else latest.date().isoformat()


def _write_hf(
    snap: GoldSnapshot,
    out: Path,
    filters: GoldFilters,
    options: HfOptions,
    audit_label: str = "majority",
) -> tuple[dict, str, int]:
    """Write the Hugging Face dataset folder (:mod:`medsim_annot.interop.hf`): Parquet data
    (one ``train`` split, or ``train`` and ``test`` stratified by the group columns with the
    seed), ``README.md``, ``croissant.json`` and ``manifest.json`` (SHA-256 of every file).
    No clock time is written: exporting the same ratings again gives byte-identical files.
    Returns the manifest, the SHA-256 of ``manifest.json`` and the number of pairs."""
    from medsim_annot.interop import hf

    gt = snap.gt
    scale = gt.scale
    adjudication = snap.provenance(audit_label)
    kept, steps = filter_gold(gt, filters)
    sources = label_source_counts(kept[LABEL_SOURCE_COLUMN])
    kept = hf.typed(kept)
    by = [c for c in C.GROUP_COLUMNS if c in kept.columns]
    splits = (
        hf.split_frame(kept, seed=options.seed, test_size=options.test_size, by=by)
        if options.split
        else {"train": kept}
    )
    sub = gt.ratings[gt.ratings[C.PAIR_ID].isin(set(kept[C.PAIR_ID].astype(str)))]
    alpha_study = _card_alpha(gt.ratings, scale)
    # The bootstrap is most of the export's time: no need to run it twice on the same ratings.
    alpha_exported = alpha_study if len(sub) == len(gt.ratings) else _card_alpha(sub, scale)
    facts = hf.CardFacts(
        study=snap.study,
        scale=scale,
        license=options.license,
        n_pairs=len(gt.table),
        n_rated=int((gt.table["n_ratings"] > 0).sum()),
        annotators=gt.annotators,
        n_ratings=len(gt.ratings),
        design=snap.info.config,
        alpha={"study": alpha_study, "exported": alpha_exported},
        filter_steps=steps,
        filters={"majority_rule": filters.majority},
        splits={name: len(frame) for name, frame in splits.items()},
        split_seed=options.seed if options.split else None,
        stratified_by=by if options.split else [],
        groups=hf.group_counts(kept),
        columns=[(str(c), hf.column_kind(kept[c])) for c in kept.columns],
        last_rated=_last_rated(gt.ratings),
        label_sources=sources,
        audit_label=audit_label,
    )
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, frame in splits.items():
        path = out / hf.data_path(name)
        write_table(frame, path, "parquet")
        files[hf.data_path(name)] = sha256_file(path)
    card = hf.dataset_card(facts)
    meta = hf.croissant(facts, files)
    for name, text in (("README.md", card), ("croissant.json", hf.dumps(meta))):
        data = text.encode("utf-8")
        write_atomic(out / name, data)
        files[name] = hashlib.sha256(data).hexdigest()
    manifest = gold_manifest(
        study=snap.study,
        scale=scale,
        filters=filters.manifest(),
        filter_steps=steps,
        counts={
            "pairs": len(gt.table),
            "rated": facts.n_rated,
            "exported": len(kept),
            "annotators": len(gt.annotators),
            "ratings": len(gt.ratings),
            **({"rushed_excluded": gt.rushed_excluded} if filters.exclude_rushed else {}),
            **{f"split_{k}": v for k, v in facts.splits.items()},
            "label_source": sources,
        },
        alpha=facts.alpha,
        ratings_version=snap.version,
        columns=[c for c, _ in facts.columns],
        software_version=medsim_annot.__version__,
        after={
            "study": {"format": "hf", "license": options.license},
            "ratings_version": {"adjudication": adjudication},
            "filter_steps": {
                "split": {"seed": options.seed, "test_size": options.test_size, "stratified_by": by}
                if options.split
                else None
            },
            "software_version": {"files": [{"path": p, "sha256": files[p]} for p in sorted(files)]},
        },
    )
    text = hf.dumps(manifest)
    write_atomic(out / HF_MANIFEST, text)
    return manifest, hashlib.sha256(text.encode("utf-8")).hexdigest(), len(kept)
