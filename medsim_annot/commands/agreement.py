"""``medsim agreement`` and ``medsim audit``: the agreement report of a ratings file and the
audit of automatic labels against the doctors' majority vote."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import typer

from data_schemas.options import MAJORITY_RULES
from data_schemas.scales import LEVELS
from medsim_annot.commands._common import choice, emit_json, split_list


def _fmt(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="NaN")


def _num(v, fmt: str = ".3f") -> str:
    try:
        return "NaN" if v != v else format(v, fmt)
    except (TypeError, ValueError):
        return str(v)


def _file_notes(notes) -> None:
    """How the input files were read (e.g. an EHR-Rel pair on two rows), one line each."""
    for line in notes:
        typer.echo(f"note: {line}", err=True)


def _notes(reasons: dict) -> None:
    for key, why in reasons.items():
        typer.echo(f"note: {key}: {why}", err=True)


def agreement(
    ratings: Path = typer.Argument(
        ...,
        help="Long ratings file (pair_id, annotator, rating), an EHR-Rel wide file or a "
        "gold export (detected from the header; a 2 + 1 study's export: agreement on its "
        "calibration pairs).",
    ),
    pairs: Path | None = typer.Option(
        None, "--pairs", help="Pairs file: every rated pair_id must be in it."
    ),
    level: str | None = typer.Option(
        None,
        "--level",
        **choice(LEVELS),
        help="Level of measurement (default: the scale's own level). " + LEVELS.describe(),
    ),
    scale: str | None = typer.Option(
        None, "--scale", help="Scale name or file (default: inferred from the rating values)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Agreement of the annotators: alpha, pairwise kappa/rho, ICC, Kendall's W, IAA, HUB."""
    from medsim_annot.services import agreement as svc

    loaded = svc.load_ratings_file(
        ratings, scale=scale, pairs=svc.load_pairs(pairs) if pairs else None
    )
    _file_notes(loaded.notes)
    rep, basis = svc.design_agreement(
        loaded.ratings,
        loaded.scale,
        agreement_pairs=loaded.agreement_pairs,
        level=level,
    )
    design = svc.design_summary(loaded, rep, basis)
    if as_json:
        emit_json({**rep.to_dict(), **(design or {})})
        _notes(rep.reasons)
        return
    d = rep.to_dict()
    typer.echo(
        f"{d['n_items']} items, {d['n_annotators']} annotators, {d['n_ratings']} ratings; "
        f"level {d['level']}"
    )
    if design:
        typer.echo(design["basis"]["note"])
    summary = pd.DataFrame(
        {
            "statistic": [f.label for f in svc.SUMMARY_FIGURES],
            "value": [_num(rep.value(f), f.fmt) for f in svc.SUMMARY_FIGURES],
        }
    )
    typer.echo("\n" + _fmt(summary))
    if rep.icc.rule and rep.icc.k:
        typer.echo(
            f"(ICC and W: {rep.icc.rule}; {rep.icc.n_items} items, {rep.icc.n_dropped} dropped)"
        )
    if d["pairwise"]:
        typer.echo("\nPairwise agreement\n" + _fmt(pd.DataFrame(d["pairwise"])))
    if d["per_annotator"]:
        typer.echo(
            "\nPer annotator (means over pairings; IAA-1, IAA-2)\n"
            + _fmt(pd.DataFrame(d["per_annotator"]))
        )
    if design:
        m = design["majority"]
        typer.echo(
            f"\nMajority verdicts (every pair, as `medsim audit` uses them): "
            f"{m['n_with_majority']} of {m['n_pairs']} pairs have one"
        )
    _notes(rep.reasons)


def audit(
    pairs: Path = typer.Option(..., "--pairs", help="Pairs file with auto_label and groups."),
    ratings: Path = typer.Option(
        ..., "--ratings", help="Long ratings file, an EHR-Rel wide file or a gold export."
    ),
    by: str | None = typer.Option(
        None,
        "--by",
        help="Comma-separated group columns "
        "(default: dataset, difficulty, negative_strategy present).",
    ),
    majority: str = typer.Option(
        MAJORITY_RULES.values[0],
        "--majority",
        **choice(MAJORITY_RULES),
        help=MAJORITY_RULES.describe(),
    ),
    bootstrap: int = typer.Option(
        0, "--bootstrap", min=0, help="Bootstrap resamples for confidence intervals (0 = none)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Random seed of the bootstrap."),
    scale: str | None = typer.Option(
        None, "--scale", help="Scale name or file (default: inferred from the rating values)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Audit automatic labels against the doctors' majority vote, per group (AAAI 2020 Table 3)."""
    from medsim_annot.services import agreement as svc

    pairs_frame = svc.load_pairs(pairs)
    loaded = svc.load_ratings_file(ratings, scale=scale, pairs=pairs_frame)
    _file_notes(loaded.notes)
    res = svc.audit_report(
        pairs_frame,
        loaded.ratings,
        loaded.scale,
        by=split_list(by) if by is not None else None,
        majority=majority,
        bootstrap=bootstrap,
        seed=seed,
        file=str(pairs),
    )
    if as_json:
        emit_json(res.to_dict())
        _notes(res.reasons)
        return
    overall = pd.DataFrame([{k: v for k, v in res.overall.items() if not k.endswith("_ci")}])
    typer.echo("Overall\n" + _fmt(overall))
    if res.by:
        table = res.by_group[[c for c in res.by_group.columns if not c.endswith("_ci")]]
        typer.echo(f"\nBy {', '.join(res.by)}\n" + _fmt(table))
    cis = [k for k in res.overall if k.endswith("_ci")]
    if cis:
        rows = [{"group": "overall", **{k: _ci(res.overall[k]) for k in cis}}]
        for rec in res.by_group.to_dict(orient="records"):
            rows.append(
                {"group": " / ".join(str(rec[c]) for c in res.by), **{k: _ci(rec[k]) for k in cis}}
            )
        typer.echo("\nBootstrap confidence intervals\n" + pd.DataFrame(rows).to_string(index=False))
    _notes(res.reasons)


def _ci(pair) -> str:
    return f"[{_num(pair[0])}, {_num(pair[1])}]"


def register(app: typer.Typer) -> None:
    app.command("agreement")(agreement)
    app.command("audit")(audit)
