"""The **EHR-Rel wide file** (read-only import), the format of EHR-RelA.tsv:
``snomed_id_1, snomed_label_1, snomed_id_2, snomed_label_2, rater_<X>..., mean_rating,
CUI_1, CUI_2``. Annotator names are the ``<X>`` suffixes; empty cells are "not rated".
"""

from __future__ import annotations

import pandas as pd

from . import columns as C
from .errors import InputError, Problem
from .pairs import validate_pairs
from .scales import RELATEDNESS_0_3, Scale


def is_ehr_rel(columns) -> bool:
    """Whether a header is an EHR-Rel wide file (as opposed to a long ratings file)."""
    cols = set(columns)
    return all(c in cols for c in C.EHR_REQUIRED) and any(
        str(c).startswith(C.EHR_RATER_PREFIX) for c in cols
    )


def rater_columns(columns) -> list[str]:
    return [
        c
        for c in columns
        if str(c).startswith(C.EHR_RATER_PREFIX) and len(str(c)) > len(C.EHR_RATER_PREFIX)
    ]


def split_ehr_rel(
    frame: pd.DataFrame, file: str | None = None, scale: Scale = RELATEDNESS_0_3
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a wide EHR-Rel frame (strings) into a pairs frame and a long ratings frame.

    ``pair_id`` is ``<snomed_id_1>-<snomed_id_2>``; ``concept_id_*`` are the SNOMED ids and the
    CUIs are kept as metadata. Ratings are validated against *scale* (0–3 by default).
    """
    missing = [c for c in C.EHR_REQUIRED if c not in frame.columns]
    raters = rater_columns(frame.columns)
    if missing:
        raise InputError([Problem("required column is missing", column=c) for c in missing], file)
    if not raters:
        raise InputError.single("has no rater_<name> columns", file=file, row=1)
    df = frame.copy()
    for col in df.columns:
        df[col] = df[col].map(lambda v: "" if v is None else str(v)).str.strip()
    pairs = pd.DataFrame(
        {
            C.PAIR_ID: df[C.EHR_ID_1] + "-" + df[C.EHR_ID_2],
            C.TERM_1: df[C.EHR_LABEL_1],
            C.TERM_2: df[C.EHR_LABEL_2],
            C.CONCEPT_ID_1: df[C.EHR_ID_1],
            C.CONCEPT_ID_2: df[C.EHR_ID_2],
        }
    )
    for extra in (C.EHR_CUI_1, C.EHR_CUI_2):
        if extra in df.columns:
            pairs[extra] = df[extra]
    pairs = validate_pairs(pairs, file)
    problems = []
    rows = []
    for i, rec in enumerate(df.to_dict(orient="records")):
        for col in raters:
            raw = rec[col]
            if raw == "":
                continue
            try:
                value = scale.canonical(raw)
            except ValueError as exc:
                problems.append(Problem(str(exc), row=i + 2, column=col))
                continue
            rows.append((pairs.at[i, C.PAIR_ID], col[len(C.EHR_RATER_PREFIX) :], value))
    if problems:
        raise InputError(problems, file)
    ratings = pd.DataFrame(rows, columns=[C.PAIR_ID, C.ANNOTATOR, C.RATING])
    ratings[C.RATED_AT] = pd.NaT
    ratings[C.COMMENT] = ""
    ratings[C.UNCLEAR] = False
    ratings[C.RATED_AT] = pd.to_datetime(ratings[C.RATED_AT], utc=True)
    return pairs, ratings
