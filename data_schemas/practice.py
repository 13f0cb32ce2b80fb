"""The **practice pairs** contract: pairs with a reference answer and an optional explanation,
served before a study's real queue with feedback (docs/practice.md).

A practice file is a pairs file (:mod:`data_schemas.pairs`: ``pair_id``, ``term_1``,
``term_2``, ...) with a ``practice_answer`` column (a decisive value of the study's scale:
not a "no decision" option) and an optional ``explanation`` (at most
:data:`~data_schemas.limits.COMMENT_MAX_CHARS` characters, the comment cap). In a study's own
pairs file the rows with a non-empty ``practice_answer`` are practice pairs and the others
real pairs; in a separate practice file every row needs one. Every problem is reported with
its file, row (the header is line 1) and column, and nothing is stored while one remains.

The gate's two figures (:func:`agreement`): *exact* (the answer is the reference answer) and
*within one* (on a scale with a numeric level, the codes differ by at most 1; on a nominal
scale it equals exact). A "no decision" answer is wrong in both. The gate compares the
*exact* figure with the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import columns as C
from ._text import tr
from .errors import InputError, Problem
from .limits import COMMENT_MAX_CHARS
from .scales import Scale


@dataclass(frozen=True)
class PracticeRow:
    """One practice pair as the store takes it (``answer`` as ratings store a value)."""

    pair_id: str
    term_1: str
    term_2: str
    answer: str
    explanation: str


def _cell(raw) -> str:
    if raw is None or (isinstance(raw, float) and np.isnan(raw)):
        return ""
    return str(raw).strip()


def is_marked(frame: pd.DataFrame) -> pd.Series:
    """Which rows of a pairs frame are practice pairs (a non-empty ``practice_answer``)."""
    if C.PRACTICE_ANSWER not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[C.PRACTICE_ANSWER].map(_cell) != ""


def practice_rows(
    frame: pd.DataFrame, scale: Scale, file: str | None = None, *, every_row: bool = True
) -> list[PracticeRow]:
    """The practice pairs of a validated pairs *frame* (:func:`~data_schemas.pairs.
    validate_pairs`; row ``i`` is line ``i + 2`` of *file*). With *every_row* each row must
    have a ``practice_answer``; without, rows with none are skipped (real pairs).

    Raises :class:`InputError` naming every row and column at fault: a missing column, an
    empty answer (*every_row*), an answer off the scale or a "no decision" one, an
    explanation over the comment cap.
    """
    if C.PRACTICE_ANSWER not in frame.columns:
        raise InputError(
            [Problem(tr("required column is missing"), column=C.PRACTICE_ANSWER)], file
        )
    explanations = (
        frame[C.EXPLANATION].map(_cell)
        if C.EXPLANATION in frame.columns
        else pd.Series("", index=frame.index)
    )
    out: list[PracticeRow] = []
    problems: list[Problem] = []
    for i, (rec, raw, why) in enumerate(
        zip(frame.to_dict(orient="records"), frame[C.PRACTICE_ANSWER].tolist(), explanations)
    ):
        row = i + 2
        text = _cell(raw)
        if text == "":
            if every_row:
                problems.append(
                    Problem(
                        tr("is empty; every practice pair needs a reference answer"),
                        row=row,
                        column=C.PRACTICE_ANSWER,
                    )
                )
            continue
        try:
            value = scale.canonical(text)
        except ValueError as exc:
            problems.append(Problem(str(exc), row=row, column=C.PRACTICE_ANSWER))
            continue
        if scale.is_no_decision(value):
            problems.append(
                Problem(
                    tr(
                        "'{value}' is no decision: a practice pair needs a reference answer",
                        value=text,
                    ),
                    row=row,
                    column=C.PRACTICE_ANSWER,
                )
            )
            continue
        if len(why) > COMMENT_MAX_CHARS:
            problems.append(
                Problem(
                    tr(
                        "has {n} characters; an explanation may have at most {limit} (the "
                        "comment cap)",
                        n=len(why),
                        limit=COMMENT_MAX_CHARS,
                    ),
                    row=row,
                    column=C.EXPLANATION,
                )
            )
            continue
        out.append(
            PracticeRow(
                pair_id=str(rec[C.PAIR_ID]),
                term_1=str(rec[C.TERM_1]),
                term_2=str(rec[C.TERM_2]),
                answer=str(Scale.display(value)),
                explanation=why,
            )
        )
    if problems:
        raise InputError(problems, file)
    return out


def within_one_defined(scale: Scale) -> bool:
    """Whether "within one" differs from "exact": a scale with a numeric level."""
    return scale.level != "nominal"


def agreement(scale: Scale, value, reference) -> tuple[bool, bool]:
    """``(exact, within_one)`` of a practice *value* against its *reference* answer.

    >>> from data_schemas.scales import RELATEDNESS_0_3
    >>> agreement(RELATEDNESS_0_3, "2", "3"), agreement(RELATEDNESS_0_3, 0, 3)
    ((False, True), (False, False))
    """
    if scale.is_no_decision(value):
        return False, False
    got, ref = scale.code(scale.canonical(value)), scale.code(scale.canonical(reference))
    exact = Scale._same(scale.canonical(value), scale.canonical(reference))
    if not within_one_defined(scale) or got is None or ref is None:
        return exact, exact
    return exact, abs(float(got) - float(ref)) <= 1.0
