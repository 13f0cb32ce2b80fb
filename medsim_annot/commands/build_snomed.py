"""``medsim build snomed``: the 20 AAAI 2020 datasets from a SNOMED CT RF2 release."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from tqdm import tqdm

from medsim_annot.commands._common import emit_json, get_group, split_list
from medsim_annot.services.build_snomed import build_snomed, format_statistics


def _tqdm_progress(description: str, total: int):
    return tqdm(
        desc=description,
        total=total,
        file=sys.stderr,
        leave=True,
        dynamic_ncols=True,
        mininterval=0.5,
    )


def register(app: typer.Typer) -> None:
    build = get_group(app, "build", "Build benchmark datasets (SNOMED CT, co-occurrence).")

    @build.command("snomed")
    def snomed_command(
        rf2: Path = typer.Option(..., "--rf2", help="RF2 release folder (Snapshot or Full)."),
        out: Path = typer.Option(
            ..., "--out", help="Folder for the pairs files and statistics.csv."
        ),
        threshold: int = typer.Option(
            5, "--threshold", help="Largest Levenshtein distance of an easy pair."
        ),
        seed: int = typer.Option(42, "--seed", help="Seed of the random choices."),
        strategies: str = typer.Option(
            "random,levenshtein", "--strategies", help="Negative strategies, comma-separated."
        ),
        datasets: str = typer.Option(
            "fsn-syn,syn-syn,possibly-equivalent-to,replaced-by,same-as",
            "--datasets",
            help="Datasets, comma-separated.",
        ),
        fmt: str = typer.Option(
            "tsv", "--format", help="Pairs file format: tsv, csv, jsonl, parquet."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the statistics as JSON."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress bars."),
    ) -> None:
        """Build the SNOMED CT term-similarity datasets of Schulz & Juric (AAAI 2020).

        Writes one pairs file per dataset x difficulty x negative strategy and a
        statistics table (like the paper's Table 2) to --out, and prints the table.
        """
        result = build_snomed(
            rf2,
            out,
            threshold=threshold,
            seed=seed,
            strategies=split_list(strategies),
            datasets=split_list(datasets),
            progress=None if quiet else _tqdm_progress,
            fmt=fmt,
        )
        missing = {"/".join(k): v for k, v in result.missing_negatives.items() if v}
        if as_json:
            emit_json(
                {
                    "files": {"/".join(k): str(p) for k, p in result.files.items()},
                    "statistics_file": str(result.statistics_path),
                    "release_type": result.release_type,
                    "missing_negatives": missing,
                    "statistics": result.statistics.astype(object)
                    .where(result.statistics.notna(), None)
                    .to_dict(orient="records"),
                }
            )
            return
        typer.echo(format_statistics(result.statistics))
        typer.echo(
            f"\n{len(result.files)} files and {result.statistics_path.name} written to {out}"
        )
        for name, count in missing.items():
            typer.echo(f"note: {name}: {count} positive(s) had no allowed negative term", err=True)
