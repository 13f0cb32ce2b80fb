"""``medsim study practice``, ``practice-report``, ``practice-unlock`` and
``practice-send-back``: the practice round before a study's real queue (docs/practice.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from data_schemas.options import PRACTICE_MIN_PAIRS, PRACTICE_THRESHOLD
from medsim_annot.commands._common import emit_json, get_group
from medsim_annot.io import formats_text
from medsim_annot.services.activity import cli_actor
from medsim_annot.services.practice import gate as gate_svc
from medsim_annot.services.practice.report import PracticeReport, practice_report
from medsim_annot.services.practice.setup import (
    PracticeSettings,
    read_practice_file,
    set_practice,
)
from medsim_annot.services.study_handle import open_study


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _print_report(rep: PracticeReport) -> None:
    typer.echo(
        f"study '{rep.study}': {rep.pairs} practice pairs; the real pairs open after "
        f"{rep.needed} answers with at least {rep.threshold:.0%} exactly as the reference "
        "(over the last answers of the round)"
    )
    within = "  within one" if rep.within_one_reported else ""
    typer.echo(f"  {'annotator':<20} {'state':<11} round answered  exact{within}")
    for a in rep.annotators:
        extra = f"  {_pct(a.within_one):>10}" if rep.within_one_reported else ""
        typer.echo(
            f"  {a.annotator:<20} {a.state:<11} {a.round:>5} {a.answered:>8}  "
            f"{_pct(a.exact):>5}{extra}"
        )


def register(app: typer.Typer) -> None:
    study = get_group(app, "study", "Create, list and export studies.")

    @study.command("practice")
    def practice(
        name: str = typer.Argument(..., help="study name"),
        file: Path | None = typer.Argument(
            None,
            help=f"practice file ({formats_text()}): term_1, term_2, practice_answer, "
            "optional explanation and pair_id; replaces the study's practice pairs",
        ),
        practice_min_pairs: int | None = typer.Option(
            None,
            "--min-pairs",
            metavar="N",
            help=f"practice answers the gate looks at ({PRACTICE_MIN_PAIRS.describe()}; "
            "default: every practice pair, at most 10)",
        ),
        practice_threshold: float | None = typer.Option(
            None,
            "--threshold",
            metavar="T",
            help="share of those answers exactly as the reference answer that opens the real "
            f"pairs ({PRACTICE_THRESHOLD.describe()}; default 0.8)",
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Give a study practice pairs (served before the real queue, with the reference
        answer and explanation after each answer) and set the gate. Without a file or
        options, prints the practice report."""
        handle = open_study(name)
        # Settings first: a bad threshold or N is refused before the file is read.
        current = PracticeSettings.of(handle.config)
        PracticeSettings(
            min_pairs=current.min_pairs if practice_min_pairs is None else practice_min_pairs,
            threshold=current.threshold if practice_threshold is None else practice_threshold,
        )
        rows = None if file is None else read_practice_file(file, handle.scale)
        if rows is not None or practice_min_pairs is not None or practice_threshold is not None:
            set_practice(handle, rows, min_pairs=practice_min_pairs, threshold=practice_threshold)
        rep = practice_report(handle)
        emit_json(rep.to_dict()) if as_json else _print_report(rep)

    @study.command("practice-report")
    def report(
        name: str = typer.Argument(..., help="study name"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Every annotator's practice round: state, round, answers, agreement with the
        reference answers (exact; within one step on a graded scale). Practice answers
        appear here only, never in gold files, agreement, audits or exports."""
        rep = practice_report(open_study(name))
        emit_json(rep.to_dict()) if as_json else _print_report(rep)

    @study.command("practice-unlock")
    def unlock(
        name: str = typer.Argument(..., help="study name"),
        annotator: str = typer.Argument(..., help="annotator name"),
        reason: str = typer.Option("", "--reason", help="why (kept in the event log)"),
    ) -> None:
        """Open an annotator's real pairs without passing practice (recorded as an event)."""
        gate_svc.unlock(open_study(name), annotator, by=cli_actor(), reason=reason)
        typer.echo(f"'{annotator}' may rate the real pairs of '{name}' now")

    @study.command("practice-send-back")
    def send_back(
        name: str = typer.Argument(..., help="study name"),
        annotator: str = typer.Argument(..., help="annotator name"),
        reason: str = typer.Option(..., "--reason", help="why (kept in the event log)"),
    ) -> None:
        """Recalibration: pause an annotator's real pairs until they pass a new practice
        round (recorded as an event; their ratings so far are kept)."""
        gate_svc.send_back_to_practice(open_study(name), annotator, by=cli_actor(), reason=reason)
        typer.echo(f"'{annotator}' is back in practice in '{name}': real pairs paused")
