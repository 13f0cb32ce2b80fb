"""``medsim import labelstudio|prodigy|argilla``: other tools' exports as completed studies."""

from __future__ import annotations

from pathlib import Path

import typer

from medsim_annot.commands._common import emit_json, get_group
from medsim_annot.interop import parse_term_fields
from medsim_annot.services.interop import import_from_tool

_HELP = {
    "labelstudio": "a Label Studio JSON export (tasks with data and annotations)",
    "prodigy": "a Prodigy db-out JSONL file",
    "argilla": "an Argilla 2.x dataset folder (to_disk or to_hub format) or its records file",
}


def _print(result: dict) -> None:
    typer.echo(
        f"imported {result['tool']} export {result['file']} into study '{result['study']}': "
        f"{result['tasks']} tasks, {result['items']} pairs, {len(result['annotators'])} "
        f"annotators ({', '.join(result['annotators'])}), {result['ratings']} ratings"
    )
    typer.echo(f"  terms from fields: {', '.join(result['term_fields'])}")
    if result["columns"]:
        typer.echo(f"  pair columns from metadata: {', '.join(result['columns'])}")
    for m in result["mapped"]:
        typer.echo(f"  mapped '{m['answer']}' -> {m['value']} ({m['count']})")
    if result["skipped"]:
        for reason, n in result["skipped"].items():
            typer.echo(f"  skipped {n}: {reason} (not a rating)")
    else:
        typer.echo("  skipped nothing")


def _command(tool: str):
    def run(
        source: Path = typer.Argument(..., help=_HELP[tool]),
        scale: str = typer.Option(
            ..., "--scale", help="binary | relatedness-0-3 | similarity-0-6 | SCALE_FILE"
        ),
        study: str = typer.Option(..., "--study", help="name of the new study"),
        term_fields: str | None = typer.Option(
            None,
            "--term-fields",
            metavar="FIELD_1,FIELD_2",
            help="the two fields holding the terms (default: term_1,term_2 or text_1,text_2 ...)",
        ),
        mapping: Path | None = typer.Option(
            None,
            "--mapping",
            help="YAML/JSON mapping: values (answer -> scale value), annotators, question",
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        result = import_from_tool(
            tool,
            source,
            scale,
            study,
            term_fields=parse_term_fields(term_fields),
            mapping=mapping,
        )
        emit_json(result) if as_json else _print(result)

    run.__doc__ = (
        f"Import {_HELP[tool]} as a completed study. Prints what was mapped and what was "
        "skipped, and why; unmappable input is refused with file, row and field (exit 2)."
    )
    return run


def register(app: typer.Typer) -> None:
    importer = get_group(
        app,
        "import",
        "Import completed studies (EHR-Rel wide files, ratings files, Label Studio, Prodigy, Argilla).",
    )
    for tool in ("labelstudio", "prodigy", "argilla"):
        importer.command(tool)(_command(tool))
