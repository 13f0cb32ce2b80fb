"""Relatedness candidates from EHR co-occurrence: the EHR-Rel method, on DuckDB or Spark.

Schulz et al. (2020, section 3.1) pair, for each patient, all distinct concepts of the
symptom, diagnosis and presenting-complaint categories in the patient's record, drop
administrative concepts with all their SNOMED CT descendants, count in how many patients each
pair co-occurs, and then either draw pairs at random (EHR-RelA) or walk the pairs by
descending count keeping a pair only while both its concepts have appeared in fewer than six
kept pairs, up to 4,000 pairs (EHR-RelB).

The counting is **one SQL query** whose text is the same for both engines
(:func:`pair_counts_sql`); DuckDB runs it in-process (streaming Parquet, spilling to disk),
Spark runs it where the records outgrow one machine. The per-concept cap is inherently
sequential, so it is applied in Python (:func:`greedy_cap`) to the sorted counts streamed
from either engine, reading only as many pairs as it needs. The random draw orders pairs by
an MD5 hash of ``(seed, concept_id_1, concept_id_2)`` computed in SQL, so both engines draw
the same sample for the same seed (:func:`draw_key` is the same key in Python). The engine
adapters (DuckDB, Spark) are in :mod:`medsim_annot.builders.engines`.

Events contract: ``patient_id``, ``concept_id``, ``concept_label`` and optional
``category``, in CSV, TSV or Parquet, or a folder of Parquet (or CSV) parts. Identifiers are
compared as text after trimming spaces (an integer ``concept_id`` column in Parquet becomes
its decimal digits), categories case-insensitively; rows without a patient or concept are
ignored.

References
----------
Schulz, C., Levy-Kramer, J., Van Assel, C., Kepes, M., & Hammerla, N. (2020). Biomedical
Concept Relatedness -- A large EHR-based benchmark. *Proceedings of the 28th International
Conference on Computational Linguistics (COLING)*, 6565-6575.
https://doi.org/10.18653/v1/2020.coling-main.577
"""

from __future__ import annotations

import csv
import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem
from data_schemas.options import MAX_PER_CONCEPT, SEED, TOP, StrOptions
from data_schemas.pairs import stable_pair_id
from medsim_annot.builders.engines import (
    BATCH_ROWS,
    CATEGORIES_VIEW,
    ENGINES,
    EVENTS_VIEW,
    EXCLUDE_VIEW,
    HIERARCHY_VIEW,
    WANTED_VIEW,
    open_engine,
)
from medsim_annot.builders.events import (
    CATEGORY,
    CONCEPT_ID,
    EVENT_REQUIRED,
    EventsSource,
)
from medsim_annot.io import DELIMITERS, EXTENSIONS
from medsim_annot.seeds import new_seed

# --------------------------------------------------------------------------- contract
CHILD_ID = "child_id"
PARENT_ID = "parent_id"
COUNT = "count"
OUTPUT_COLUMNS = (C.PAIR_ID, C.TERM_1, C.TERM_2, C.CONCEPT_ID_1, C.CONCEPT_ID_2, COUNT)

Mode = Literal["top", "random"]
MODES = StrOptions.of(
    Mode,
    "mode",
    {
        "top": "most frequent, capped per concept (EHR-RelB)",
        "random": "seeded uniform sample (EHR-RelA)",
    },
)
#: Descendants are followed at most this many levels below an excluded concept
#: (SNOMED CT is about 30 levels deep); it also ends the recursion on a cyclic hierarchy.
MAX_HIERARCHY_DEPTH = 64

_PARQUET = EXTENSIONS["parquet"]
# From the format registry; ".txt" is not scanned: corpus folders often hold READMEs.
_DELIMITED = {e: DELIMITERS[f] for f in DELIMITERS for e in EXTENSIONS[f] if e != ".txt"}

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- inputs
def events_source(path: str | Path, *, need_category: bool = False) -> EventsSource:
    """Check an events file or folder of parts and describe it.

    Every part must have ``patient_id``, ``concept_id`` and ``concept_label`` (and
    ``category`` when *need_category*); a missing column is reported with the part's name.
    Only headers and Parquet footers are read here.

    Raises
    ------
    InputError
        Missing file, unknown extension, empty file, unreadable Parquet, missing column,
        CSV parts with different headers.
    """
    path = Path(path)
    name = str(path)
    if not path.exists():
        raise InputError.single("file not found", file=name)
    if path.is_dir():
        parts = sorted(
            p for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_"))
        )
        parquet = [p for p in parts if p.suffix.lower() in _PARQUET]
        delimited = [p for p in parts if p.suffix.lower() in _DELIMITED]
        if parquet:
            files, kind = parquet, "parquet"
        elif delimited:
            kinds = {("tsv" if _DELIMITED[p.suffix.lower()] == "\t" else "csv") for p in delimited}
            if len(kinds) > 1:
                raise InputError.single(
                    "folder mixes .csv and .tsv parts; keep one format", file=name
                )
            files, kind = delimited, kinds.pop()
        else:
            raise InputError.single("folder has no .parquet (or .csv/.tsv) parts", file=name)
    else:
        suffix = path.suffix.lower()
        if suffix in _PARQUET:
            kind = "parquet"
        elif suffix in _DELIMITED:
            kind = "tsv" if _DELIMITED[suffix] == "\t" else "csv"
        else:
            raise InputError.single(
                f"cannot tell the format from the extension '{suffix or '(none)'}'; events must be "
                ".csv, .tsv or .parquet (or a folder of .parquet parts)",
                file=name,
            )
        files = [path]
    required = EVENT_REQUIRED + ((CATEGORY,) if need_category else ())
    header: tuple[str, ...] | None = None
    for f in files:
        cols = (
            _parquet_columns(f)
            if kind == "parquet"
            else _delimited_header(f, "\t" if kind == "tsv" else ",")
        )
        missing = [c for c in required if c not in cols]
        if missing:
            why = {CATEGORY: "required column is missing (--categories filters on it)"}
            raise InputError(
                [Problem(why.get(c, "required column is missing"), column=c) for c in missing],
                str(f),
            )
        if kind != "parquet" and header is not None and cols != header:
            raise InputError.single(
                f"header differs from the first part's ({files[0].name})", file=str(f), row=1
            )
        header = header or cols
    return EventsSource(path, kind, tuple(files), header or ())


def _parquet_columns(path: Path) -> tuple[str, ...]:
    try:
        return tuple(pq.read_schema(path).names)
    except Exception as exc:  # pyarrow raises several types
        raise InputError.single(
            f"not a readable Parquet file ({exc.__class__.__name__}: {exc})", file=str(path)
        ) from None


def _delimited_header(path: Path, delimiter: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            row = next(csv.reader(fh, delimiter=delimiter), None)
    except UnicodeDecodeError:
        raise InputError.single(
            "is not UTF-8 text; save it as UTF-8", file=str(path), row=1
        ) from None
    if not row or not any(c.strip() for c in row):
        raise InputError.single("is empty: expected a header row", file=str(path), row=1)
    cols = tuple(c.strip() for c in row)
    for i, c in enumerate(cols):
        if not c:
            raise InputError.single(f"header column {i + 1} has no name", file=str(path), row=1)
        if c in cols[:i]:
            raise InputError.single(
                "column name appears twice in the header", file=str(path), row=1, column=c
            )
    return cols


# --------------------------------------------------------------------------- SQL
@dataclass(frozen=True)
class QueryShape:
    """Which optional inputs the query uses: a category filter, exclusions, a hierarchy."""

    categories: bool = False
    exclude: bool = False
    hierarchy: bool = False


def _ctes(shape: QueryShape) -> tuple[bool, list[str]]:
    """The common table expressions up to ``kept_events`` (and whether any is recursive)."""
    ctes: list[str] = []
    recursive = shape.exclude and shape.hierarchy
    if shape.exclude and shape.hierarchy:
        ctes.append(f"""excluded(concept_id, depth) AS (
    SELECT DISTINCT concept_id, 0 FROM {EXCLUDE_VIEW}
    UNION ALL
    SELECT DISTINCT h.child_id, x.depth + 1
    FROM {HIERARCHY_VIEW} h JOIN excluded x ON h.parent_id = x.concept_id
    WHERE x.depth < {MAX_HIERARCHY_DEPTH}
)""")
    elif shape.exclude:
        ctes.append(f"excluded(concept_id) AS (SELECT DISTINCT concept_id FROM {EXCLUDE_VIEW})")
    category = (
        (
            f"\n      AND lower(trim(CAST(category AS STRING))) IN "
            f"(SELECT category FROM {CATEGORIES_VIEW})"
        )
        if shape.categories
        else ""
    )
    ctes.append(f"""events_f AS (
    SELECT patient_id,
           trim(CAST(concept_id AS STRING)) AS concept_id,
           trim(CAST(concept_label AS STRING)) AS label
    FROM {EVENTS_VIEW}
    WHERE patient_id IS NOT NULL AND concept_id IS NOT NULL{category}
)""")
    not_excluded = (
        "\n      AND NOT EXISTS (SELECT 1 FROM excluded x WHERE x.concept_id = e.concept_id)"
        if shape.exclude
        else ""
    )
    ctes.append(f"""kept_events AS (
    SELECT e.patient_id, e.concept_id, e.label
    FROM events_f e
    WHERE e.concept_id <> ''{not_excluded}
)""")
    return recursive, ctes


def _with(shape: QueryShape, more: Sequence[str], select: str) -> str:
    recursive, ctes = _ctes(shape)
    head = "WITH RECURSIVE" if recursive else "WITH"
    return f"{head}\n" + ",\n".join([*ctes, *more]) + "\n" + select


_COUNTING = [
    """patient_concepts AS (
    SELECT DISTINCT patient_id, concept_id FROM kept_events
)""",
    # Codes are the ranks of the concept ids in text order, so code order is text order
    # and the pair join and the sort work on integers.
    """concepts AS (
    SELECT concept_id, ROW_NUMBER() OVER (ORDER BY concept_id) AS code
    FROM (SELECT DISTINCT concept_id FROM patient_concepts) d
)""",
    """coded AS (
    SELECT p.patient_id, c.code FROM patient_concepts p JOIN concepts c ON p.concept_id = c.concept_id
)""",
    """pair_counts AS (
    SELECT a.code AS code_1, b.code AS code_2, COUNT(*) AS n
    FROM coded a JOIN coded b ON a.patient_id = b.patient_id AND a.code < b.code
    GROUP BY a.code, b.code
)""",
]


def _pairs_select(extra: str = "") -> str:
    return f"""SELECT p.code_1, p.code_2, c1.concept_id AS concept_id_1, c2.concept_id AS concept_id_2, p.n{extra}
FROM pair_counts p
JOIN concepts c1 ON p.code_1 = c1.code
JOIN concepts c2 ON p.code_2 = c2.code"""


def pair_counts_sql(shape: QueryShape = QueryShape()) -> str:
    """The counting query, in SQL that DuckDB and Spark both run unchanged.

    Returns ``code_1, code_2, concept_id_1, concept_id_2, n`` for every pair of distinct
    concepts sharing a patient, ``concept_id_1 < concept_id_2`` in text order, with ``n``
    the number of patients having both, sorted by ``n`` descending, then ``concept_id_1``,
    ``concept_id_2`` ascending (``code_k`` is the rank of ``concept_id_k`` in text order).

    Notes
    -----
    With :math:`S_p` the set of distinct kept concepts of patient :math:`p`,

    .. math:: n(a, b) = \\left|\\{p : a \\in S_p \\wedge b \\in S_p\\}\\right|, \\quad a < b.

    Kept concepts are those in the chosen categories (view ``medsim_categories``), minus the
    excluded ones (view ``medsim_exclude``) and, with a hierarchy (view
    ``medsim_hierarchy``: ``child_id``, ``parent_id``), all their descendants, found by a
    recursive CTE that follows at most :data:`MAX_HIERARCHY_DEPTH` levels (Spark only allows
    ``UNION ALL`` in recursive CTEs, so each level is made distinct instead).

    >>> sql = pair_counts_sql(QueryShape(exclude=True, hierarchy=True))
    >>> sql.startswith("WITH RECURSIVE") and "ORDER BY p.n DESC, p.code_1, p.code_2" in sql
    True
    """
    return _with(shape, _COUNTING, _pairs_select() + "\nORDER BY p.n DESC, p.code_1, p.code_2")


def random_pairs_sql(seed: int, top: int, shape: QueryShape = QueryShape()) -> str:
    """A seeded uniform sample of *top* counted pairs, in the same SQL for both engines.

    Pairs are ordered by :func:`draw_key` (the hex MD5 of ``"<seed>|<id_1>|<id_2>"``),
    ties by the ids, and the first *top* taken: a uniform sample without replacement whose
    order is itself random, so a smaller *top* with the same seed gives a prefix.
    """
    seed, top = int(seed), int(top)
    draw = f",\n       md5(concat('{seed}', '|', c1.concept_id, '|', c2.concept_id)) AS draw"
    select = _pairs_select(draw) + f"\nORDER BY draw, p.code_1, p.code_2\nLIMIT {top}"
    return _with(shape, _COUNTING, select)


def labels_sql(shape: QueryShape = QueryShape()) -> str:
    """One label per concept of ``medsim_wanted``: its most frequent non-empty label among
    the events of the chosen categories, ties broken by the smallest label in text order.

    The wanted concepts are those of kept pairs, which are never excluded, so the builder
    passes a *shape* without the exclusion."""
    more = [
        f"""label_counts AS (
    SELECT concept_id, label, COUNT(*) AS n
    FROM kept_events
    WHERE label IS NOT NULL AND label <> ''
      AND concept_id IN (SELECT concept_id FROM {WANTED_VIEW})
    GROUP BY concept_id, label
)""",
        """ranked AS (
    SELECT concept_id, label,
           ROW_NUMBER() OVER (PARTITION BY concept_id ORDER BY n DESC, label) AS rn
    FROM label_counts
)""",
    ]
    return _with(shape, more, "SELECT concept_id, label FROM ranked WHERE rn = 1")


def diagnostics_sql(shape: QueryShape = QueryShape()) -> str:
    """Row counts at each filter, to explain an empty result."""
    select = f"""SELECT
    (SELECT COUNT(*) FROM {EVENTS_VIEW}) AS events,
    (SELECT COUNT(*) FROM events_f) AS selected,
    (SELECT COUNT(*) FROM kept_events) AS kept,
    (SELECT COUNT(DISTINCT patient_id) FROM kept_events) AS patients"""
    return _with(shape, [], select)


def draw_key(seed: int, concept_id_1: str, concept_id_2: str) -> str:
    """The random-mode sort key of a pair, as the SQL computes it.

    >>> draw_key(7, "22298006", "38341003")
    '401027f9a1e5e31a53a41f333930dbf5'
    """
    return hashlib.md5(f"{int(seed)}|{concept_id_1}|{concept_id_2}".encode()).hexdigest()


# --------------------------------------------------------------------------- the cap
def greedy_cap(
    batches: Iterable[Sequence], *, max_per_concept: int, top: int
) -> tuple[list[tuple], int]:
    r"""Walk sorted pairs, keeping one only while both its concepts are in fewer than
    *max_per_concept* kept pairs; stop after *top* kept pairs.

    Parameters
    ----------
    batches : iterable of column sequences
        Consecutive batches of the sorted pairs; each batch is a sequence of equally long
        columns, the first two holding the two concepts' keys (any hashable, comparable
        values, e.g. integer codes), the others carried along (ids, counts).
    max_per_concept : int
        The cap (EHR-RelB: 6).
    top : int
        How many pairs to keep at most (EHR-RelB: 4,000).

    Returns
    -------
    kept : list of tuple
        The kept rows (all columns), in walk order.
    walked : int
        How many pairs were read; batches after the one where *top* was reached are never
        read.

    Notes
    -----
    With pairs :math:`p_1, p_2, \dots` in walk order, :math:`K_{j}` the pairs kept before
    :math:`p_j` and :math:`c` the cap, :math:`p_j = \{a, b\}` is kept if and only if

    .. math:: |K_j| < \mathit{top} \quad\text{and}\quad
              |\{q \in K_j : a \in q\}| < c \quad\text{and}\quad |\{q \in K_j : b \in q\}| < c.

    The walk is sequential by nature (whether a pair is kept depends on the pairs kept
    before it), but most of a long walk skips pairs whose concept is already full; those
    are dropped per batch with a vectorised membership test before the Python loop.

    Examples
    --------
    >>> pairs = [("a", "b", 9), ("a", "c", 8), ("b", "c", 7), ("a", "d", 6), ("c", "d", 5)]
    >>> kept, walked = greedy_cap([list(zip(*pairs))], max_per_concept=2, top=10)
    >>> [k[:2] for k in kept]
    [('a', 'b'), ('a', 'c'), ('b', 'c')]
    """
    MAX_PER_CONCEPT.check(max_per_concept)
    TOP.check(top)
    used: dict = {}
    full: set = set()
    kept: list[tuple] = []
    walked = 0
    for batch in batches:
        k1, k2 = np.asarray(batch[0]), np.asarray(batch[1])
        n = len(k1)
        if n == 0:
            continue
        if full:
            full_arr = np.array(list(full))
            positions: Sequence[int] = np.flatnonzero(
                ~(np.isin(k1, full_arr) | np.isin(k2, full_arr))
            ).tolist()
        else:
            positions = range(n)
        l1, l2 = k1.tolist(), k2.tolist()
        for i in positions:
            a, b = l1[i], l2[i]
            ua, ub = used.get(a, 0), used.get(b, 0)
            if ua >= max_per_concept or ub >= max_per_concept:
                continue
            used[a], used[b] = ua + 1, ub + 1
            if ua + 1 == max_per_concept:
                full.add(a)
            if ub + 1 == max_per_concept:
                full.add(b)
            kept.append(tuple(_item(col[i]) for col in batch))
            if len(kept) == top:
                return kept, walked + i + 1
        walked += n
    return kept, walked


def _item(value):
    if hasattr(value, "as_py"):
        return value.as_py()
    if hasattr(value, "item"):
        return value.item()
    return value


# --------------------------------------------------------------------------- the builder
@dataclass
class CooccurrenceResult:
    """The candidate pairs and how they were found."""

    pairs: pd.DataFrame
    mode: str
    engine: str
    seed: int | None = None
    walked: int = 0
    reason: str | None = None
    unlabelled: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def concepts(self) -> int:
        return len(set(self.pairs[C.CONCEPT_ID_1]) | set(self.pairs[C.CONCEPT_ID_2]))


def check_options(
    *, max_per_concept: int, top: int, mode: str, engine: str, seed: int | None
) -> None:
    """Raise :class:`~data_schemas.errors.OptionError` naming the setting for a bad option."""
    MODES.check(mode)
    ENGINES.check(engine)
    MAX_PER_CONCEPT.check(max_per_concept)
    TOP.check(top)
    if seed is not None:
        SEED.check(seed)


def cooccurrence_pairs(
    source: EventsSource,
    *,
    categories: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    hierarchy: Sequence[tuple[str, str]] = (),
    max_per_concept: int = 6,
    top: int = 4000,
    mode: str = "top",
    seed: int | None = None,
    engine: str = "duckdb",
    spark=None,
    memory_limit: str | None = None,
    temp_dir: str | Path | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> CooccurrenceResult:
    """Count co-occurring concept pairs in *source* and select the candidates.

    Parameters
    ----------
    source : EventsSource
        Checked events (:func:`events_source`).
    categories : sequence of str, optional
        Keep events of these categories only (case-insensitive); ``None`` keeps all.
    exclude : sequence of str
        Concept ids to drop, with all their descendants in *hierarchy*.
    hierarchy : sequence of (child_id, parent_id)
        Is-a edges; only used to find the descendants of *exclude*.
    max_per_concept, top : int
        ``top`` mode: the per-concept cap and the number of pairs (EHR-RelB: 6 and 4,000).
    mode : {"top", "random"}
        ``top``: the greedy capped walk by count (EHR-RelB). ``random``: a seeded uniform
        sample of *top* pairs among all counted pairs, without the cap (EHR-RelA).
    seed : int, optional
        Seed of the random draw; drawn and reported when omitted.
    engine : {"duckdb", "spark"}
    spark : pyspark.sql.SparkSession, optional
        Session to run in (default: the active one, else a new one).
    memory_limit, temp_dir, threads
        DuckDB's memory limit (default
        :data:`~medsim_annot.builders.engines.DEFAULT_MEMORY_LIMIT`), parent of its spill
        folder and thread count.
    progress : callable(str), optional
        Receives one line per stage.

    Returns
    -------
    CooccurrenceResult
        ``pairs`` has the columns of :data:`OUTPUT_COLUMNS` (``pair_id`` is
        ``<concept_id_1>-<concept_id_2>``; ``term_k`` the concept's most frequent label,
        or its id when it has none); ``reason`` says why it is empty when it is.
    """
    check_options(max_per_concept=max_per_concept, top=top, mode=mode, engine=engine, seed=seed)
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    cats = (
        None if categories is None else sorted({c.strip().lower() for c in categories if c.strip()})
    )
    if categories is not None and not cats:
        raise ValueError("--categories is empty; name at least one category or leave it out")
    if cats is not None and not source.has_category:
        raise InputError.single(
            "required column is missing (--categories filters on it)",
            file=str(source.path),
            column=CATEGORY,
        )
    exclude = sorted({str(c).strip() for c in exclude if str(c).strip()})
    hierarchy = sorted(
        {
            (str(c).strip(), str(p).strip())
            for c, p in hierarchy
            if str(c).strip() and str(p).strip()
        }
    )
    shape = QueryShape(
        categories=cats is not None,
        exclude=bool(exclude),
        hierarchy=bool(exclude) and bool(hierarchy),
    )
    if mode == "random" and seed is None:
        seed = new_seed()
    result = CooccurrenceResult(
        pd.DataFrame(columns=list(OUTPUT_COLUMNS)),
        mode,
        engine,
        seed=seed if mode == "random" else None,
    )
    with open_engine(
        engine, spark=spark, memory_limit=memory_limit, temp_dir=temp_dir, threads=threads
    ) as eng:
        say(
            f"{engine}: reading {source.path} ({len(source.files)} {source.kind} "
            f"file{'s' if len(source.files) != 1 else ''})"
        )
        eng.load_events(source)
        if cats is not None:
            eng.load_table(CATEGORIES_VIEW, ["category"], [(c,) for c in cats])
        if shape.exclude:
            eng.load_table(EXCLUDE_VIEW, [CONCEPT_ID], [(c,) for c in exclude])
        if shape.hierarchy:
            eng.load_table(HIERARCHY_VIEW, [CHILD_ID, PARENT_ID], hierarchy)
        if mode == "top":
            say(f"{engine}: counting and sorting pairs")
            counter = {"batches": 0}

            def batches():
                for batch in eng.stream(pair_counts_sql(shape)):
                    counter["batches"] += 1
                    if counter["batches"] % 50 == 0:
                        say(f"walked {counter['batches'] * BATCH_ROWS:,} pairs")
                    yield batch

            walk = batches()
            try:
                kept, walked = greedy_cap(walk, max_per_concept=max_per_concept, top=top)
            finally:
                walk.close()
            result.walked = walked
            say(
                f"kept {len(kept):,} pairs after walking {walked:,} "
                f"(at most {max_per_concept} per concept)"
            )
        else:
            say(f"{engine}: counting pairs and drawing {top:,} at random (seed {seed})")
            kept = eng.fetch(random_pairs_sql(cast(int, seed), top, shape))  # drawn above
            result.walked = len(kept)
        if not kept:
            result.reason = _explain_empty(eng.fetch(diagnostics_sql(shape))[0], cats, exclude)
            say(f"no pairs: {result.reason}")
        else:
            wanted = sorted({r[2] for r in kept} | {r[3] for r in kept})
            eng.load_table(WANTED_VIEW, [CONCEPT_ID], [(c,) for c in wanted])
            # The wanted concepts survived the exclusion, so labelling skips it (and Spark's
            # level-by-level recursion).
            labels = dict(eng.fetch(labels_sql(QueryShape(categories=shape.categories))))
            result.unlabelled = [c for c in wanted if c not in labels]
            result.pairs = _frame(kept, labels)
    result.seconds = time.perf_counter() - started
    return result


def _explain_empty(counts: tuple, categories: list[str] | None, exclude: list[str]) -> str:
    events, selected, kept, patients = (int(v or 0) for v in counts)
    if events == 0:
        return "the events file has no rows"
    if selected == 0:
        if categories is not None:
            return (
                f"none of the {events:,} events has a patient_id and a concept_id in the "
                f"categories {', '.join(categories)}"
            )
        return f"none of the {events:,} events has both a patient_id and a concept_id"
    if kept == 0:
        return (
            f"all {selected:,} selected events are of excluded concepts "
            f"({len(exclude):,} excluded, with descendants when a hierarchy is given)"
            if exclude
            else f"all {selected:,} selected events have an empty concept_id"
        )
    return (
        f"no patient has two or more distinct concepts ({patients:,} patient"
        f"{'s' if patients != 1 else ''}, {kept:,} kept events)"
    )


def _frame(kept: list[tuple], labels: dict[str, str]) -> pd.DataFrame:
    c1 = [r[2] for r in kept]
    c2 = [r[3] for r in kept]
    ids = [f"{a}-{b}" for a, b in zip(c1, c2)]
    if len(set(ids)) != len(ids):  # ids containing "-" can collide; fall back to hashes
        ids = [stable_pair_id(a, b) for a, b in zip(c1, c2)]
    return pd.DataFrame(
        {
            C.PAIR_ID: ids,
            C.TERM_1: [labels.get(a, a) for a in c1],
            C.TERM_2: [labels.get(b, b) for b in c2],
            C.CONCEPT_ID_1: c1,
            C.CONCEPT_ID_2: c2,
            COUNT: np.array([int(r[4]) for r in kept], dtype=np.int64),
        }
    )
