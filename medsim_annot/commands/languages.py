"""A person's language and the study's own texts per language:
``medsim annotator language``, ``medsim adjudicator language``, ``medsim admin language``
and ``medsim study texts``. (``--lang`` of ``annotator add`` and ``adjudicator add`` is in
their own modules.) The command line itself stays English."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

from medsim_annot.commands._common import emit_json, get_group
from medsim_annot.services import study_texts as texts_svc
from medsim_annot.services.people import language as svc
from medsim_annot.services.study_handle import open_study

LANG_HELP = "a language of the app (en, de, es), or 'none' for the browser's language"


def _shown(lang: str | None) -> str:
    return lang or "none (the browser's language)"


def register(app: typer.Typer) -> None:
    ann = get_group(app, "annotator", "Annotators of a study: add, rename, access codes.")
    adj = get_group(app, "adjudicator", "Adjudicators of a study: add, codes, SSO, revoke.")
    admin = get_group(app, "admin", "Study admins: add, remove, list, passwords, activity.")
    study = get_group(app, "study", "Create, list and export studies.")

    @ann.command("language")
    def annotator_language(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        name: str = typer.Argument(...),
        lang: str | None = typer.Argument(None, metavar="[LANG]", help=LANG_HELP),
    ) -> None:
        """Show or set the language of annotator NAME's pages."""
        handle = open_study(study_name)
        if lang is None:
            typer.echo(f"{name}: {_shown(svc.annotator_language(handle, name))}")
            return
        typer.echo(f"{name}: {_shown(svc.set_annotator_language(handle, name, lang))}")

    @adj.command("language")
    def adjudicator_language(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        name: str = typer.Argument(...),
        lang: str | None = typer.Argument(None, metavar="[LANG]", help=LANG_HELP),
    ) -> None:
        """Show or set the language of adjudicator NAME's pages."""
        handle = open_study(study_name)
        if lang is None:
            typer.echo(f"{name}: {_shown(svc.adjudicator_language(handle, name))}")
            return
        typer.echo(f"{name}: {_shown(svc.set_adjudicator_language(handle, name, lang))}")

    @admin.command("language")
    def admin_language(
        name: str = typer.Argument(..., help="a named admin (medsim admin add)"),
        lang: str | None = typer.Argument(None, metavar="[LANG]", help=LANG_HELP),
    ) -> None:
        """Show or set the language of admin NAME's pages."""
        if lang is None:
            typer.echo(f"{name}: {_shown(svc.admin_language(name))}")
            return
        typer.echo(f"{name}: {_shown(svc.set_admin_language(name, lang))}")

    @study.command("texts")
    def texts(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        lang: str | None = typer.Option(
            None, "--lang", help="the language of the texts (en, de, es)"
        ),
        file: Path | None = typer.Option(
            None,
            "--file",
            help="YAML or JSON: question, guideline, options: {VALUE: {label, description}}",
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Give the study's guideline and scale texts in a language (--lang with --file), show
        them (--lang alone), or list the languages that have texts (neither). A field left
        out falls back to the study's own text; the term pairs are never translated."""
        handle = open_study(study_name)
        if lang is None:
            if file is not None:
                raise typer.BadParameter("say the language of the texts with --lang")
            langs = texts_svc.text_languages(handle)
            if as_json:
                emit_json(langs)
            else:
                typer.echo("\n".join(langs) if langs else "no texts in other languages")
            return
        if file is not None:
            stored = texts_svc.set_texts_file(handle, lang, file)
            fields = [f for f in ("question", "guideline") if getattr(stored, f)] + [
                f"options: {', '.join(stored.options)}"
            ] * bool(stored.options)
            typer.echo(
                f"stored the {lang} texts of {handle.name}: "
                + ("; ".join(fields) if fields else "none (every field falls back)")
            )
            return
        current = texts_svc.stored_texts(handle, lang)
        if current is None:
            typer.echo(f"{handle.name} has no {lang} texts: the study's own are shown")
            return
        doc = current.texts.model_dump()
        doc["guideline_version"] = current.guideline_version
        doc["guideline_shown"] = current.guideline_current
        if as_json:
            emit_json(doc)
        else:
            typer.echo(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).rstrip())
