"""A study's practice pairs and the gate's settings.

The settings live in the study's config under ``practice``: ``min_pairs`` (practice answers
the gate looks at: the last N of the current round; default: every practice pair, at most
:data:`DEFAULT_MIN_PAIRS`) and ``threshold`` (the share of those N answered exactly as the
reference answer that opens the real queue; default :data:`DEFAULT_THRESHOLD`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError
from data_schemas.options import PRACTICE_MIN_PAIRS, PRACTICE_THRESHOLD
from data_schemas.pairs import validate_pairs
from data_schemas.practice import PracticeRow, is_marked, practice_rows
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.io import read_table
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Transaction, session_scope
from medsim_annot.storage import events as events_store
from medsim_annot.storage import practice as store
from medsim_annot.storage import studies as studies_store

#: Practice answers the gate looks at when the admin sets none (or fewer pairs exist).
DEFAULT_MIN_PAIRS = 10
#: Exact agreement with the reference answers that opens the real queue by default.
DEFAULT_THRESHOLD = 0.8


@dataclass(frozen=True)
class PracticeSettings:
    """The gate: the last ``min_pairs`` practice answers of the round must agree exactly
    with the reference answers at a share of at least ``threshold``. ``min_pairs`` ``None``:
    every practice pair, at most :data:`DEFAULT_MIN_PAIRS`."""

    min_pairs: int | None = None
    threshold: float = DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        if self.min_pairs is not None:
            PRACTICE_MIN_PAIRS.check(self.min_pairs)
        PRACTICE_THRESHOLD.check(self.threshold)

    @classmethod
    def of(cls, config: dict) -> PracticeSettings:
        p = dict(config.get("practice") or {})
        n = p.get("min_pairs")
        return cls(
            min_pairs=None if n is None else int(n),
            threshold=float(p.get("threshold", DEFAULT_THRESHOLD)),
        )

    def needed(self, n_pairs: int) -> int:
        """Practice answers the gate looks at, for a study with *n_pairs* practice pairs."""
        if self.min_pairs is not None:
            return int(self.min_pairs)
        return max(1, min(DEFAULT_MIN_PAIRS, n_pairs))

    def to_config(self) -> dict:
        return asdict(self)


def read_practice_file(path: str | Path, scale: Scale) -> list[PracticeRow]:
    """Read and check a practice file (any supported table format): a pairs file whose every
    row has a ``practice_answer`` (and optionally an ``explanation``). Raises
    :class:`~data_schemas.errors.InputError` naming the file, row and column."""
    frame = validate_pairs(read_table(path), str(path))
    return practice_rows(frame, scale, str(path), every_row=True)


def split_pairs(
    pairs: pd.DataFrame, scale: Scale, file: str | None = None
) -> tuple[pd.DataFrame, list[PracticeRow]]:
    """A study's validated pairs frame split into its real pairs and its practice pairs (the
    rows with a non-empty ``practice_answer``, checked by :func:`~data_schemas.practice.
    practice_rows`); the practice columns are dropped from the real pairs."""
    if C.PRACTICE_ANSWER not in pairs.columns:
        return pairs, []
    rows = practice_rows(pairs, scale, file, every_row=False)
    cols = [c for c in (C.PRACTICE_ANSWER, C.EXPLANATION) if c in pairs.columns]
    real = pairs.loc[~is_marked(pairs)].drop(columns=cols).reset_index(drop=True)
    if rows and len(real) == 0:
        raise InputError.single(
            "has only practice pairs (every row has a practice_answer); a study needs real "
            "pairs too",
            file=file,
        )
    return real, rows


def store_practice_pairs(s: Transaction, study_id: int, rows: list[PracticeRow]) -> None:
    """Set the practice pairs of *study_id* inside the caller's transaction."""
    store.replace_practice_pairs(
        s,
        study_id,
        [
            {
                "pair_id": r.pair_id,
                "term_1": r.term_1,
                "term_2": r.term_2,
                "answer": r.answer,
                "explanation": r.explanation,
            }
            for r in rows
        ],
    )


def set_practice(
    study: Study,
    rows: list[PracticeRow] | None = None,
    *,
    min_pairs: int | None = None,
    threshold: float | None = None,
) -> PracticeSettings:
    """Give *study* the practice pairs *rows* (``None``: keep the ones it has) and change the
    gate's settings given; one transaction, one ``practice_set`` event. A threshold outside
    0–1 or ``min_pairs`` below 1 is refused before anything is stored."""
    info = study.reloaded()
    now = PracticeSettings.of(info.config)
    new = PracticeSettings(
        min_pairs=now.min_pairs if min_pairs is None else min_pairs,
        threshold=now.threshold if threshold is None else threshold,
    )
    config = dict(info.config)
    config["practice"] = new.to_config()
    with session_scope(study.engine) as s:
        if rows is not None:
            if not rows:
                raise UsageProblem(t("a practice file needs at least one practice pair"))
            store_practice_pairs(s, info.id, rows)
        if not store.has_practice(s, info.id):
            raise UsageProblem(
                t(
                    "study '{study}' has no practice pairs yet: give a practice file",
                    study=info.name,
                )
            )
        studies_store.set_config(s, info.id, config)
        events_store.add_event(
            s,
            "practice_set",
            study_id=info.id,
            detail={**new.to_config(), "pairs": None if rows is None else len(rows)},
        )
    return new
