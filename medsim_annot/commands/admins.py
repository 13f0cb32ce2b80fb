"""``medsim admin add|remove|list|set-password|activity``, ``medsim annotator link-sso`` and
``medsim study sso``: named admins, SSO identities and the event log."""

from __future__ import annotations

import getpass

import typer

from medsim_annot.commands._common import emit_json, get_group
from medsim_annot.errors import UsageProblem
from medsim_annot.services import activity as activity_svc
from medsim_annot.services.people import admins as admins_svc
from medsim_annot.services.people import annotators as annotators_svc
from medsim_annot.services.people import names as names_svc
from medsim_annot.services.people import sso as sso_svc
from medsim_annot.services.study_handle import open_study


def _ask_password(password: str | None) -> str:
    if password is not None:
        return password
    password = getpass.getpass("new admin password: ")
    if password != getpass.getpass("again: "):
        raise UsageProblem("the two passwords differ")
    return password


def register(app: typer.Typer) -> None:
    admin = get_group(app, "admin", "Study admins: add, remove, list, passwords, activity.")
    ann = get_group(app, "annotator", "Annotators of a study: add, rename, access codes.")
    study = get_group(app, "study", "Create, list and export studies.")

    @admin.command("add")
    def add(
        name: str = typer.Argument(..., help="the admin's name (shown in the event log)"),
        sso: str | None = typer.Option(
            None, "--sso", help="their SSO identity: e-mail address or subject id"
        ),
        password: bool = typer.Option(
            False, "--password", help="also ask for a password (hidden input)"
        ),
    ) -> None:
        """Add a named admin who signs in by SSO identity and/or a password."""
        pw = _ask_password(None) if password or not sso else None
        admins_svc.add_admin(name, password=pw, sso_identity=sso)
        typer.echo(f"admin {name.strip()} added")

    @admin.command("remove")
    def remove(name: str = typer.Argument(...)) -> None:
        """Remove a named admin (the event log keeps what they did)."""
        admins_svc.remove_admin(name)
        typer.echo(f"admin {name} removed")

    @admin.command("list")
    def list_(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
        """Admins and how each signs in (password, SSO identity)."""
        rows = admins_svc.list_admins()
        if as_json:
            emit_json(rows)
            return
        if not rows:
            typer.echo(
                "no admins yet: add one with `medsim admin add NAME --password` (or set "
                "MEDSIM_ADMIN_PASSWORD for the admin named 'admin')"
            )
            return
        for r in rows:
            how = ", ".join(
                x for x in ("password" if r["password"] else "", r["sso_identity"] and "sso") if x
            )
            ident = f" {r['sso_identity']}" if r["sso_identity"] else ""
            typer.echo(f"{r['name']:<24} {how}{ident}")

    @admin.command("set-password")
    def set_password(
        name: str = typer.Argument(admins_svc.ENV_ADMIN, help="admin name (created if new)"),
        password: str | None = typer.Option(
            None, "--password", help="omit to be asked (hidden input)"
        ),
    ) -> None:
        """Set an admin's password (at least 12 characters; stored as a scrypt hash)."""
        admins_svc.set_password(name, _ask_password(password))
        typer.echo(f"password of admin {name} set")

    @admin.command("activity")
    def activity(
        study_name: str | None = typer.Option(None, "--study", help="only this study"),
        limit: int = typer.Option(100, "--limit", min=1),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """The event log, newest first: who created, changed, exported or revoked what."""
        frame = activity_svc.activity(study=study_name, limit=limit)
        if as_json:
            emit_json(frame.to_dict(orient="records"))
            return
        for r in frame.to_dict(orient="records"):
            at = r["at"].strftime("%Y-%m-%d %H:%M:%S") if r["at"] is not None else ""
            typer.echo(
                f"{at}  {r['actor'] or '-':<28} {r['action']:<22} {r['study']} {r['annotator']}"
            )

    @ann.command("link-sso")
    def link_sso(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        name: str = typer.Argument(...),
        identity: str = typer.Argument(
            ..., help='e-mail address or subject id; "" removes the link'
        ),
    ) -> None:
        """Link an annotator to their SSO identity (used when the study allows SSO)."""
        annotators_svc.link_annotator_sso(open_study(study_name), name, identity)
        typer.echo(
            f"{name} linked to {names_svc.normalise_identity(identity)}"
            if identity.strip()
            else f"SSO link of {name} removed"
        )

    @study.command("sso")
    def study_sso(
        study_name: str = typer.Argument(..., metavar="STUDY"),
        enable: bool = typer.Option(..., "--enable/--disable", help="allow annotator SSO"),
    ) -> None:
        """Allow (or stop) sign-in by SSO for the study's linked annotators."""
        sso_svc.set_annotator_sso(open_study(study_name), enable)
        typer.echo(f"annotator SSO {'enabled' if enable else 'disabled'} for {study_name}")
