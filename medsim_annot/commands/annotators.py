"""``medsim study annotators STUDY`` and ``medsim annotator add|rename|issue-code|revoke``."""

from __future__ import annotations

import typer

from medsim_annot.commands._common import emit_json, get_group
from medsim_annot.services.people import annotators as svc
from medsim_annot.services.people import language as language_svc
from medsim_annot.services.study_handle import open_study


def register(app: typer.Typer) -> None:
    study = get_group(app, "study", "Create, list and export studies.")
    ann = get_group(app, "annotator", "Annotators of a study: add, rename, access codes.")

    @study.command("annotators")
    def list_annotators(
        name: str = typer.Argument(..., help="study"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Annotators of a study with their progress (done / total)."""
        frame = svc.annotators(open_study(name))
        if as_json:
            emit_json(frame.to_dict(orient="records"))
            return
        for r in frame.to_dict(orient="records"):
            state = "active" if r["active"] else "revoked"
            typer.echo(f"{r['annotator']:<24} {r['done']:>7}/{r['total']:<7} {state}")

    @ann.command("add")
    def add(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        name: str = typer.Argument(...),
        lang: str | None = typer.Option(
            None, "--lang", help="the language of their pages (en, de, es; default: the browser's)"
        ),
    ) -> None:
        """Add an annotator and print their access code and how their queue was built.

        The queue follows the study's design, as at creation: shuffled with the study's
        seed on a stream of its own (a study created with --file-order keeps file order),
        with its calibration, duplicate and check slots, and in a k-of-n design its share
        k/n of the main pairs, the least-rated first (the balanced design counts the
        annotators it was created with; these pairs get a rating beyond k).
        """
        study = open_study(study_name)
        language = language_svc.check_language(lang)  # refused before anyone is added
        out = svc.add_annotator(study, name)
        if language is not None:
            language_svc.set_annotator_language(study, out.name, language)
        typer.echo(f"{out.name}: {out.access_code}")
        facts = svc.added_queue_facts(study, out.name)
        if facts is not None:
            typer.echo(svc.describe_added_queue(facts))

    @ann.command("rename")
    def rename(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        old: str = typer.Argument(...),
        new: str = typer.Argument(...),
    ) -> None:
        """Rename an annotator (ratings stay with them)."""
        svc.rename_annotator(open_study(study_name), old, new)
        typer.echo(f"renamed {old} to {new.strip()}")

    @ann.command("issue-code")
    def issue(
        study_name: str = typer.Argument(..., metavar="STUDY"), name: str = typer.Argument(...)
    ) -> None:
        """Issue a new access code (the old one stops working) and print it."""
        typer.echo(f"{name}: {svc.issue_code(open_study(study_name), name)}")

    @ann.command("revoke")
    def revoke(
        study_name: str = typer.Argument(..., metavar="STUDY"), name: str = typer.Argument(...)
    ) -> None:
        """Revoke an annotator's access code; their ratings are kept."""
        svc.revoke_code(open_study(study_name), name)
        typer.echo(f"revoked the access code of {name}")
