"""Gold files for evaluating embedding scores: a gold export (majority or mean), a ratings
file (long), an EHR-Rel wide file or a pairs file with ``auto_label``, read into one
:class:`Gold` (values per pair, the task, where the values came from).

Used by :mod:`medsim_annot.services.scoring` (``medsim evaluate``, the scoring page).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.ehr_rel import is_ehr_rel, split_ehr_rel
from data_schemas.errors import InputError, Problem
from data_schemas.gold import BINARY_WORDS, EMPTY_TEXT, is_empty, read_values
from data_schemas.pairs import validate_pairs
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, t
from medsim_annot.io import read_table

TASKS = ("binary", "graded")
#: Cell texts read as "no value" (the gold file contract's, one definition for every reader).
NAN_TEXT = EMPTY_TEXT


@dataclass
class Gold:
    """Gold values by pair: ``values`` (float Series indexed by pair_id), ``task``, ``source``
    (which column or file kind they came from) and the pairs' terms when known."""

    values: pd.Series
    task: str
    source: str
    terms: pd.DataFrame | None = None


def read_gold(path: str | os.PathLike, task: str | None = None) -> Gold:
    """Read a gold file (see :func:`gold_from_frame`)."""
    return gold_from_frame(read_table(path), task, file=str(path))


def gold_from_frame(
    frame: pd.DataFrame, task: str | None = None, *, file: str | None = None
) -> Gold:
    """Gold values from any of the files the project writes.

    * an EHR-Rel wide file — mean rating per pair (graded);
    * a gold export — ``majority`` (binary, when its values are 0/1, same/not_same, ...) or
      ``mean`` (graded);
    * a long ratings file (``pair_id``, ``annotator``, ``rating``) — mean rating per pair
      (graded; for ``task="binary"`` a pair is similar when the mean is above 0.5, dissimilar
      below, and left out on a tie); binary words map to 1/0 and "don't know" is ignored;
    * a pairs file with ``auto_label`` (binary).

    Pairs with an empty gold value are left out.
    """
    if task is not None and task not in TASKS:
        raise UsageProblem(t("unknown task '{task}'; use binary or graded", task=task))
    cols = set(frame.columns)
    if is_ehr_rel(frame.columns):
        pairs, ratings = split_ehr_rel(frame, file)
        values = ratings.assign(v=ratings[C.RATING].astype(float)).groupby(C.PAIR_ID)["v"].mean()
        return _finish(values, task or "graded", N_("EHR-Rel mean rating"), pairs, file)
    if C.PAIR_ID not in cols:
        raise InputError([Problem(t("required column is missing"), column=C.PAIR_ID)], file)
    terms = (
        frame[[c for c in (C.PAIR_ID, C.TERM_1, C.TERM_2) if c in cols]].drop_duplicates(C.PAIR_ID)
        if {C.TERM_1, C.TERM_2} <= cols
        else None
    )
    majority_binary = "majority" in cols and all(
        is_empty(v) or str(v).strip().lower() in BINARY_WORDS for v in frame["majority"]
    )
    if "majority" in cols and majority_binary and task != "graded":
        values = _parse_column(frame, "majority", file, binary=True)
        return _finish(values, "binary", N_("majority"), terms, file)
    if "mean" in cols:
        values = _parse_column(frame, "mean", file, binary=False)
        return _finish(values, task or "graded", N_("mean"), terms, file)
    if {C.ANNOTATOR, C.RATING} <= cols:
        values = _parse_column(frame, C.RATING, file, binary=False, allow_binary_words=True)
        mean = values.groupby(level=0, sort=False).mean()
        return _finish(mean, task or "graded", N_("mean of ratings"), terms, file)
    if C.AUTO_LABEL in cols:
        pairs = validate_pairs(frame, file)
        values = pd.Series(
            pairs[C.AUTO_LABEL].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan),
            index=pairs[C.PAIR_ID].to_numpy(),
        )
        return _finish(
            values, task or "binary", N_("auto_label"), pairs[[C.PAIR_ID, C.TERM_1, C.TERM_2]], file
        )
    raise InputError.single(
        t(
            "is not a gold file: it needs a 'majority' or 'mean' column, ratings (annotator, "
            "rating), an 'auto_label' column or the EHR-Rel rater columns"
        ),
        file=file,
        row=1,
    )


def _parse_column(frame, col, file, *, binary: bool, allow_binary_words: bool = False) -> pd.Series:
    values, problems = read_values(frame, col, binary=binary, binary_words=allow_binary_words)
    if problems:
        raise InputError(problems, file)
    return values


def _finish(values: pd.Series, task: str, source: str, terms, file) -> Gold:
    values = (
        values[~values.index.duplicated(keep="last")] if source != "mean of ratings" else values
    )
    values = values.dropna().astype(np.float64)
    if task == "binary":
        if source == "mean of ratings" or not set(np.unique(values)) <= {0.0, 1.0}:
            values = values[values != 0.5]
            values = (values > 0.5).astype(np.float64)
    if len(values) == 0:
        raise InputError.single(t("has no pair with a gold value"), file=file)
    if terms is not None:
        terms = terms.copy()
        terms[C.PAIR_ID] = terms[C.PAIR_ID].astype(str)
    return Gold(values=values, task=task, source=source, terms=terms)
