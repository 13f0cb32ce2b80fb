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
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

import medsim_annot
from data_schemas import columns as C
from data_schemas.errors import InputError
from data_schemas.ratings import to_ratings_frame  # noqa: F401  (the reference in doctests)
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.io import FORMATS, format_of, write_table
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.stats import majority_vote
from medsim_annot.stats.aggregate import ModelGold, check_method, model_gold
from medsim_annot.stats.majority import RULES, Rule
from medsim_annot.storage import Engine

RATER_PREFIX = "rater_"
#: Agreement flag columns of the per-pair table, in file order.
FLAGS = (
    "no_majority",
    "all_different",
    "unanimous",
    "unclear_any",
    "auto_label_disagrees",
    "verified",
)
#: The filters in the order they are applied.
FILTER_ORDER = (
    "min_ratings",
    "exclude_unclear",
    "require_majority",
    "exclude_all_different",
    "only_verified",
)
MAJORITY_RULES = RULES


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


def rater_column(name: str) -> str:
    """The export column of annotator *name*.

    >>> rater_column("dr_chen")
    'rater_dr_chen'
    """
    return f"{RATER_PREFIX}{name}"


def _present_columns(pairs: pd.DataFrame, cols) -> list[str]:
    return [
        c for c in cols if c in pairs.columns and (pairs[c].astype("string").fillna("") != "").any()
    ]


def code_ratings(frame: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    """*frame* (with a ``rating`` column of scale values) plus ``value`` (the scale's code,
    NaN for no decision) and ``no_decision``; each distinct rating is looked up once.

    >>> from data_schemas.scales import BINARY
    >>> code_ratings(pd.DataFrame({"rating": ["same", "dont_know"]}), BINARY)["value"].tolist()
    [1.0, nan]
    """
    df = frame.copy()
    codes, uniques = pd.factorize(df[C.RATING].to_numpy(dtype=object), use_na_sentinel=False)
    value = np.array(
        [np.nan if (c := scale.code(v)) is None else float(c) for v in uniques],
        dtype=np.float64,
    )
    nd = np.array([scale.is_no_decision(v) for v in uniques], dtype=bool)
    df[C.VALUE] = pd.array(value[codes] if len(codes) else np.zeros(0), dtype="float64")
    df[C.NO_DECISION] = nd[codes] if len(codes) else np.zeros(0, dtype=bool)
    return df


def ratings_frame_of(current: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    """The statistics' ratings frame of *current* ratings: the same frame as
    :func:`data_schemas.ratings.to_ratings_frame`, with the scale looked up once per distinct
    rating value instead of once per row (100,000s of ratings on the dashboard).

    >>> from data_schemas.scales import BINARY
    >>> cur = pd.DataFrame({"pair_id": ["b", "a"], "annotator": ["X", "X"],
    ...                     "rating": ["dont_know", "same"]})
    >>> ratings_frame_of(cur, BINARY).equals(to_ratings_frame(cur, BINARY))
    True
    """
    df = current.copy()
    if C.RATED_AT in df.columns and len(df):
        df = df.sort_values(C.RATED_AT, kind="stable", na_position="first")
        df = df.drop_duplicates([C.PAIR_ID, C.ANNOTATOR], keep="last")
    df = code_ratings(df, scale)
    if C.RATED_AT not in df.columns:
        df[C.RATED_AT] = pd.NaT
    cols = [C.PAIR_ID, C.ANNOTATOR, C.VALUE, C.RATED_AT, C.NO_DECISION, C.RATING]
    cols += [c for c in (C.UNCLEAR, C.COMMENT) if c in df.columns]
    return df[cols].sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable").reset_index(drop=True)


def gold_table(
    pairs: pd.DataFrame, current: pd.DataFrame, scale: Scale, *, majority: str = "strict"
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
    if majority not in MAJORITY_RULES:
        raise UsageProblem(f"majority must be 'strict' or 'decisive', not '{majority}'")
    pairs = pairs.reset_index(drop=True)
    ids = pairs[C.PAIR_ID].astype(str).to_numpy()
    n = len(ids)
    cur = current.reset_index(drop=True)
    ratings = (
        ratings_frame_of(cur, scale)
        if len(cur)
        else pd.DataFrame(
            {
                C.PAIR_ID: pd.Series(dtype=object),
                C.ANNOTATOR: pd.Series(dtype=object),
                C.VALUE: pd.Series(dtype="float64"),
                C.RATED_AT: pd.Series(dtype="datetime64[ns, UTC]"),
                C.NO_DECISION: pd.Series(dtype=bool),
                C.RATING: pd.Series(dtype=object),
            }
        )
    )
    latest = ratings
    items = pd.Index(ids)
    row = items.get_indexer(latest[C.PAIR_ID].astype(str).to_numpy())
    keep = row >= 0
    latest = latest[keep]
    row = row[keep]
    ann_codes, anns = pd.factorize(latest[C.ANNOTATOR].astype(str).to_numpy(), sort=True)
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

    raw = latest[C.RATING].to_numpy(dtype=object)
    # Each distinct rating value is converted once (100,000s of ratings on the dashboard).
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

    mv = majority_vote(latest, rule=cast(Rule, majority), numeric=numeric, items=items)
    major_code = mv["majority"].to_numpy(dtype=np.float64)
    n_cast = mv["n_ratings"].to_numpy(dtype=np.int64)
    code_to_value: dict[float, object] = {}
    for o in scale.options:
        if o.code is not None and not scale.is_no_decision(o.value):
            code_to_value.setdefault(float(o.code), o.value)
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
    pair_value = np.unique(row.astype(np.int64) * (len(runiq) + 1) + rcode)
    n_distinct = np.bincount(pair_value // (len(runiq) + 1), minlength=n)
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
    if scale.positive is not None and scale.negative is not None:
        pos, neg = scale.code(scale.positive), scale.code(scale.negative)
        truth = np.where(major_code == pos, 1.0, np.where(major_code == neg, 0.0, np.nan))
    else:
        truth = np.full(n, np.nan)
    both = ~np.isnan(truth) & ~np.isnan(label)
    out["auto_label_disagrees"] = both & (truth != label)
    out["verified"] = both & (truth == label)
    table = pd.DataFrame(out)
    cur_out = cur.copy()
    return GoldTable(table, latest.reset_index(drop=True), cur_out, scale, annotators)


#: Columns a model aggregate adds to the per-pair table.
MODEL_COLUMNS = ("model_label", "model_posterior", "model_differs_from_majority")


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


def study_gold_table(
    study: str, *, majority: str = "strict", engine: Engine | None = None
) -> GoldTable:
    """:func:`gold_table` of a stored study (its pairs and current ratings).

    A 2 + 1 study (``--per-item 2 --tiebreak``) gets one more column,
    :data:`~medsim_annot.services.agreement.CALIBRATION_COLUMN` (boolean, last): whether the
    pair is one of the calibration pairs every annotator rated — the pairs α, κ, ICC and W
    are computed on (as the dashboard does), so ``medsim agreement`` on the exported file
    reports the dashboard's figures."""
    info = studies_svc.get_study(study, engine=engine)
    pairs = studies_svc.pairs_frame(study, engine=engine)
    cur = studies_svc.current_ratings(study, engine=engine)
    gt = gold_table(pairs, cur, info.scale, majority=majority)
    if info.config.get("tiebreak"):
        calib = set(agreement_svc.design_agreement_pairs(info.config, cur) or ())
        gt.table[agreement_svc.CALIBRATION_COLUMN] = (
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
    col = agreement_svc.CALIBRATION_COLUMN
    n_calib = int(table[col].sum()) if col in table.columns else None
    return {
        "per_item": config.get("per_item"),
        "annotators": config.get("annotators"),
        "tiebreak": config.get("tiebreak"),
        "calibration_pairs": n_calib if n_calib is not None else config.get("calibration"),
        "agreement_basis": "calibration" if n_calib else "all",
    }


def manifest_scale(scale: Scale) -> dict:
    """The scale as every gold manifest records it (file and Hugging Face exports)."""
    return {
        "name": scale.name,
        "level": scale.level,
        "options": [Scale.display(o.value) for o in scale.options],
        "no_decision": [Scale.display(v) for v in scale.no_decision],
    }


def manifest_filters(
    *,
    min_ratings: int | None,
    exclude_unclear: bool,
    require_majority: bool,
    exclude_all_different: bool,
    only_verified: bool,
    majority: str,
) -> dict:
    """The export filters as every gold manifest records them, with their fixed order."""
    return {
        "min_ratings": min_ratings,
        "exclude_unclear": bool(exclude_unclear),
        "require_majority": bool(require_majority),
        "exclude_all_different": bool(exclude_all_different),
        "only_verified": bool(only_verified),
        "majority_rule": majority,
        "order": list(FILTER_ORDER),
    }


def filter_gold(gt: GoldTable, **filters) -> tuple[pd.DataFrame, list[dict]]:
    """:func:`apply_filters` on *gt*'s table, with ``only_verified`` possible exactly when the
    table has automatic labels and the scale positive and negative values (every export)."""
    scale = gt.scale
    has_label = (
        C.AUTO_LABEL in gt.table.columns
        and scale.positive is not None
        and scale.negative is not None
    )
    return apply_filters(gt.table, has_auto_label=has_label, **filters)


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


def manifest_path(out: str | Path) -> Path:
    """``FILE.manifest.json`` beside *out*.

    >>> manifest_path("gold.csv").name
    'gold.csv.manifest.json'
    """
    out = Path(out)
    return out.with_name(out.name + ".manifest.json")


def _alpha(ratings: pd.DataFrame, scale: Scale) -> tuple[float | None, str | None]:
    if ratings.empty:
        return None, "no ratings"
    rep = agreement_svc.agreement_report(ratings, scale)
    value = float(rep.krippendorff_alpha)
    if np.isnan(value):
        return None, rep.reasons.get("krippendorff_alpha", "undefined")
    return value, None


def export_gold(
    study: str,
    out: str | Path,
    fmt: str | None = None,
    *,
    require_majority: bool = False,
    exclude_unclear: bool = False,
    exclude_all_different: bool = False,
    only_verified: bool = False,
    min_ratings: int | None = None,
    majority: str = "strict",
    aggregate: str = "majority",
    engine: Engine | None = None,
    now: dt.datetime | None = None,
) -> dict:
    """Export the gold subset of *study* to *out* and write ``out.manifest.json`` beside it.

    Parameters
    ----------
    study : str
        Study name.
    out : path
        Output file; its format is *fmt* or comes from the extension (csv, tsv, jsonl,
        parquet).
    require_majority, exclude_unclear, exclude_all_different, only_verified, min_ratings :
        The filters, applied in the order of :data:`FILTER_ORDER` (see the module docstring).
    majority : {"strict", "decisive"}
        Majority rule.
    aggregate : {"majority", "dawid-skene", "mace"}
        ``majority`` (default, the paper-compatible verdict) or a model of the annotators
        (crowd-kit, nominal scales only; :func:`medsim_annot.stats.aggregate.model_gold`),
        which adds the columns ``model_label``, ``model_posterior`` and
        ``model_differs_from_majority`` (the filters still use the majority).
    now : datetime, optional
        Export time written to the manifest (default: the current UTC time).

    Returns
    -------
    dict
        The manifest: ``study``, ``scale`` (name, level, options), ``file``, ``format``,
        ``filters`` (as asked and ``order``), ``design`` (:func:`design_manifest`),
        ``filter_steps`` (counts before and after each
        filter), ``counts`` (``pairs``, ``rated``, ``exported``, ``annotators``),
        ``krippendorff_alpha`` (``study``: all current ratings; ``exported``: the ratings of the
        exported pairs; null with a reason when undefined), ``ratings_version``,
        ``columns``, ``software`` and ``software_version``, ``exported_at`` and ``sha256``.

    Notes
    -----
    CSV/TSV cells starting with ``=``, ``+``, ``-`` or ``@`` are prefixed with ``'``
    (:func:`medsim_annot.io.escape_formula`) against spreadsheet formula injection; numbers
    are written as numbers. Nothing is written when an option is invalid.
    """
    kind = format_of(out, fmt)
    if kind not in FORMATS:
        raise InputError.single(f"unknown format '{kind}'", file=str(out))
    out = Path(out)
    gt = study_gold_table(study, majority=majority, engine=engine)
    scale = gt.scale
    check_method(aggregate, scale.level)
    differs = None
    if aggregate != "majority":
        differs = add_model_columns(gt, aggregate)
    kept, steps = filter_gold(
        gt,
        require_majority=require_majority,
        exclude_unclear=exclude_unclear,
        exclude_all_different=exclude_all_different,
        only_verified=only_verified,
        min_ratings=min_ratings,
    )
    write_table(kept, out, kind)
    digest = sha256_file(out)
    alpha_all, why_all = _alpha(gt.ratings, scale)
    sub = gt.ratings[gt.ratings[C.PAIR_ID].isin(set(kept[C.PAIR_ID].astype(str)))]
    alpha_sub, why_sub = _alpha(sub, scale)
    version = studies_svc.ratings_version(study, engine=engine)
    when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    manifest = {
        "study": study,
        "scale": manifest_scale(scale),
        "file": out.name,
        "format": kind,
        "filters": manifest_filters(
            min_ratings=min_ratings,
            exclude_unclear=exclude_unclear,
            require_majority=require_majority,
            exclude_all_different=exclude_all_different,
            only_verified=only_verified,
            majority=majority,
        ),
        "aggregate": aggregate,
        "design": design_manifest(studies_svc.get_study(study, engine=engine).config, kept),
        "filter_steps": steps,
        "counts": {
            "pairs": int(len(gt.table)),
            "rated": int((gt.table["n_ratings"] > 0).sum()),
            "exported": int(len(kept)),
            "annotators": len(gt.annotators),
            "ratings": int(len(gt.ratings)),
            **({"model_differs_from_majority": differs} if differs is not None else {}),
        },
        "krippendorff_alpha": {"study": alpha_all, "exported": alpha_sub},
        "krippendorff_alpha_reasons": {
            k: v for k, v in (("study", why_all), ("exported", why_sub)) if v
        },
        "ratings_version": {"count": version[0], "max_rating_id": version[1]},
        "columns": [str(c) for c in kept.columns],
        "formula_escaping": kind in ("csv", "tsv"),
        "software": "medsim-annot",
        "software_version": medsim_annot.__version__,
        "exported_at": when.isoformat().replace("+00:00", "Z"),
        "sha256": digest,
    }
    mpath = manifest_path(out)
    tmp = mpath.with_name(mpath.name + ".part")
    tmp.write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8"
    )
    tmp.replace(mpath)
    from medsim_annot.storage.admins import record_event

    record_event(
        "gold_exported",
        study_id=studies_svc.get_study(study, engine=engine).id,
        detail={"file": out.name, "format": kind, "pairs": int(len(kept)), "sha256": digest},
        engine=engine,
    )
    return manifest
