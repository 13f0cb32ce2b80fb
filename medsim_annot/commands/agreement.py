"""``medsim agreement`` and ``medsim audit``: the agreement report of a ratings file and the
audit of automatic labels against the doctors' majority vote."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import typer

from data_schemas.options import AUDIT_METHODS, MAJORITY_RULES
from data_schemas.scales import LEVELS
from medsim_annot.commands._common import choice, emit_json, split_list
from medsim_annot.errors import UsageProblem
from medsim_annot.services import agreement as svc
from medsim_annot.services import predictions as psvc
from medsim_annot.services.studies import load_pairs

if TYPE_CHECKING:
    from medsim_annot.services.predictions import ModelRaterReport


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
    model: Path | None = typer.Option(
        None,
        "--model",
        help="Scores file (pair_id + score columns, e.g. `medsim score` output): the model "
        "as a blinded extra rater (Spearman rho beside each doctor's leave-one-out rho, and "
        "the alternative-annotator test).",
    ),
    score_column: str | None = typer.Option(
        None, "--score-column", help="Score column of --model (needed when it has several)."
    ),
    epsilon: float = typer.Option(
        0.2,
        "--epsilon",
        help="Alt-test margin (Calderon et al. 2025): 0.2 for experts, 0.15 skilled, 0.1 crowd.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Agreement of the annotators: alpha, pairwise kappa/rho, ICC, Kendall's W, IAA, HUB."""
    loaded = svc.load_ratings_file(ratings, scale=scale, pairs=load_pairs(pairs) if pairs else None)
    _file_notes(loaded.notes)
    rep, basis = svc.design_agreement(
        loaded.ratings,
        loaded.scale,
        agreement_pairs=loaded.agreement_pairs,
        level=level,
    )
    design = svc.design_summary(loaded, rep, basis)
    rater = None
    if model is not None:
        rater = psvc.model_rater_report(
            loaded.ratings,
            loaded.scale,
            psvc.load_predictions(model, score_column=score_column),
            epsilon=epsilon,
        )
    if as_json:
        as_model = {"model": rater.to_dict()} if rater else {}
        emit_json({**rep.to_dict(), **(design or {}), **as_model})
        _notes(rep.reasons)
        if rater:
            _notes(rater.reasons)
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
    coefs = pd.DataFrame(d["coefficients"])
    if len(coefs):
        typer.echo(
            "\nChance-corrected coefficients (standard error, 95% interval; Gwet 2014)\n"
            + _fmt(coefs.drop(columns=["reason"]))
        )
    for note in rep.notes:
        typer.echo(note)
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
    if rater:
        _print_model(rater)
    _notes(rep.reasons)
    if rater:
        _notes(rater.reasons)


def _print_model(rater: ModelRaterReport) -> None:
    typer.echo(
        "\nModel as a blinded extra rater (leave-one-out rho: each rater against the mean of "
        "the doctors other than one)\n" + _fmt(psvc.model_rater_table(rater))
    )
    typer.echo("\n" + psvc.alt_test_sentence(rater))


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
    predictions: Path | None = typer.Option(
        None,
        "--predictions",
        help="Scores file with a score for every pair (e.g. `medsim score` output, or another "
        "builder's 0/1 labels): prediction-powered (PPI++) intervals next to the classical ones.",
    ),
    score_column: str | None = typer.Option(
        None, "--score-column", help="Score column of --predictions (needed when it has several)."
    ),
    method: str = typer.Option(
        "ppi",
        "--method",
        **choice(AUDIT_METHODS),
        help="With --predictions: the interval reported as *_ci (both are always shown). "
        + AUDIT_METHODS.describe(),
    ),
    target_ci: float | None = typer.Option(
        None,
        "--target-ci",
        metavar="HALF_WIDTH",
        help="With --predictions: whether each group is within ±HALF_WIDTH (the sequential "
        "rule's 97.5 % check of --method's interval) and the pairs it still needs.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Audit automatic labels against the doctors' majority vote, per group (AAAI 2020 Table 3)."""
    pairs_frame = load_pairs(pairs)
    loaded = svc.load_ratings_file(ratings, scale=scale, pairs=pairs_frame)
    _file_notes(loaded.notes)
    if predictions is not None:
        _prediction_audit(
            pairs_frame, loaded, predictions, score_column, by, majority, method, target_ci, as_json
        )
        return
    if target_ci is not None:
        raise UsageProblem("--target-ci of `medsim audit` needs --predictions")
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


def _prediction_audit(
    pairs_frame, loaded, predictions, score_column, by, majority, method, target_ci, as_json
) -> None:
    res = psvc.prediction_audit_report(
        pairs_frame,
        loaded.ratings,
        loaded.scale,
        psvc.load_predictions(predictions, score_column=score_column),
        by=split_list(by) if by is not None else None,
        majority=majority,
        method=method,
        target_ci=target_ci,
        file=str(predictions),
    )
    if as_json:
        emit_json(res.to_dict())
        _notes(res.reasons)
        return
    table = psvc.prediction_audit_table(res).drop(columns=["note"])
    typer.echo(
        f"--method {res.method}: *_ci is the "
        f"{'PPI++' if res.method == 'ppi' else 'classical'} interval\n" + _fmt(table)
    )
    for metric in res.metrics:
        typer.echo(f"note: {metric} overall: {res.overall[f'{metric}_note']}", err=True)
    _notes(res.reasons)


def _ci(pair) -> str:
    return f"[{_num(pair[0])}, {_num(pair[1])}]"


def register(app: typer.Typer) -> None:
    app.command("agreement")(agreement)
    app.command("audit")(audit)
