"""Use case: build relatedness candidates from EHR co-occurrence and write them as pairs.

The CLI (``medsim build cooccurrence``) and any page call :func:`build_cooccurrence`; the
counting and the selection live in :mod:`medsim_annot.builders.cooccurrence`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from data_schemas.errors import InputError, Problem
from medsim_annot.builders import cooccurrence as cooc
from medsim_annot.builders.engines import EngineUnavailableError
from medsim_annot.errors import UsageProblem
from medsim_annot.io import format_of, read_table, write_table


def build_cooccurrence(
    events: str | Path,
    out: str | Path,
    categories: Sequence[str] | None = None,
    exclude: str | Path | None = None,
    hierarchy: str | Path | None = None,
    max_per_concept: int = 6,
    top: int = 4000,
    mode: str = "top",
    seed: int | None = None,
    engine: str = "duckdb",
    progress: Callable[[str], None] | None = None,
    *,
    spark=None,
    memory_limit: str | None = None,
    temp_dir: str | Path | None = None,
    threads: int | None = None,
) -> dict:
    """Count concept co-occurrence in *events*, select candidate pairs, write them to *out*.

    Parameters
    ----------
    events : path
        Events file (CSV, TSV, Parquet) or folder of Parquet parts: ``patient_id``,
        ``concept_id``, ``concept_label``, optional ``category``.
    out : path
        Pairs file (format by extension): ``pair_id, term_1, term_2, concept_id_1,
        concept_id_2, count``, ready for ``medsim study create --scale relatedness-0-3``.
        Written atomically; with no pairs it holds the header only and ``reason`` says why.
    categories : sequence of str, optional
        Event categories to keep (EHR-Rel: symptom, diagnosis, presenting complaint).
    exclude : path, optional
        File with a ``concept_id`` column: concepts to drop (with their descendants when
        *hierarchy* is given).
    hierarchy : path, optional
        File with ``child_id`` and ``parent_id`` columns (is-a edges).
    max_per_concept, top, mode, seed, engine
        See :func:`medsim_annot.builders.cooccurrence.cooccurrence_pairs`.
    progress : callable(str), optional
        Receives one line per stage (the CLI prints them to stderr).
    spark, memory_limit, temp_dir, threads
        Engine settings (a Spark session; DuckDB's memory limit, spill folder parent, threads).

    Returns
    -------
    dict
        ``out, pairs, concepts, mode, engine, seed, max_per_concept, top, walked, reason,
        unlabelled, seconds``.

    Raises
    ------
    InputError
        Bad events, exclusion or hierarchy files (naming the file and the column).
    OptionError
        Unknown mode or engine, bad numbers.
    UsageProblem
        An engine that cannot start here.
    """
    say = progress or (lambda _msg: None)
    cooc.check_options(
        max_per_concept=max_per_concept, top=top, mode=mode, engine=engine, seed=seed
    )
    format_of(out)  # an unknown output extension fails before any work
    source = cooc.events_source(events, need_category=categories is not None)
    excluded = _read_ids(exclude, [cooc.CONCEPT_ID])
    edges = _read_ids(hierarchy, [cooc.CHILD_ID, cooc.PARENT_ID])
    if hierarchy is not None and exclude is None:
        say("note: --hierarchy is only used to find the descendants of --exclude concepts")
    if mode == "random" and max_per_concept != 6:
        say("note: --max-per-concept applies to --mode top only")
    try:
        result = cooc.cooccurrence_pairs(
            source,
            categories=categories,
            exclude=[r[0] for r in excluded],
            hierarchy=[(child, parent) for child, parent in edges],
            max_per_concept=max_per_concept,
            top=top,
            mode=mode,
            seed=seed,
            engine=engine,
            spark=spark,
            memory_limit=memory_limit,
            temp_dir=temp_dir,
            threads=threads,
            progress=say,
        )
    except EngineUnavailableError as exc:
        raise UsageProblem(str(exc)) from None
    except InputError:
        raise
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if result.unlabelled:
        say(
            f"note: {len(result.unlabelled)} concept(s) have no label; their id is used as the term "
            f"(e.g. {', '.join(result.unlabelled[:3])})"
        )
    write_table(result.pairs, out)
    say(f"wrote {len(result.pairs):,} pairs to {out}")
    return {
        "out": str(out),
        "pairs": int(len(result.pairs)),
        "concepts": int(result.concepts),
        "mode": result.mode,
        "engine": result.engine,
        "seed": result.seed,
        "max_per_concept": int(max_per_concept) if mode == "top" else None,
        "top": int(top),
        "walked": int(result.walked),
        "reason": result.reason,
        "unlabelled": len(result.unlabelled),
        "seconds": round(result.seconds, 3),
    }


def _read_ids(path: str | Path | None, columns: list[str]) -> list[tuple[str, ...]]:
    """Rows of *columns* from a small side file (any format :func:`read_table` reads)."""
    if path is None:
        return []
    frame = read_table(path)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            [Problem("required column is missing", column=c) for c in missing], str(path)
        )
    return list(frame[columns].itertuples(index=False, name=None))
