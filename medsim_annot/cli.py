"""The ``medsim`` command line (typer).

Each module in :mod:`medsim_annot.commands` defines ``register(app)`` and adds its commands
or sub-apps; this file only discovers them, so areas of the project never edit one file.
Errors in input print one clear sentence (file, row, column, what is wrong) to stderr and
exit with code 2; nothing is written then. Services name a setting as ``label (name)``
(``target half-width (target_ci)``); the messages printed here name its flag instead
(``target half-width (--target-ci)``), from :func:`setting_flags`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from typing import Any

import typer

from data_schemas.errors import InputError, OptionError
from medsim_annot import commands
from medsim_annot.errors import UsageProblem
from medsim_annot.services.activity import cli_actor, set_actor

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
    set_actor(cli_actor())


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"medsim_annot.commands.{info.name}")
        module.register(app)


_register_all()


@functools.cache
def setting_flags() -> dict[str, str]:
    """Every option's setting name and its flag (``{"target_ci": "--target-ci"}``), read from
    the commands' typer options: the one table that turns a service's message into the
    command line's words. A name two commands spell differently keeps the first flag."""
    table: dict[str, str] = {}

    def walk(command: Any) -> None:
        for param in command.params:
            longs = [o for o in param.opts if o.startswith("--")]
            if param.param_type_name == "option" and param.name and longs:
                table.setdefault(param.name, longs[0])
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return table


def flagged(message: str, setting: str | None = None) -> str:
    """*message* with each setting named ``(name)`` shown as its flag ``(--flag)``, and the
    *setting* it opens with (a string option's ``engine must be …``) too.

    >>> flagged("target half-width (target_ci) must be between 0 and 0.5, not 0.7")
    'target half-width (--target-ci) must be between 0 and 0.5, not 0.7'
    >>> flagged("engine must be 'duckdb' or 'spark', not 'hive'", "engine")
    "--engine must be 'duckdb' or 'spark', not 'hive'"
    """
    flags = setting_flags()
    if setting in flags and message.startswith(f"{setting} "):
        message = flags[setting] + message[len(setting) :]
    if "(" not in message:
        return message
    for name, flag in flags.items():
        message = message.replace(f"({name})", f"({flag})")
    return message


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning input errors into exit code 2 with one sentence."""
    try:
        app(args=argv, standalone_mode=True)
    except InputError as exc:
        for line in exc.lines()[:20]:
            print(f"error: {flagged(line)}", file=sys.stderr)
        if len(exc.problems) > 20:
            print(f"error: ... and {len(exc.problems) - 20} more problems", file=sys.stderr)
        sys.exit(2)
    except (UsageProblem, OptionError) as exc:
        print(f"error: {flagged(str(exc), getattr(exc, 'setting', None))}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
