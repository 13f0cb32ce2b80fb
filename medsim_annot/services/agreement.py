"""Agreement and audit use cases, shared by ``medsim agreement``/``medsim audit`` and the
dashboard. Frame-level functions take the ratings frame of
:func:`data_schemas.ratings.to_ratings_frame`; file-level helpers read and validate files
(long ratings or EHR-Rel wide, detected from the header) and raise
:class:`data_schemas.errors.InputError` naming file, row and column for bad input.

Typical dashboard use (``ratings`` from ``to_ratings_frame``, e.g. built from the store)::

    report = agreement_report(ratings, scale)             # .to_dict() = agreement JSON
    audit = audit_report(pairs, ratings, scale, bootstrap=1000, seed=1)  # .to_dict()
    groups = alpha_by_group_report(ratings, pairs, scale)  # alpha per group, any scale
    gold = majority_table(ratings, scale, rule="strict")   # majority (+ mean/median)
    quality = rater_quality_report(ratings, scale, history=all_saved_ratings)

File level: ``load_ratings_file(path)`` (long, EHR-Rel wide or a gold export's
``rater_<name>`` columns, scale inferred; its ``notes`` are for the user: the CLI prints them
on stderr, the pages show them); the pairs file is read with
:func:`medsim_annot.services.studies.load_pairs`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pandas as pd

from data_schemas import columns as C
from data_schemas.ehr_rel import is_ehr_rel, read_ehr_rel
from data_schemas.errors import InputError, Problem
from data_schemas.gold import CALIBRATION_COLUMN as CALIBRATION_COLUMN  # 2 + 1 design column
from data_schemas.gold import is_gold_export, read_gold_frame, read_manifest
from data_schemas.options import BOOTSTRAP, MAJORITY_RULES
from data_schemas.pairs import group_columns
from data_schemas.ratings import code_ratings, to_ratings_frame, validate_ratings
from data_schemas.scales import (
    BINARY,
    BUILT_IN,
    RELATEDNESS_0_3,
    SIMILARITY_0_6,
    Scale,
    ScaleOption,
    load_scale,
)
from medsim_annot.i18n import N_, fmt_int, tn
from medsim_annot.io import read_table
from medsim_annot.stats import (
    AgreementReport,
    AuditResult,
    RaterQuality,
    alpha_by_group,
    audit_labels,
    majority_vote,
    rater_quality,
)
from medsim_annot.stats import agreement_report as _agreement_report
from medsim_annot.stats._frame import CodedRatings, frame_of
from medsim_annot.stats.majority import Rule
from medsim_annot.stats.report import SUMMARY_FIGURES as SUMMARY_FIGURES  # the CLI's table


@dataclass
class LoadedRatings:
    """A ratings file, validated: ``ratings`` is the statistics' ratings frame (latest rating
    per pair and annotator), ``history`` every saved rating (typed), ``scale`` the scale used
    (given or inferred), ``pairs`` the pairs (from the EHR-Rel file itself or ``--pairs``),
    ``source`` "long", "ehr_rel" or "gold" (a gold export), ``notes`` sentences for the user about how the file was
    read (an EHR-Rel pair repeated on several rows: each row is its own item)."""

    ratings: pd.DataFrame
    history: pd.DataFrame
    scale: Scale
    pairs: pd.DataFrame | None
    source: str
    notes: list[str] = field(default_factory=list)
    #: A gold export of a 2 + 1 study (its ``calibration`` column): the pairs α, κ, ICC and W
    #: are computed on (:func:`design_agreement`); ``None``: the file records no design.
    agreement_pairs: list[str] | None = None
    #: Whether the file records a 2 + 1 design (a ``calibration`` column, maybe all false).
    tiebreak_design: bool = False


#: The dashboard's and ``medsim agreement``'s note for a 2 + 1 design without calibration pairs.
TIEBREAK_WITHOUT_CALIBRATION = N_(
    "2 + 1 design without a calibration set: agreement over all pairs is biased downwards "
    "(the third rating exists only for pairs the first two disagreed on)."
)


def calibration_basis(n_pairs: int) -> str:
    """The sentence shown next to α, κ, ICC and W of a 2 + 1 design."""
    return tn(
        "2 + 1 design: α, κ, ICC and W are computed on the {n} calibration pair only (rated "
        "by every annotator; the third rating of the other pairs exists only where the first "
        "two disagreed); the audit uses the majority of every pair.",
        "2 + 1 design: α, κ, ICC and W are computed on the {n} calibration pairs only (rated "
        "by every annotator; the third rating of the other pairs exists only where the first "
        "two disagreed); the audit uses the majority of every pair.",
        n_pairs,
        n=fmt_int(n_pairs),
    )


def design_agreement_pairs(config: dict, current: pd.DataFrame) -> list[str] | None:
    """The pairs agreement is computed on for a study's design: a 2 + 1 study
    (``config["tiebreak"]``) with calibration slots, its calibration pairs; otherwise
    ``None`` (every pair). *current*: current ratings with their ``slot`` kind."""
    if not config.get("tiebreak") or "slot" not in current.columns:
        return None
    calib = current.loc[current["slot"] == "calibration", C.PAIR_ID].astype(str).unique()
    return sorted(calib) if len(calib) else None


def design_agreement(
    ratings: pd.DataFrame | CodedRatings,
    scale: Scale,
    *,
    agreement_pairs: Collection[str] | None = None,
    level: str | None = None,
) -> tuple[AgreementReport, str]:
    """The agreement report of a design and the sentence saying what it is computed on.

    With *agreement_pairs* (a 2 + 1 design's calibration pairs), α, κ, ICC and W — the whole
    report — are computed on those pairs only and the sentence says so
    (:func:`calibration_basis`); otherwise on every pair, with an empty sentence. The
    dashboard and ``medsim agreement`` both call this, so they report the same figures.
    *ratings*: a frame or its codes.
    """
    if agreement_pairs is None:
        return agreement_report(ratings, scale, level=level), ""
    keep = {str(p) for p in agreement_pairs}
    inside = frame_of(ratings)[C.PAIR_ID].astype(str).isin(keep).to_numpy()
    sub = (
        ratings.rows(inside)
        if isinstance(ratings, CodedRatings)
        else ratings[inside].reset_index(drop=True)
    )
    return agreement_report(sub, scale, level=level), calibration_basis(len(keep))


# ---- frame level -------------------------------------------------------------------------------
def agreement_report(
    ratings: pd.DataFrame | CodedRatings,
    scale_or_level: Scale | str,
    *,
    level: str | None = None,
) -> AgreementReport:
    """The full agreement report of a ratings frame or its codes (see
    :func:`medsim_annot.stats.agreement_report`); ``report.to_dict()`` is the JSON of
    ``medsim agreement --json``."""
    return _agreement_report(ratings, scale_or_level, level=level)


def audit_report(
    pairs: pd.DataFrame,
    ratings: pd.DataFrame,
    scale: Scale,
    *,
    by: list[str] | None = None,
    majority: str = "strict",
    bootstrap: int = 0,
    seed: int | None = None,
    confidence: float = 0.95,
    file: str | None = None,
) -> AuditResult:
    """Audit the pairs' automatic labels against the majority vote, per group.

    *by* defaults to every group column present (``dataset``, ``difficulty``,
    ``negative_strategy``); *majority* is "strict" or "decisive"; *bootstrap* > 0 adds
    ``*_ci`` intervals for alpha, accuracy, precision and recall. Raises
    :class:`InputError` for an unknown group column, a missing ``auto_label`` or a scale
    without positive/negative values (*file* names the pairs file in messages).
    """
    MAJORITY_RULES.check(majority)
    BOOTSTRAP.check(bootstrap)
    if not scale.has_polarity:
        raise InputError.single(
            f"the audit compares auto_label (0/1) with the doctors' majority, so it needs a "
            f"scale with positive and negative values such as 'binary'; the ratings are on the "
            f"{scale.name} scale",
            file=file,
        )
    if C.AUTO_LABEL not in pairs.columns:
        raise InputError.single(
            "required column is missing (the audit compares automatic "
            "labels with the majority vote)",
            file=file,
            column=C.AUTO_LABEL,
        )
    if by is not None:
        missing = [c for c in by if c not in pairs.columns]
        if missing:
            raise InputError(
                [
                    Problem(
                        f"group column '{c}' is not in the pairs file "
                        f"(columns: {', '.join(map(str, pairs.columns))})",
                        column=c,
                    )
                    for c in missing
                ],
                file,
            )
    return audit_labels(
        pairs,
        ratings,
        scale,
        by=by,
        rule=cast(Rule, majority),
        bootstrap=bootstrap,
        confidence=confidence,
        seed=seed,
    )


def alpha_by_group_report(
    ratings: pd.DataFrame,
    pairs: pd.DataFrame,
    scale_or_level: Scale | str,
    *,
    by: list[str] | None = None,
    file: str | None = None,
) -> pd.DataFrame:
    """Krippendorff's alpha per group of pairs, for any scale (the audit needs a binary one).
    *by* defaults to the group columns present; an unknown column is an :class:`InputError`."""
    by = list(group_columns(pairs)) if by is None else list(by)
    missing = [c for c in by if c not in pairs.columns]
    if missing:
        raise InputError(
            [Problem(f"group column '{c}' is not in the pairs file", column=c) for c in missing],
            file,
        )
    return alpha_by_group(ratings, pairs, scale_or_level, by=by)


def majority_table(
    ratings: pd.DataFrame, scale: Scale, *, rule: str = "strict", items=None
) -> pd.DataFrame:
    """Per pair: ``majority`` (code, NaN without a majority), ``majority_value`` (the scale's
    option value, None without a majority), ``n_ratings`` (cast), ``n_decisive`` and, for
    numeric scales, ``mean`` and ``median``. *rule* is "strict" or "decisive"."""
    MAJORITY_RULES.check(rule)
    table = majority_vote(ratings, rule=cast(Rule, rule), numeric=scale.numeric, items=items)
    by_code = {o.code: o.value for o in scale.options if o.code is not None}
    table.insert(
        1,
        "majority_value",
        pd.Series(
            [None if pd.isna(c) else by_code.get(c, c) for c in table["majority"]],
            index=table.index,
            dtype=object,
        ),
    )
    return table


def rater_quality_report(
    ratings: pd.DataFrame | CodedRatings,
    scale_or_level: Scale | str,
    *,
    history: pd.DataFrame | None = None,
    min_run: int = 10,
    iaa: pd.DataFrame | None = None,
    checked: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> RaterQuality:
    """Rater quality: don't-know share, IAA-1 outliers, intra-rater consistency on items
    rated twice (from *history*, all saved ratings) and runs of *min_run* identical
    consecutive ratings. *iaa*: IAA-1 per annotator already computed for *ratings* (e.g.
    ``agreement_report(ratings, scale).per_annotator``), so it is not computed again.
    *ratings*: a frame or its codes; *checked*: the history's checks
    (:func:`medsim_annot.stats.quality.history_checks` of the coded history) when the caller
    has computed them."""
    hist = None
    if history is not None and C.VALUE not in history.columns:
        scale = scale_or_level if isinstance(scale_or_level, Scale) else None
        if scale is None:
            raise ValueError("history without a value column needs a Scale to code it")
        hist = code_ratings(history, scale)
    elif history is not None:
        hist = history
    return rater_quality(
        ratings,
        scale_or_level,
        history=hist,
        min_run=min_run,
        iaa=iaa,
        checked=checked,
    )


# ---- file level --------------------------------------------------------------------------------
def infer_scale(raw_ratings: pd.Series, file: str | None = None) -> Scale:
    """The scale a long ratings file is on, from its rating values: ``binary`` when any is a
    binary value, ``relatedness-0-3`` for numbers in 0..3, ``similarity-0-6`` for 0..6,
    otherwise an interval scale of the numbers seen. Use ``--scale`` to be explicit."""
    seen = {str(v).strip() for v in raw_ratings if str(v).strip() != ""}
    if not seen:
        raise InputError.single(
            "has no ratings (every rating cell is empty)", file=file, column=C.RATING
        )
    binary = {str(o.value) for o in BINARY.options}
    if seen & binary:
        return BINARY  # validation then reports any other value by row
    nums = []
    for v in seen:
        try:
            nums.append(float(v))
        except ValueError:
            pass
    if not nums:
        bad = sorted(seen)[:3]
        raise InputError.single(
            f"cannot tell the scale from the ratings (e.g. {', '.join(map(repr, bad))}); give "
            f"the scale (scale): {', '.join(BUILT_IN)} or a scale file",
            file=file,
            column=C.RATING,
        )
    nums = sorted(set(nums))
    for scale in (RELATEDNESS_0_3, SIMILARITY_0_6):
        if set(nums) <= {float(o.value) for o in scale.options}:
            return scale
    keys = "0123456789abcdefghijklmnopqrstvwxyz"
    if len(nums) > len(keys):
        raise InputError.single(
            f"has {len(nums)} distinct numeric ratings; give the scale (scale) as a file",
            file=file,
            column=C.RATING,
        )
    return Scale(
        name="numeric",
        level="interval",
        options=[
            ScaleOption(value=v, label=str(Scale.display(v)), key=keys[i])
            for i, v in enumerate(nums)
        ],
    )


def load_ratings_file(
    path: str | Path, *, scale: Scale | str | None = None, pairs: pd.DataFrame | None = None
) -> LoadedRatings:
    """Read a long ratings file, an EHR-Rel wide file or a gold export (told apart by the
    header; a gold export's design, see :func:`_load_gold_export`).

    *scale*: a Scale or a built-in name / file path; inferred from the values when None
    (EHR-Rel files are on the 0-3 relatedness scale). With *pairs*, every ``pair_id`` must be
    one of them.
    """
    name = str(path)
    raw = read_table(path)
    if isinstance(scale, (str, Path)):
        scale = load_scale(scale)
    known = set(pairs[C.PAIR_ID].astype(str)) if pairs is not None else None
    notes: list[str] = []
    if is_ehr_rel(raw.columns):
        scale = scale or RELATEDNESS_0_3
        wide = read_ehr_rel(raw, name, scale=scale)
        file_pairs, long, notes = wide.pairs, wide.ratings, list(wide.notes)
        history = long
        if known is not None:
            unknown = sorted(set(long[C.PAIR_ID]) - known)
            if unknown:
                raise InputError.single(
                    f"pair '{unknown[0]}' is not in the pairs file ({len(unknown)} such pairs)",
                    file=name,
                )
        source, out_pairs = "ehr_rel", pairs if pairs is not None else file_pairs
    elif is_gold_export(raw.columns):
        return _load_gold_export(raw, name, path, scale, known)
    else:
        if C.RATING in raw.columns and scale is None:
            scale = infer_scale(raw[C.RATING], name)
        scale = scale or BINARY
        history = validate_ratings(raw, scale, name, known_pairs=known)
        source, out_pairs = "long", pairs
    if len(history) == 0:
        raise InputError.single("has no ratings", file=name)
    return LoadedRatings(
        to_ratings_frame(history, scale),
        code_ratings(history, scale),
        scale,
        out_pairs,
        source,
        notes,
    )


def _manifest_scale(path: str | Path) -> Scale | None:
    """The built-in scale a gold export's manifest (``FILE.manifest.json``) names, if any."""
    manifest = read_manifest(path)
    try:
        name = manifest["scale"]["name"] if manifest else None
    except (KeyError, TypeError):
        return None
    return load_scale(name) if name in BUILT_IN else None


def _load_gold_export(
    raw: pd.DataFrame,
    name: str,
    path: str | Path,
    scale: Scale | None,
    known: set[str] | None,
) -> LoadedRatings:
    """A gold export (``medsim export gold`` or the Hugging Face export), read by
    :func:`data_schemas.gold.read_gold_frame`: one row per pair, ``rater_<name>`` columns with
    each annotator's current rating (empty: not rated).

    The scale is *scale*, else the one the manifest beside the file names, else inferred from
    the values. A ``calibration`` column (:data:`CALIBRATION_COLUMN`, written for 2 + 1
    studies) records the design: α, κ, ICC and W are then computed on the pairs it marks
    (:func:`design_agreement`), the majority and the audit on every pair.
    """
    if scale is None:
        scale = _manifest_scale(path)
    if scale is None:
        seen = read_gold_frame(raw).ratings[C.RATING]
        scale = infer_scale(seen, name)
    on = scale

    def canonical(text: str) -> str:
        return str(Scale.display(on.canonical(text)))

    gold = read_gold_frame(raw, known_pairs=known, canonical=canonical)
    if gold.problems:
        raise InputError(gold.problems, name)
    if gold.ratings.empty:
        raise InputError.single("has no ratings (every rater_ cell is empty)", file=name)
    history = validate_ratings(gold.ratings, scale, name, known_pairs=known)
    return LoadedRatings(
        to_ratings_frame(history, scale),
        code_ratings(history, scale),
        scale,
        None,
        "gold",
        [],
        agreement_pairs=gold.calibration_pairs(),
        tiebreak_design=gold.calibration is not None,
    )


def design_summary(loaded: LoadedRatings, report: AgreementReport, basis: str) -> dict | None:
    """What ``medsim agreement`` adds for a file that records a 2 + 1 design (``None``
    otherwise): ``basis`` — what α, κ, ICC and W are computed on (``pairs``: "calibration" or
    "all", ``n_pairs``, ``n_rated``: those with ratings in the report, ``note``: the sentence
    shown next to the figures) — and ``majority`` on every pair (``n_pairs``,
    ``n_with_majority``), which the audit uses."""
    if not loaded.tiebreak_design:
        return None
    table = majority_table(loaded.ratings, loaded.scale)
    calib = loaded.agreement_pairs
    return {
        "basis": {
            "pairs": "calibration" if calib else "all",
            "n_pairs": len(calib) if calib else int(len(table)),
            "n_rated": int(report.n_items),
            "note": basis or TIEBREAK_WITHOUT_CALIBRATION,
        },
        "majority": {
            "pairs": "all",
            "n_pairs": int(len(table)),
            "n_with_majority": int(table["majority"].notna().sum()),
        },
    }
