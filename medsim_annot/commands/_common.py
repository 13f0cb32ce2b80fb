"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
import math

import numpy as np
import typer

from data_schemas.options import StrOptions
from medsim_annot.errors import UsageProblem


def emit_json(obj) -> None:
    """Print *obj* as JSON (NaN becomes null) to stdout."""
    typer.echo(json.dumps(_clean(obj), indent=2, ensure_ascii=False, default=str))


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    return obj


def get_group(app: typer.Typer, name: str, help_text: str) -> typer.Typer:
    """The sub-command group *name* of *app*, created on first use: several command modules
    add commands to one group (``build``: snomed and cooccurrence)."""
    for g in app.registered_groups:
        if g.name == name:
            if g.typer_instance is not None:
                return g.typer_instance
    sub = typer.Typer(help=help_text, no_args_is_help=True)
    app.add_typer(sub, name=name)
    return sub


def choice(options: StrOptions) -> dict:
    """``typer.Option`` arguments for a registry of allowed values: ``--help`` shows them as
    ``a|b``, and any other value is refused with the registry's message and exit code 2."""
    return {"metavar": "|".join(options.values), "parser": options.check}


def split_list(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


#: The help of ``--sample-per-group`` (``study create`` and ``study plan``).
SAMPLE_PER_GROUP_HELP = "stratified sample: P positives and N negatives (auto_label 1/0) per group"


def sample_per_group(text: str | None) -> tuple[int, int] | None:
    """The ``--sample-per-group P,N`` option as ``(P, N)``; ``None`` when not given.

    >>> sample_per_group("5, 3")
    (5, 3)
    >>> sample_per_group(None) is None
    True
    """
    if text is None:
        return None
    parts = split_list(text)
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise UsageProblem(f"--sample-per-group takes P,N (two whole numbers), not '{text}'")
    return int(parts[0]), int(parts[1])
