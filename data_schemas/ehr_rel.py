"""The **EHR-Rel wide file** (read-only import), the format of EHR-RelA.tsv:
``snomed_id_1, snomed_label_1, snomed_id_2, snomed_label_2, rater_<X>..., mean_rating,
CUI_1, CUI_2``. Annotator names are the ``<X>`` suffixes; empty cells are "not rated".

**A row is an item.** A published file may list the same concept pair on two rows, rated by
different doctors; the paper counts every row as an item (Schulz et al., COLING 2020: the
item count and every coefficient of Tables 2-3 are over rows). The ``pair_id`` of a row is
``<snomed_id_1>-<snomed_id_2>``; when it repeats, the second row in file order gets
``<id>#2``, the third ``<id>#3``, and so on, and :func:`read_ehr_rel` returns a note saying
so (the CLI prints it on stderr, the pages show it).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from . import columns as C
from ._text import tr, trn
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


@dataclass(frozen=True)
class EhrRelFile:
    """An EHR-Rel wide file, validated: ``pairs`` (one row per file row, in file order),
    ``ratings`` (long, one row per non-empty rater cell) and ``notes``, sentences for the
    user about how the file was read (e.g. pairs repeated on several rows)."""

    pairs: pd.DataFrame
    ratings: pd.DataFrame
    notes: tuple[str, ...] = ()


def row_pair_ids(id_1: pd.Series, id_2: pd.Series) -> tuple[list[str], int]:
    """Unique ``pair_id`` per row: ``ID1-ID2``, then ``ID1-ID2#2``, ``ID1-ID2#3`` ... for the
    later rows of a repeated pair, in file order; and how many pairs repeat.

    >>> row_pair_ids(pd.Series(["1", "3", "1", "1"]), pd.Series(["2", "4", "2", "2"]))
    (['1-2', '3-4', '1-2#2', '1-2#3'], 1)
    """
    base = (id_1.astype(str) + "-" + id_2.astype(str)).tolist()
    seen: dict[str, int] = {}
    out = []
    for pid in base:
        seen[pid] = seen.get(pid, 0) + 1
        out.append(pid if seen[pid] == 1 else f"{pid}#{seen[pid]}")
    return out, sum(1 for n in seen.values() if n > 1)


def repeated_pairs_note(n: int) -> str:
    """The one line said when *n* concept pairs appear on more than one row."""
    return trn(
        "{n} pair appears on more than one row; each row is kept as its own item, as in the "
        "published tables",
        "{n} pairs appear on more than one row; each row is kept as its own item, as in the "
        "published tables",
        n,
        n=n,
    )


def split_ehr_rel(
    frame: pd.DataFrame, file: str | None = None, scale: Scale = RELATEDNESS_0_3
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a wide EHR-Rel frame (strings) into a pairs frame and a long ratings frame
    (:func:`read_ehr_rel` without the notes)."""
    read = read_ehr_rel(frame, file, scale)
    return read.pairs, read.ratings


def read_ehr_rel(
    frame: pd.DataFrame, file: str | None = None, scale: Scale = RELATEDNESS_0_3
) -> EhrRelFile:
    """Validate a wide EHR-Rel frame (strings) into pairs, long ratings and notes.

    ``pair_id`` is ``<snomed_id_1>-<snomed_id_2>`` (``#2``, ``#3`` ... appended for the later
    rows of a pair listed more than once: every row is an item); ``concept_id_*`` are the
    SNOMED ids and the CUIs are kept as metadata. Ratings are validated against *scale* (0–3
    by default). Raises :class:`InputError` naming file, row and column.
    """
    missing = [c for c in C.EHR_REQUIRED if c not in frame.columns]
    raters = rater_columns(frame.columns)
    if missing:
        raise InputError(
            [Problem(tr("required column is missing"), column=c) for c in missing], file
        )
    if not raters:
        raise InputError.single(tr("has no rater_<name> columns"), file=file, row=1)
    df = frame.copy()
    for col in df.columns:
        df[col] = df[col].map(lambda v: "" if v is None else str(v)).str.strip()
    ids, repeated = row_pair_ids(df[C.EHR_ID_1], df[C.EHR_ID_2])
    pairs = pd.DataFrame(
        {
            C.PAIR_ID: ids,
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
    notes = (repeated_pairs_note(repeated),) if repeated else ()
    return EhrRelFile(pairs, ratings, notes)
