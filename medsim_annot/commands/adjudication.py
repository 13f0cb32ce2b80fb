"""``medsim adjudicator add|list|issue-code|revoke|link-sso|rater-names`` (who may settle
pairs, and whether they see the raters' names) and
``medsim adjudicate queue|decide|file`` (the queue and scripted decisions)."""

from __future__ import annotations

from pathlib import Path

import typer

from data_schemas.gold import ADJUDICATION_NEEDS, ADJUDICATION_REASONS
from data_schemas.options import RATER_NAMES
from medsim_annot.commands._common import choice, emit_json, get_group, split_list
from medsim_annot.services.adjudication import board as board_svc
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.adjudication import rater_names as rater_names_svc
from medsim_annot.services.people import adjudicators as svc
from medsim_annot.services.people import language as language_svc
from medsim_annot.services.study_handle import open_study


def register(app: typer.Typer) -> None:
    adj = get_group(app, "adjudicator", "Adjudicators of a study: add, codes, SSO, revoke.")
    decide = get_group(app, "adjudicate", "Settle the pairs the raters could not.")

    @adj.command("add")
    def add(
        study: str = typer.Argument(..., metavar="STUDY"),
        name: str = typer.Argument(...),
        sso: str | None = typer.Option(None, "--sso", help="Link this SSO identity too."),
        lang: str | None = typer.Option(
            None, "--lang", help="the language of their pages (en, de, es; default: the browser's)"
        ),
    ) -> None:
        """Make NAME an adjudicator of STUDY and print their access code (shown once)."""
        handle = open_study(study)
        language = language_svc.check_language(lang)  # refused before anyone is added
        out = svc.add_adjudicator(handle, name, sso_identity=sso)
        if language is not None:
            language_svc.set_adjudicator_language(handle, out.name, language)
        typer.echo(f"{out.name}: {out.access_code}")

    @adj.command("list")
    def list_(
        study: str = typer.Argument(..., metavar="STUDY"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """The adjudicators of STUDY."""
        frame = svc.adjudicators(open_study(study))
        if as_json:
            emit_json(frame.to_dict(orient="records"))
            return
        for r in frame.to_dict(orient="records"):
            state = "active" if r["active"] else "revoked"
            typer.echo(f"{r['adjudicator']:<24} {state:<8} {r['sso_identity']}")

    @adj.command("issue-code")
    def issue(study: str = typer.Argument(..., metavar="STUDY"), name: str = typer.Argument(...)):
        """A new access code for adjudicator NAME (the old one stops working)."""
        typer.echo(f"{name}: {svc.issue_adjudicator_code(open_study(study), name)}")

    @adj.command("revoke")
    def revoke(study: str = typer.Argument(..., metavar="STUDY"), name: str = typer.Argument(...)):
        """Take the adjudicator role from NAME; their decisions are kept."""
        svc.revoke_adjudicator(open_study(study), name)
        typer.echo(f"revoked adjudicator {name}")

    @adj.command("link-sso")
    def link(
        study: str = typer.Argument(..., metavar="STUDY"),
        name: str = typer.Argument(...),
        identity: str = typer.Argument(..., help="e-mail or subject id; '' unlinks"),
    ) -> None:
        """Let adjudicator NAME sign in with this SSO identity."""
        svc.link_adjudicator_sso(open_study(study), name, identity)
        typer.echo(f"linked {name}" if identity.strip() else f"unlinked {name}")

    _rater_names(adj)

    @decide.command("queue")
    def queue(
        study: str = typer.Argument(..., metavar="STUDY"),
        need: str | None = typer.Option(
            None,
            "--need",
            help="only pairs with one of these needs (comma-separated): "
            + ADJUDICATION_NEEDS.describe(),
        ),
        group: str | None = typer.Option(None, "--group", help="only pairs of this group"),
        include_decided: bool = typer.Option(False, "--include-decided"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """The pairs that need a decision, most needed first."""
        b = board_svc.board(open_study(study))
        q = board_svc.filter_queue(
            b.queue, needs=split_list(need), group=group, include_decided=include_decided
        )
        if as_json:
            emit_json([{**r, "needs": list(r["needs"])} for r in q.to_dict(orient="records")])
            return
        p = board_svc.progress(b)
        typer.echo(
            f"{p.needed} pairs need a decision, {p.decided} decided, "
            f"{p.flagged} flagged for the guideline; showing {len(q)}"
        )
        for r in q.to_dict(orient="records"):
            typer.echo(
                f"{r['pair_id']:<28} {','.join(r['needs']):<40} {r['term_1']} | {r['term_2']}"
            )

    @decide.command("decide")
    def decide_one(
        study: str = typer.Argument(..., metavar="STUDY"),
        pair_id: str = typer.Argument(...),
        label: str = typer.Option(..., "--label", help="the final label (a scale value)"),
        reason: str = typer.Option(
            ..., "--reason", **choice(ADJUDICATION_REASONS), help=ADJUDICATION_REASONS.describe()
        ),
        as_: str = typer.Option(..., "--as", help="the adjudicator's name"),
        text: str = typer.Option("", "--text", help="why (required with --reason other)"),
        flag: bool = typer.Option(False, "--flag-guideline", help="flag for a guideline update"),
        version: int | None = typer.Option(
            None, "--version", help="the decision version you saw (default: the current one)"
        ),
    ) -> None:
        """Decide one pair."""
        handle = open_study(study)
        if version is None:
            version = int(board_svc.board(handle).pair(pair_id)["version"])
        d = decisions_svc.decide(
            handle,
            pair_id,
            label=label,
            reason=reason,
            adjudicator=as_,
            seen_version=version,
            reason_text=text,
            flag_guideline=flag,
        )
        typer.echo(f"{d.pair_id}: {d.label} ({d.reason}), version {d.version}, event {d.event_id}")

    @decide.command("file")
    def from_file(
        study: str = typer.Argument(..., metavar="STUDY"),
        path: Path = typer.Argument(
            ...,
            help="pair_id, label, reason[, reason_text, "
            "flag_guideline, version] (csv, tsv, jsonl, parquet)",
        ),
        as_: str = typer.Option(..., "--as", help="the adjudicator's name"),
    ) -> None:
        """Store the decisions of a file, all or none."""
        out = decisions_svc.decide_from_file(open_study(study), path, adjudicator=as_)
        typer.echo(f"stored {len(out)} decisions by {as_}")


def _rater_names(adj: typer.Typer) -> None:
    @adj.command("rater-names")
    def rater_names_(
        study: str = typer.Argument(..., metavar="STUDY"),
        shown: str | None = typer.Argument(
            None, **choice(RATER_NAMES), help=RATER_NAMES.describe() + " Omit to print it."
        ),
    ) -> None:
        """Whether STUDY's adjudicators see Rater A, B, C (the default) or the doctors' names."""
        st = open_study(study)
        if shown is None:
            typer.echo(rater_names_svc.rater_names(st.config))
            return
        typer.echo(rater_names_svc.set_rater_names(st, shown))
