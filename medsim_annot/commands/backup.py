"""``medsim backup`` and ``medsim restore``."""

from __future__ import annotations

from pathlib import Path

import typer

from medsim_annot.services.backup import backup, restore
from medsim_annot.services.store import migrate_store

from ._common import emit_json


def register(app: typer.Typer) -> None:
    @app.command("migrate")
    def migrate_cmd(as_json: bool = typer.Option(False, "--json")) -> None:
        """Create or migrate the store's schema (MEDSIM_DATABASE_URL); seeds nothing."""
        res = migrate_store()
        if as_json:
            emit_json(res)
        else:
            typer.echo(f"store {res['store']} is at schema {res['revision']}")

    @app.command("backup")
    def backup_cmd(
        out: Path = typer.Option(..., "--out", help="the backup file to write (0600)"),
        force: bool = typer.Option(False, "--force", help="overwrite an existing file"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Back up the store while the app runs (SQLite online backup; PostgreSQL: pg_dump)."""
        res = backup(out, force=force)
        if as_json:
            emit_json(res)
        else:
            typer.echo(
                f"backed up {res['studies']} studies and {res['ratings']} ratings "
                f"to {res['out']} ({res['bytes']} bytes, schema {res['revision']})"
            )

    @app.command("restore")
    def restore_cmd(
        source: Path = typer.Argument(..., help="a file written by medsim backup"),
        force: bool = typer.Option(False, "--force", help="replace a store that has studies"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Replace the store with a backup (stop the app first)."""
        res = restore(source, force=force)
        if as_json:
            emit_json(res)
        else:
            typer.echo(
                f"restored {res['studies']} studies and {res['ratings']} ratings "
                f"from {res['from']} into {res['restored']} (schema {res['revision']})"
            )
            if res.get("kept"):
                typer.echo(f"the replaced store is kept as {res['kept']}")
