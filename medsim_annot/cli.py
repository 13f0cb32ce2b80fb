"""The ``medsim`` command line (typer).

Each module in :mod:`medsim_annot.commands` defines ``register(app)`` and adds its commands
or sub-apps; this file only discovers them, so areas of the project never edit one file.
Errors in input print one clear sentence (file, row, column, what is wrong) to stderr and
exit with code 2; nothing is written then.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from data_schemas.errors import InputError, UnknownOptionError
from medsim_annot.errors import UsageProblem

app = typer.Typer(
    name="medsim",
    no_args_is_help=True,
    add_completion=False,
    help="medsim-annot: verify, audit and benchmark medical term-similarity datasets.",
    pretty_exceptions_enable=False,
)


@app.callback()
def _actor() -> None:
    """Events recorded by any command name the operating-system user (``cli:USER``)."""
    from medsim_annot.services.activity import cli_actor, set_actor

    set_actor(cli_actor())


def _register_all() -> None:
    from medsim_annot import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"medsim_annot.commands.{info.name}")
        module.register(app)


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning input errors into exit code 2 with one sentence."""
    try:
        app(args=argv, standalone_mode=True)
    except InputError as exc:
        for line in exc.lines()[:20]:
            print(f"error: {line}", file=sys.stderr)
        if len(exc.problems) > 20:
            print(f"error: ... and {len(exc.problems) - 20} more problems", file=sys.stderr)
        sys.exit(2)
    except (UsageProblem, UnknownOptionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
