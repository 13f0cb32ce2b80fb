"""Active serving (``medsim study create --sampling active``): a study whose doctors are
served, in each group of the sequential audit, the pairs the model is least sure about more
often, with every pair keeping a known probability of being served.

At creation, every pair of a group gets a draw probability from the model's uncertainty
about whether its automatic label is right (:func:`medsim_annot.stats.active.
sampling_probabilities`: growing with the uncertainty, mixed with a uniform floor); one
seeded draw per pair decides whether it enters the sample. The queues are planned as for any
study (k of n, 2 + 1, check pairs, group-interleaved random order) and the slots of the pairs
not drawn are left out before anything is written, so a pair is still never served twice to
one doctor and every save is stored exactly once. Each main slot records the probability its
pair was drawn with (``assignments.draw_probability``), the predictions are stored with the
study (a version and an event), and the sequential audit reweights the labelled pairs by the
inverse of that probability (:mod:`medsim_annot.services.stopping_ppi`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.scales import Scale
from medsim_annot.design.assignment import Slot
from medsim_annot.errors import UsageProblem
from medsim_annot.services import stored_predictions as stored
from medsim_annot.services.design import CreatedStudy, DesignOptions, prepare_study
from medsim_annot.services.scoring import read_scores
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.active import (
    DEFAULT_DRAW_SHARE,
    DEFAULT_FLOOR,
    sampling_probabilities,
    score_probabilities,
    uncertainty,
)
from medsim_annot.storage import Engine, session_scope, with_retry
from medsim_annot.storage import predictions as pstore


@dataclass(frozen=True)
class ActiveDraw:
    """Each pair's draw probability (NaN: a check pair, outside the draw) and whether it was
    drawn."""

    pi: np.ndarray
    drawn: np.ndarray


def draw_pairs(
    scores: np.ndarray,
    groups: list[str],
    *,
    seed: int,
    exclude: np.ndarray | None = None,
    floor: float = DEFAULT_FLOOR,
    share: float = DEFAULT_DRAW_SHARE,
) -> ActiveDraw:
    """Per group, each pair's probability from the model's uncertainty (the stored score read
    as P(same) by :func:`~medsim_annot.stats.active.score_probabilities`) and one seeded
    draw; pairs in *exclude* (check pairs) are kept out of the draw."""
    x = np.asarray(scores, dtype=np.float64)
    keep = np.ones(len(x), bool) if exclude is None else ~np.asarray(exclude, bool)
    pi = np.full(len(x), np.nan)
    keys = np.asarray(groups, dtype=object)
    for g in sorted(set(keys[keep])):
        sel = keep & (keys == g)
        pi[sel] = sampling_probabilities(
            uncertainty(score_probabilities(x[sel])), floor=floor, share=share
        )
    rng = np.random.default_rng([int(seed), 36])
    u = rng.random(len(x))
    drawn = np.where(np.isnan(pi), True, u < np.nan_to_num(pi, nan=1.0))
    return ActiveDraw(pi, drawn)


def create_active_study(
    name: str,
    pairs: pd.DataFrame,
    scale: Scale,
    annotators: list[str],
    options: DesignOptions,
    scores_path: str | os.PathLike,
    *,
    score_column: str | None = None,
    prediction_name: str | None = None,
    guideline: str | None = None,
    file: str | None = None,
    extra_config: dict | None = None,
    engine: Engine | None = None,
) -> CreatedStudy:
    """Create study *name* with active serving (see the module docstring). Needs a target
    half-width (target_ci) and no calibration pairs (each labelled pair must have been
    drawn). The scores file is checked against the pairs before anything is written."""
    if options.target_ci is None:
        raise UsageProblem(
            "active serving (sampling) stops each group on its interval: give a target "
            "half-width (target_ci)"
        )
    if options.calibration:
        raise UsageProblem(
            "active serving (sampling) draws every rated pair: it cannot have calibration "
            "pairs (calibration) rated by everyone"
        )
    path = Path(scores_path)
    frame = read_scores(path)
    column = stored.pick_column(frame, score_column, str(path))
    by_pair = stored.check_scores(
        frame, column, pairs[C.PAIR_ID].astype(str).tolist(), file=str(path)
    )
    prep = prepare_study(pairs, annotators, options, file=file)
    if "stopping" in prep.config and not scale.has_polarity:
        raise UsageProblem(
            f"a target half-width (target_ci) audits accuracy against the doctors' majority: "
            f"the {scale.name} scale needs positive and negative values"
        )
    ids = prep.pairs[C.PAIR_ID].astype(str).tolist()
    checks = (
        prep.pairs[C.CHECK_ANSWER].astype("string").fillna("").str.strip().ne("").to_numpy()
        if C.CHECK_ANSWER in prep.pairs.columns
        else np.zeros(len(ids), bool)
    )
    assert prep.audit_groups is not None  # target_ci given
    got = draw_pairs(
        np.array([by_pair[p] for p in ids]), prep.audit_groups, seed=options.seed, exclude=checks
    )
    queues: dict[str, list[Slot]] = {
        who: [s for s in q if s.kind not in ("main", "duplicate") or got.drawn[s.item]]
        for who, q in prep.queues.items()
    }
    config = {
        **prep.config,
        **(extra_config or {}),
        "active": {
            "floor": DEFAULT_FLOOR,
            "share": DEFAULT_DRAW_SHARE,
            "seed": int(options.seed),
            "pairs": int((~checks).sum()),
            "drawn": int((got.drawn & ~checks).sum()),
        },
    }
    out = create_study(
        name,
        prep.pairs,
        scale,
        queues=queues,
        config=config,
        guideline=guideline,
        audit_groups=prep.audit_groups,
        engine=engine,
    )
    study = open_study(name, engine=engine)

    def record() -> None:
        with session_scope(study.engine) as s:
            items = pstore.item_ids_by_pair(s, study.id)
            pstore.set_draw_probabilities(
                s,
                study.id,
                {
                    items[p]: float(got.pi[i])
                    for i, p in enumerate(ids)
                    if got.drawn[i] and not np.isnan(got.pi[i])
                },
            )

    with_retry(record)
    stored.add_predictions(study, path, score_column=column, name=prediction_name)
    return CreatedStudy(out["study"], out["items"], out["annotators"], config, list(prep.warnings))
