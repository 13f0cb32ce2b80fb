"""The **pairs** contract: two terms to compare, with optional automatic label and groups.

Columns: ``pair_id`` (unique; generated stably from the row when absent or empty),
``term_1``, ``term_2`` (non-empty), optional ``auto_label`` (0 = dissimilar, 1 = similar),
``dataset``, ``difficulty`` (easy|hard), ``negative_strategy`` (random|levenshtein),
``concept_id_1``, ``concept_id_2``, ``check_answer`` (the known answer of a check pair, a
value of the study's scale, checked when the study is created; empty for other pairs). Any
other column is kept as metadata. Ids, terms, dataset
and concept ids are one line of printable text: a line break, tab or other control character
in them is an error naming the row and column.
"""

from __future__ import annotations

import hashlib

import pandas as pd

from . import columns as C
from ._text import N_, tr
from ._validate import CONTROL_EXPLANATION, no_control_chars, pa, run_schema
from .errors import InputError, Problem
from .limits import TERM_MAX_CHARS

_LABELS = {"0": 0, "1": 1, "0.0": 0, "1.0": 1}


def stable_pair_id(term_1: str, term_2: str, *extra: str) -> str:
    """A short id derived from the row's content, the same on every run.

    >>> stable_pair_id("fever", "pyrexia")
    'p-2e3b8f58ea84'
    """
    digest = hashlib.sha256("\x1f".join((term_1, term_2, *extra)).encode("utf-8")).hexdigest()
    return "p-" + digest[:12]


_non_empty = pa.Check(lambda s: s.str.strip().str.len() > 0, element_wise=False, name="non_empty")
_short_term = pa.Check(
    lambda s: s.str.strip().str.len() <= TERM_MAX_CHARS, element_wise=False, name="short_term"
)

SCHEMA = pa.DataFrameSchema(
    {
        C.PAIR_ID: pa.Column(
            str,
            checks=[_non_empty, no_control_chars],
            unique=True,
            report_duplicates="exclude_first",
        ),
        C.TERM_1: pa.Column(str, checks=[_non_empty, no_control_chars, _short_term]),
        C.TERM_2: pa.Column(str, checks=[_non_empty, no_control_chars, _short_term]),
        C.DATASET: pa.Column(str, checks=[no_control_chars], required=False),
        C.CONCEPT_ID_1: pa.Column(str, checks=[no_control_chars], required=False),
        C.CONCEPT_ID_2: pa.Column(str, checks=[no_control_chars], required=False),
        C.AUTO_LABEL: pa.Column(str, checks=pa.Check.isin(["", "0", "1"]), required=False),
        C.DIFFICULTY: pa.Column(str, checks=pa.Check.isin(["", *C.DIFFICULTIES]), required=False),
        C.NEGATIVE_STRATEGY: pa.Column(
            str, checks=pa.Check.isin(["", *C.NEGATIVE_STRATEGIES]), required=False
        ),
    },
    strict=False,
    coerce=False,
)

_EXPLAIN = {
    "non_empty": N_("is empty; every pair needs a non-empty value here"),
    "no_control_chars": CONTROL_EXPLANATION,
    "short_term": N_(
        "is longer than {max_chars} characters; a term is a word or a few "
        "words (is this the right column?)"
    ),
    f"{C.PAIR_ID}:field_uniqueness": N_("pair_id '{value}' appears more than once"),
    "field_uniqueness": N_("value '{value}' appears more than once"),
    f"{C.AUTO_LABEL}:isin": N_("auto_label must be 0 or 1 (or empty), not '{value}'"),
    f"{C.DIFFICULTY}:isin": N_("difficulty must be 'easy' or 'hard' (or empty), not '{value}'"),
    f"{C.NEGATIVE_STRATEGY}:isin": N_(
        "negative_strategy must be 'random' or 'levenshtein' (or empty), not '{value}'"
    ),
}


def validate_pairs(frame: pd.DataFrame, file: str | None = None) -> pd.DataFrame:
    """Check a pairs frame (all cells strings, as :func:`medsim_annot.io.read_table` gives)
    and return it typed: strings stripped, ``auto_label`` as nullable ``Int64``, ``pair_id``
    filled. Raises :class:`InputError` listing every problem by row and column.
    """
    df = frame.copy()
    missing = [c for c in C.PAIR_REQUIRED if c not in df.columns]
    if missing:
        raise InputError(
            [Problem(tr("required column is missing"), column=c) for c in missing], file
        )
    if len(df) == 0:
        raise InputError.single(tr("has no pairs (only a header)"), file=file)
    for col in df.columns:
        df[col] = df[col].map(lambda v: "" if v is None else str(v)).str.strip()
    if C.AUTO_LABEL in df.columns:
        df[C.AUTO_LABEL] = df[C.AUTO_LABEL].map(
            lambda v: (
                str(_LABELS.get(v.lower(), v))
                if v.lower() in _LABELS
                else {"true": "1", "false": "0"}.get(v.lower(), v)
            )
        )
    if C.PAIR_ID not in df.columns:
        df.insert(0, C.PAIR_ID, "")
    empty_id = df[C.PAIR_ID] == ""
    if empty_id.any():
        extra_cols = [
            c
            for c in (
                C.AUTO_LABEL,
                C.DATASET,
                C.DIFFICULTY,
                C.NEGATIVE_STRATEGY,
                C.CONCEPT_ID_1,
                C.CONCEPT_ID_2,
            )
            if c in df.columns
        ]
        df.loc[empty_id, C.PAIR_ID] = [
            stable_pair_id(r[C.TERM_1], r[C.TERM_2], *(r[c] for c in extra_cols))
            for r in df.loc[empty_id].to_dict(orient="records")
        ]
    df = run_schema(SCHEMA, df, file, _EXPLAIN, {"max_chars": TERM_MAX_CHARS})
    if C.AUTO_LABEL in df.columns:
        df[C.AUTO_LABEL] = pd.array(
            [None if v == "" else int(v) for v in df[C.AUTO_LABEL]], dtype="Int64"
        )
    order = [c for c in (C.PAIR_ID, C.TERM_1, C.TERM_2) if c in df.columns]
    return df[order + [c for c in df.columns if c not in order]].reset_index(drop=True)


def group_columns(frame: pd.DataFrame, wanted=C.GROUP_COLUMNS) -> list[str]:
    """The group columns of *wanted* that *frame* has with at least one non-empty value."""
    return [c for c in wanted if c in frame.columns and (frame[c].astype(str) != "").any()]
