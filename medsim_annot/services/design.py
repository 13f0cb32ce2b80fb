"""Study design use case shared by ``medsim study create`` and the Study setup page:
sample the pairs, plan the queues and create the study in one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from data_schemas import columns as C
from data_schemas.scales import Scale
from medsim_annot.design import plan_study, stratified_sample
from medsim_annot.design.assignment import Slot
from medsim_annot.errors import UsageProblem
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


@dataclass
class PreparedStudy:
    """What :func:`prepare_study` decided, before anything is written."""

    pairs: pd.DataFrame
    queues: dict[str, list[Slot]]
    config: dict
    counts: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)

    def queue_sizes(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "annotator": a,
                    "slots": len(q),
                    "calibration": sum(s.kind == "calibration" for s in q),
                    "duplicates": sum(s.kind == "duplicate" for s in q),
                }
                for a, q in self.queues.items()
            ],
            columns=["annotator", "slots", "calibration", "duplicates"],
        )


def prepare_study(
    pairs: pd.DataFrame, annotators: list[str], options: DesignOptions, *, file: str | None = None
) -> PreparedStudy:
    """Sample *pairs* and plan every annotator's queue (nothing is written)."""
    names = list(dict.fromkeys(a.strip() for a in annotators if a and a.strip()))
    if not names:
        raise UsageProblem("add at least one annotator")
    config: dict = {"sampling": "all", "seed": int(options.seed)}
    counts, warnings = None, []
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
    plan = plan_study(
        len(pairs),
        names,
        per_item=options.per_item,
        calibration=options.calibration,
        duplicates=options.duplicates,
        seed=options.seed,
        shuffle=options.shuffle,
    )
    config.update(plan.config)
    return PreparedStudy(pairs, plan.queues, config, counts, warnings + plan.warnings)


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
) -> dict:
    """Prepare (sample + plan) and create study *name* in one transaction. Returns
    :func:`~medsim_annot.services.studies.create_study`'s result plus ``config`` and
    ``warnings``."""
    from medsim_annot.services.studies import create_study

    prep = prepare_study(pairs, annotators, options, file=file)
    prep.config.update(extra_config or {})
    out = create_study(
        name,
        prep.pairs,
        scale,
        queues=prep.queues,
        config=prep.config,
        guideline=guideline,
        engine=engine,
    )
    out["config"] = prep.config
    out["warnings"] = prep.warnings
    return out
