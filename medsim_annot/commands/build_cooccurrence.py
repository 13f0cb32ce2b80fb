"""``medsim build cooccurrence``: relatedness candidates from EHR co-occurrence (EHR-Rel)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from medsim_annot.commands._common import emit_json, get_group, split_list
from medsim_annot.io import extensions_text
from medsim_annot.services.build_cooccurrence import build_cooccurrence


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def register(app: typer.Typer) -> None:
    build = get_group(app, "build", "Build benchmark datasets and candidate pairs.")

    @build.command("cooccurrence")
    def cooccurrence(
        events: Path = typer.Option(
            ...,
            "--events",
            help="events file (CSV, TSV, Parquet) or folder "
            "of Parquet parts: patient_id, concept_id, concept_label[, category]",
        ),
        out: Path = typer.Option(..., "--out", help=f"pairs file to write ({extensions_text()})"),
        categories: str | None = typer.Option(
            None,
            "--categories",
            help="comma-separated categories to keep, e.g. "
            "'symptom,diagnosis,presenting complaint' (EHR-Rel); default: all",
        ),
        exclude: Path | None = typer.Option(
            None,
            "--exclude",
            help="file with a concept_id column: concepts to drop (with descendants)",
        ),
        hierarchy: Path | None = typer.Option(
            None,
            "--hierarchy",
            help="file with child_id and parent_id columns, to drop descendants too",
        ),
        max_per_concept: int = typer.Option(
            6, "--max-per-concept", help="top mode: at most this many pairs per concept"
        ),
        top: int = typer.Option(4000, "--top", help="number of pairs to write"),
        mode: str = typer.Option(
            "top",
            "--mode",
            help="top (most frequent, capped; EHR-RelB) | random (seeded uniform sample; EHR-RelA)",
        ),
        seed: int | None = typer.Option(
            None, "--seed", help="random mode: seed (printed when drawn)"
        ),
        engine: str = typer.Option(
            "duckdb",
            "--engine",
            help="duckdb (in-process) | spark (pyspark; master from the usual Spark configuration)",
        ),
        memory_limit: str | None = typer.Option(
            None, "--memory-limit", help="DuckDB memory limit before spilling to disk (default 4GB)"
        ),
        temp_dir: Path | None = typer.Option(
            None, "--temp-dir", help="where DuckDB spills (default: the system temporary folder)"
        ),
        as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    ) -> None:
        """Relatedness candidates from EHR co-occurrence (the EHR-Rel method).

        Pairs the distinct concepts of each patient's record, counts the patients per pair,
        and writes the most frequent pairs (capped per concept) or a seeded random sample."""
        report = build_cooccurrence(
            events,
            out,
            categories=split_list(categories) if categories is not None else None,
            exclude=exclude,
            hierarchy=hierarchy,
            max_per_concept=max_per_concept,
            top=top,
            mode=mode,
            seed=seed,
            engine=engine,
            progress=_stderr,
            memory_limit=memory_limit,
            temp_dir=temp_dir,
        )
        if as_json:
            emit_json(report)
            return
        if report["pairs"] == 0:
            typer.echo(f"no pairs written to {report['out']} (header only): {report['reason']}")
            return
        line = (
            f"{report['pairs']:,} pairs of {report['concepts']:,} concepts written to "
            f"{report['out']} ({report['mode']} mode, {report['engine']}, "
            f"{report['seconds']:.1f} s)"
        )
        if report["seed"] is not None:
            line += f"; seed {report['seed']}"
        typer.echo(line)
