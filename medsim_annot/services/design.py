"""Study design use case shared by ``medsim study create`` and the Study setup page:
sample the pairs, plan the queues and create the study in one call.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem
from data_schemas.scales import Scale
from medsim_annot.design import plan_study, stratified_sample
from medsim_annot.design.adaptive import expected_ratings, needs_tiebreak
from medsim_annot.design.assignment import Slot
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.gold.table import study_gold_table
from medsim_annot.services.practice.setup import split_pairs
from medsim_annot.services.stopping import group_keys, stopping_config
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import Study
from medsim_annot.services.tiebreak import tiebreak_config
from medsim_annot.storage import Engine


@dataclass
class DesignOptions:
    """Sampling and assignment options (``None``/0 means "not used").

    ``sample_per_group`` = (P, N) draws P positives and N negatives per group of
    ``group_by``; ``per_item`` = k of n annotators per item (``None``: everyone rates
    everything); ``calibration`` items every annotator rates; ``duplicates`` the fraction of
    each queue shown again, swapped and later; ``seed`` drives every random choice."""

    sample_per_group: tuple[int, int] | None = None
    group_by: list[str] = field(default_factory=lambda: list(C.GROUP_COLUMNS))
    allow_fewer: bool = False
    per_item: int | None = None
    calibration: int = 0
    duplicates: float = 0.0
    seed: int = 0
    shuffle: bool = True
    #: 2 + 1 design: a third rating only where the first two disagree (needs
    #: ``per_item`` 2 and at least three annotators); graded codes within the tolerance agree.
    tiebreak: bool = False
    tiebreak_tolerance: float = 0.0
    #: Sequential audit: target half-width of each group's accuracy interval
    #: (groups by ``group_by``, every column must be in the pairs file); ``None``: off. A group
    #: stops being served once it is within the target and has the minimum of positives and
    #: negatives; the queues are served group-interleaved.
    target_ci: float | None = None
    min_positives: int = 10
    min_negatives: int = 10
    #: Check pairs (rows of the pairs file with a ``check_answer``): the share of each
    #: queue that is check slots, spread through it (``None``: every check pair once).
    check_rate: float | None = None


@dataclass
class PreparedStudy:
    """What :func:`prepare_study` decided, before anything is written."""

    pairs: pd.DataFrame
    queues: dict[str, list[Slot]]
    config: dict
    counts: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)
    #: Each pair's group of the sequential audit (``None`` without ``target_ci``).
    audit_groups: list[str] | None = None

    def queue_sizes(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "annotator": a,
                    "slots": len(q),
                    "calibration": sum(s.kind == "calibration" for s in q),
                    "duplicates": sum(s.kind == "duplicate" for s in q),
                    "checks": sum(s.kind == "check" for s in q),
                }
                for a, q in self.queues.items()
            ],
            columns=["annotator", "slots", "calibration", "duplicates", "checks"],
        )


def prepare_study(
    pairs: pd.DataFrame, annotators: list[str], options: DesignOptions, *, file: str | None = None
) -> PreparedStudy:
    """Sample *pairs* and plan every annotator's queue (nothing is written)."""
    names = list(dict.fromkeys(a.strip() for a in annotators if a and a.strip()))
    if not names:
        raise UsageProblem(t("add at least one annotator"))
    config: dict = {"sampling": "all", "seed": int(options.seed)}
    counts, warnings = None, []
    check_rows = _check_rows(pairs)
    held = pairs.iloc[check_rows] if check_rows else pairs.iloc[0:0]
    if check_rows and options.sample_per_group is not None:
        # Check pairs are not sampled: they are all kept, after the sampled pairs.
        pairs = pairs.drop(index=pairs.index[check_rows]).reset_index(drop=True)
    if options.check_rate is not None and not check_rows:
        raise UsageProblem(
            t(
                "a check rate (check_rate) needs check pairs, but no pair has a "
                "check_answer ({file})",
                file=file,
            )
            if file
            else t("a check rate (check_rate) needs check pairs, but no pair has a check_answer")
        )
    if options.sample_per_group is not None:
        pos, neg = options.sample_per_group
        res = stratified_sample(
            pairs,
            pos,
            neg,
            options.group_by,
            options.seed,
            allow_fewer=options.allow_fewer,
            file=file,
        )
        pairs, counts, warnings = res.pairs, res.counts, list(res.warnings)
        config.update(res.config)
        if check_rows:
            pairs = pd.concat([pairs, held], ignore_index=True)
    checks = _check_rows(pairs)
    audit_groups = None
    if options.target_ci is not None:
        audit_groups = _audit_groups(pairs, options, file)
    plan = plan_study(
        len(pairs),
        names,
        per_item=options.per_item,
        calibration=options.calibration,
        duplicates=options.duplicates,
        seed=options.seed,
        shuffle=options.shuffle,
        groups=audit_groups,
        checks=checks,
        check_rate=options.check_rate,
    )
    config.update(plan.config)
    if options.target_ci is not None:
        config["stopping"] = stopping_config(
            options.target_ci,
            list(options.group_by),
            min_positives=options.min_positives,
            min_negatives=options.min_negatives,
        )
    if options.tiebreak:
        if options.per_item != 2:
            raise UsageProblem(
                t(
                    "the 2 + 1 design (tiebreak) needs 2 annotators per pair (per_item): two "
                    "raters, a third on disagreement"
                )
            )
        if len(names) < 3:
            raise UsageProblem(t("the 2 + 1 design (tiebreak) needs at least three annotators"))
        config["tiebreak"] = tiebreak_config(options.tiebreak_tolerance)
    return PreparedStudy(pairs, plan.queues, config, counts, warnings + plan.warnings, audit_groups)


def _check_rows(pairs: pd.DataFrame) -> list[int]:
    """Row numbers of the pairs with a known answer (a non-empty ``check_answer``)."""
    if C.CHECK_ANSWER not in pairs.columns:
        return []
    text = pairs[C.CHECK_ANSWER].astype("string").fillna("").str.strip()
    return [int(i) for i in np.flatnonzero((text != "").to_numpy())]


def _audit_groups(pairs: pd.DataFrame, options: DesignOptions, file: str | None) -> list[str]:
    """Check a sequential audit's options against the pairs; each pair's group."""
    stopping_config(  # the numbers first: one clear message
        options.target_ci if options.target_ci is not None else float("nan"),
        list(options.group_by),
        min_positives=options.min_positives,
        min_negatives=options.min_negatives,
    )
    missing = [c for c in options.group_by if c not in pairs.columns]
    if missing:
        raise InputError(
            [
                Problem(t("group column of the target half-width (target_ci) is missing"), column=c)
                for c in missing
            ],
            file,
        )
    labels = (
        pd.to_numeric(pairs[C.AUTO_LABEL], errors="coerce")
        if C.AUTO_LABEL in pairs.columns
        else pd.Series(dtype=float)
    )
    if not labels.isin([0, 1]).any():
        raise UsageProblem(
            t(
                "a target half-width (target_ci) audits the automatic labels: the pairs need "
                "an auto_label column with 0/1 values ({file} has none)",
                file=file,
            )
            if file
            else t(
                "a target half-width (target_ci) audits the automatic labels: the pairs need "
                "an auto_label column with 0/1 values"
            )
        )
    return group_keys(pairs, list(options.group_by))


@dataclass(frozen=True)
class CreatedStudy:
    """A study created with its design: ``annotators`` are ``{"name", "access_code"}`` (each
    code shown once), ``config`` the stored design, ``warnings`` the sampling's and the
    plan's notes. :meth:`to_dict` is what ``medsim study create --json`` prints."""

    study: str
    items: int
    annotators: list[dict]
    config: dict
    warnings: list[str]

    def to_dict(self) -> dict:
        return asdict(self)


def create_designed_study(
    name: str,
    pairs: pd.DataFrame,
    scale: Scale,
    annotators: list[str],
    options: DesignOptions,
    *,
    guideline: str | None = None,
    file: str | None = None,
    extra_config: dict | None = None,
    engine: Engine | None = None,
) -> CreatedStudy:
    """Prepare (sample + plan) and create study *name* in one transaction: the study, its
    access codes, its design and the warnings. Practice pairs (rows with a
    ``practice_answer``) are split off first: they are not planned into any queue."""
    pairs, practice = split_pairs(pairs, scale, file)
    prep = prepare_study(pairs, annotators, options, file=file)
    if "stopping" in prep.config and not scale.has_polarity:
        raise UsageProblem(
            t(
                "a target half-width (target_ci) audits accuracy against the doctors' "
                "majority: the {scale} scale needs positive and negative values",
                scale=scale.name,
            )
        )
    prep.config.update(extra_config or {})
    out = create_study(
        name,
        prep.pairs,
        scale,
        queues=prep.queues,
        config=prep.config,
        guideline=guideline,
        audit_groups=prep.audit_groups,
        practice=practice,
        file=file,
        engine=engine,
    )
    return CreatedStudy(
        out["study"], out["items"], out["annotators"], prep.config, list(prep.warnings)
    )


#: Accuracy of the automatic labels assumed per group when there is no pilot.
DEFAULT_ACCURACY = 0.9


def plan_budget(
    pairs: pd.DataFrame,
    annotators: int,
    *,
    group_by: list[str] | None = None,
    sample_per_group: tuple[int, int] | None = None,
    per_item: int | None = None,
    tiebreak: bool = False,
    calibration: int = 0,
    target_ci: float | None = None,
    accuracy: float = DEFAULT_ACCURACY,
    error: float = 0.05,
    dont_know: float = 0.02,
    pilot: Study | None = None,
) -> dict:
    """``medsim study plan``: the expected number of ratings of a design, per group and in
    total, before a study starts (:func:`medsim_annot.design.adaptive.expected_ratings`).

    The accuracy of the automatic labels per group and the share of pairs whose first two
    ratings disagree come from *pilot* (a study already rated: its majority verdicts per group
    and the first two current ratings of each pair) or else from *accuracy*, *error* and
    *dont_know*. Nothing is written."""
    group_by = [c for c in (group_by or []) if c in pairs.columns]
    if sample_per_group is not None:
        pos, neg = sample_per_group
        pairs = stratified_sample(pairs, pos, neg, group_by, 0, allow_fewer=True).pairs
    keys = pairs[group_by].astype(str).agg(" / ".join, axis=1) if group_by else None
    sizes = keys.value_counts().sort_index() if keys is not None else pd.Series({"all": len(pairs)})
    acc_by_group: dict[str, float] = {}
    disagreement = None
    source = "defaults"
    if pilot is not None:
        gt = study_gold_table(pilot)
        t = gt.table
        judged = t["verified"] | t["auto_label_disagrees"]
        if group_by and all(c in t.columns for c in group_by):
            pk = t[group_by].astype(str).agg(" / ".join, axis=1)
            for g, sel in t[judged].groupby(pk[judged]):
                acc_by_group[str(g)] = float(sel["verified"].mean())
        if judged.any():
            acc_all = float(t.loc[judged, "verified"].mean())
            accuracy = acc_all
        r = gt.ratings.sort_values([C.PAIR_ID, C.RATED_AT], kind="stable")
        firsts = r.groupby(C.PAIR_ID).head(2)
        two = firsts.groupby(C.PAIR_ID)[C.VALUE].agg(list)
        two = two[two.map(len) == 2]
        if len(two):
            disagreement = float(np.mean([needs_tiebreak(a, b) for a, b in two]))
        source = f"pilot study '{pilot.name}'"
    groups = {str(g): (int(n), acc_by_group.get(str(g), accuracy)) for g, n in sizes.items()}
    out = expected_ratings(
        groups,
        annotators=annotators,
        per_item=per_item,
        tiebreak=tiebreak,
        calibration=calibration,
        agreement_error=error,
        dont_know=dont_know,
        target_ci=target_ci,
        disagreement=disagreement,
    )
    out["assumptions"] = {
        "source": source,
        "accuracy": {g: round(a, 4) for g, (_, a) in groups.items()},
        "disagreement": round(out["tiebreak_share"], 4),
        "annotators": annotators,
        "per_item": per_item,
        "tiebreak": tiebreak,
        "calibration": calibration,
        "target_ci": target_ci,
    }
    return out
