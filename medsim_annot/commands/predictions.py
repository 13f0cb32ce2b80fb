"""``medsim study predictions add|list|adjudicators``: model scores stored with a study."""

from __future__ import annotations

from pathlib import Path

import typer

from medsim_annot.commands._common import emit_json, get_group
from medsim_annot.errors import UsageProblem
from medsim_annot.services import stored_predictions as svc
from medsim_annot.services.study_handle import open_study


def register(app: typer.Typer) -> None:
    study = get_group(app, "study", "Create, list and export studies.")
    group = typer.Typer(
        help="Model scores stored with a study (never shown to annotators).",
        no_args_is_help=True,
    )
    study.add_typer(group, name="predictions")

    @group.command("add")
    def add(
        name: str = typer.Argument(..., help="study name"),
        scores: Path = typer.Argument(..., help="scores file: pair_id and score columns"),
        score_column: str | None = typer.Option(
            None, "--score-column", help="the score column (when the file has several)"
        ),
        label: str | None = typer.Option(
            None, "--name", help="name of the predictions (default: the score column)"
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Store a scores file as the next version of a study's predictions. A pair the
        study does not have, a score that is not a number or a pair without a score refuses
        the whole file (exit 2) and stores nothing."""
        row = svc.add_predictions(open_study(name), scores, score_column=score_column, name=label)
        if as_json:
            emit_json(row.to_dict())
            return
        typer.echo(
            f"stored predictions '{row.name}' version {row.version} for study '{name}': "
            f"{row.pairs} pairs (column {row.score_column}, sha256 {row.sha256[:12]})"
        )

    @group.command("list")
    def list_(
        name: str = typer.Argument(..., help="study name"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """The stored versions of a study's predictions, oldest first."""
        handle = open_study(name)
        rows = svc.prediction_versions(handle)
        if as_json:
            emit_json(
                {
                    "versions": [r.to_dict() for r in rows],
                    svc.SHOW_TO_ADJUDICATORS: svc.adjudicators_see_predictions(handle),
                }
            )
            return
        if not rows:
            typer.echo(f"study '{name}' has no stored predictions")
        for r in rows:
            typer.echo(
                f"{r.name:<24} v{r.version:<3} {r.pairs:>7} pairs  {r.score_column:<16} "
                f"{r.source}  {r.sha256[:12]}"
            )

    @group.command("adjudicators")
    def adjudicators(
        name: str = typer.Argument(..., help="study name"),
        switch: str = typer.Argument(..., metavar="on|off"),
    ) -> None:
        """Whether adjudicators see the model's score of a pair (off by default; annotators
        never do)."""
        if switch not in ("on", "off"):
            raise UsageProblem(f"say 'on' or 'off', not '{switch}'")
        svc.set_show_to_adjudicators(open_study(name), switch == "on")
        typer.echo(
            f"adjudicators of '{name}' {'see' if switch == 'on' else 'do not see'} "
            "the model's score"
        )
