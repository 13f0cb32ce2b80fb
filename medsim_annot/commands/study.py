"""``medsim study ...``, ``medsim import ...``, ``medsim demo`` and ``medsim admin ...``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from data_schemas import columns as C
from data_schemas.options import SAMPLINGS, TARGET_CI
from data_schemas.scales import BUILT_IN, load_scale
from medsim_annot.commands._common import (
    SAMPLE_PER_GROUP_HELP,
    choice,
    emit_json,
    get_group,
    split_list,
)
from medsim_annot.commands._common import sample_per_group as sample_per_group_option
from medsim_annot.errors import UsageProblem
from medsim_annot.io import formats_text, read_table
from medsim_annot.seeds import new_seed
from medsim_annot.services import predictions as psvc
from medsim_annot.services import quality as quality_svc
from medsim_annot.services import studies as svc
from medsim_annot.services.active_serving import create_active_study
from medsim_annot.services.demo import credentials_text, seed_demo
from medsim_annot.services.design import DesignOptions, create_designed_study, plan_budget
from medsim_annot.services.quality import QualitySettings, with_check_answers
from medsim_annot.services.stopping import StoppingSwitch, set_stopping
from medsim_annot.services.store import embedded_store
from medsim_annot.services.stored_predictions import add_predictions
from medsim_annot.services.study_handle import open_study


def _print_codes(result: dict) -> None:
    typer.echo(f"study '{result['study']}': {result['items']} pairs")
    for a in result["annotators"]:
        code = a.get("access_code")
        typer.echo(f"  {a['name']:<20} {code if code else '(no access code: imported)'}")


def _print_import(result: dict, study_name: str, as_json: bool) -> None:
    result = dict(result)
    for line in result.pop("notes", []):
        typer.echo(f"note: {line}", err=True)
    if as_json:
        emit_json(result)
    else:
        typer.echo(
            f"imported {result['items']} pairs and {result['ratings']} ratings by "
            f"{len(result['annotators'])} annotators into study '{study_name}'"
        )


def _is_designed(o) -> bool:
    """Whether any design option asks for planned queues (a seed counts too, by the caller)."""
    return bool(
        o.sample_per_group is not None
        or o.per_item is not None
        or o.calibration
        or o.duplicates
        or o.tiebreak
        or o.target_ci is not None
        or o.check_rate is not None
    )


def _group_columns(group_by, target_ci, sample, columns) -> list[str]:
    """``--group-by``, or its default: the standard group columns, only those the file has
    when the groups are for ``--target-ci`` alone."""
    if group_by is not None:
        return split_list(group_by)
    if target_ci is not None and sample is None:
        return [c for c in C.GROUP_COLUMNS if c in columns]
    return list(C.GROUP_COLUMNS)


def _create(
    name, frame, sc, annotators: str, pairs: Path, options, as_json: bool, quality=None
) -> None:
    """Create the study: in file order for everyone when *options* is ``None`` (asked for
    with --file-order), else with the planned (shuffled) queues; print the access codes
    (and the design, its seed and its warnings)."""
    config: dict = {"pairs_file": pairs.name}
    if quality is not None:
        config["quality"] = quality.to_config()
    if options is None:  # file order, everyone rates everything
        config["order"] = "file"
        result = svc.create_study(
            name, frame, sc, split_list(annotators), config=config, file=str(pairs)
        )
        emit_json(result) if as_json else _print_codes(result)
        return
    created = create_designed_study(
        name, frame, sc, split_list(annotators), options, file=str(pairs), extra_config=config
    )
    if as_json:
        emit_json(created.to_dict())
        return
    _print_codes(created.to_dict())
    typer.echo(f"design: {created.config.get('design')}, seed {options.seed}")
    for w in created.warnings:
        typer.echo(f"warning: {w}", err=True)


def _print_plan(out: dict) -> None:
    a = out["assumptions"]
    typer.echo(
        f"expected ratings: {out['ratings']:,} ({out['ratings_per_pair']:.2f} per pair; "
        f"all rate all: {out['all_rate_all']:,}, saving {out['saving']:.0%})"
    )
    typer.echo(f"assumptions from {a['source']}; tiebreak share {a['disagreement']:.1%}")
    for g, row in out["groups"].items():
        typer.echo(
            f"  {g:<40} {row['pairs']:>6} pairs  {row['pairs_rated']:>6} rated  "
            f"{row['ratings']:>7} ratings  (accuracy {a['accuracy'][g]:.2f})"
        )
    w = out.get("with_predictions")
    if w:
        typer.echo(
            f"with predictions (PPI++ interval; correlation on the pilot "
            f"{w['correlation']:.2f}): {w['ratings']:,} ratings, "
            f"{w['saving_vs_classical']:.0%} fewer than the classical sequential audit"
        )
        for g, row in w["groups"].items():
            typer.echo(
                f"  {g:<40} {row['pairs']:>6} pairs  {row['pairs_rated']:>6} rated  "
                f"{row['ratings']:>7} ratings  (correlation {row['correlation']:.2f})"
            )
        act = w.get("active")
        if act:
            typer.echo(
                f"with active serving: {act['ratings']:,} ratings, "
                f"{act['saving_vs_classical']:.0%} fewer than classical, "
                f"{act['saving_vs_uniform']:.0%} fewer than uniform PPI++"
            )
            for g, row in w["groups"].items():
                if "active_pairs_rated" in row:
                    typer.echo(
                        f"  {g:<40} {row['pairs']:>6} pairs  {row['active_pairs_rated']:>6} "
                        f"rated  {row['active_ratings']:>7} ratings"
                    )
        if out.get("cost") is not None:
            typer.echo(
                f"cost: classical {out['cost']:,.6g}, with predictions {w['cost']:,.6g}"
                + (f", active {act['cost']:,.6g}" if act else "")
            )


def _plan_with_predictions(
    pairs: Path,
    n: int,
    predictions: Path,
    score_column: str | None,
    pilot: str | None,
    target_ci: float | None,
    options: dict[str, Any],
    sampling: str = "uniform",
    cost_per_rating: float = 1.0,
) -> dict:
    if pilot is None or target_ci is None:
        raise UsageProblem(
            "--predictions plans the sequential audit from a pilot: give --pilot and --target-ci"
        )
    return psvc.plan_with_predictions(
        svc.load_pairs(pairs),
        n,
        psvc.load_predictions(predictions, score_column=score_column),
        pilot=open_study(pilot),
        target_ci=target_ci,
        file=str(predictions),
        sampling=sampling,
        cost_per_rating=cost_per_rating,
        **options,
    )


def _create_any(
    name,
    frame,
    sc,
    annotators: str,
    pairs: Path,
    designed,
    *,
    file_order: bool,
    as_json: bool,
    quality,
    predictions: Path | None,
    score_column: str | None,
    sampling: str,
) -> None:
    """``study create``: with active serving, with stored predictions, or plain."""
    if sampling == "active":
        if predictions is None or file_order:
            raise UsageProblem(
                "--sampling active draws pairs from the model's scores: give --predictions "
                "(and no --file-order)"
            )
        created = create_active_study(
            name,
            frame,
            sc,
            split_list(annotators),
            designed,
            predictions,
            score_column=score_column,
            file=str(pairs),
            extra_config={"pairs_file": pairs.name, "quality": quality.to_config()},
        )
        if as_json:
            emit_json(created.to_dict())
            return
        _print_codes(created.to_dict())
        a = created.config["active"]
        typer.echo(
            f"active serving: {a['drawn']} of {a['pairs']} pairs drawn (seed {designed.seed})"
        )
        return
    if predictions is not None:  # checked before anything is created
        psvc.load_predictions(predictions, score_column=score_column)
    _create(
        name,
        frame,
        sc,
        annotators,
        pairs,
        None if file_order else designed,
        as_json,
        quality,
    )
    if predictions is not None:
        row = add_predictions(open_study(name), predictions, score_column=score_column)
        if not as_json:
            typer.echo(f"stored predictions '{row.name}' version {row.version}")


def _refuse_active_without_predictions(sampling: str, predictions: Path | None) -> None:
    if sampling == "active" and predictions is None:
        raise UsageProblem("--sampling active is planned from scores: give --predictions")


def _stopping_line(name: str, out: StoppingSwitch) -> str:
    if out.stopping == "off":
        released = out.groups_released
        return f"stopping off for '{name}': {out.restored} withdrawn slots served again" + (
            f" (groups {', '.join(released)})" if released else ""
        )
    stopped = out.groups_stopped
    return f"stopping on for '{name}': " + (
        f"stopped {', '.join(stopped)}" if stopped else "no group is within its target yet"
    )


def _demo(as_json: bool, force: bool, credentials: Path | None, server_store: bool) -> None:
    if not embedded_store() and not server_store:
        # A production database gets no demo studies and no generated admin password, and
        # an earlier demo's credentials file is neither printed nor replaced.
        msg = (
            "MEDSIM_DATABASE_URL is a database server: the demo is not seeded there "
            "(pass --server-store to seed it anyway); serve it with `make serve`"
        )
        if as_json:
            emit_json({"seeded": False, "reason": msg})
        else:
            typer.echo(msg)
        return
    result = seed_demo(only_if_empty=not force)
    if as_json:
        emit_json(result)
        return
    if not result["seeded"]:
        if credentials is not None and credentials.exists():
            typer.echo(credentials.read_text(encoding="utf-8"), nl=False)
        else:
            typer.echo("the database already has studies; demo not seeded (use --force to add it)")
        return
    text = credentials_text(result)
    if credentials is not None:
        credentials.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(credentials, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    typer.echo(text, nl=False)


def _checks(name, file, rushed_ms, check_min_accuracy, no_min_accuracy, as_json) -> None:
    """``medsim study checks``: mark check pairs, change the settings, print them."""
    out: dict = {"study": name}
    study = open_study(name)
    if file is not None:
        out.update(quality_svc.mark_check_pairs(study, read_table(file), file=str(file)).to_dict())
    if rushed_ms is not None or check_min_accuracy is not None or no_min_accuracy:
        settings = quality_svc.set_settings(
            study,
            rushed_ms=rushed_ms,
            check_min_accuracy=check_min_accuracy,
            clear_min_accuracy=no_min_accuracy,
        )
    else:
        settings = quality_svc.study_settings(study)
    out["settings"] = settings.to_config()
    out["checks"] = len(quality_svc.check_answers(study))
    if as_json:
        emit_json(out)
        return
    if file is not None:
        typer.echo(f"marked {out['marked']} check pairs, unmarked {out['unmarked']}")
    minimum = settings.check_min_accuracy
    typer.echo(
        f"study '{name}': {out['checks']} check pairs; rushed below {settings.rushed_ms} ms; "
        + (
            f"warning below {minimum:.0%} on check pairs"
            if minimum is not None
            else "no minimum accuracy"
        )
    )


def _with_annotators_and_checks(frame, annotators: str, checks: Path | None):
    """*frame* with the check answers of *checks* (if given); refuses a study without
    annotators (it could never be rated)."""
    if not split_list(annotators):
        raise UsageProblem(
            "a study needs annotators: give --annotators a,b,c (names of your choice; "
            "each gets an access code)"
        )
    if checks is not None:
        frame = with_check_answers(frame, read_table(checks), str(checks))
    return frame


def _refuse_file_order_with_design(file_order: bool, seed, designed) -> None:
    if file_order and (seed is not None or _is_designed(designed)):
        raise UsageProblem(
            "--file-order serves the file as it is: it cannot be combined with --seed or "
            "a design option"
        )


def register(app: typer.Typer) -> None:
    study = get_group(app, "study", "Create, list and export studies.")
    importer = get_group(
        app, "import", "Import completed studies (EHR-Rel wide files, ratings files)."
    )

    @study.command("create")
    def create(
        name: str = typer.Argument(..., help="name of the new study"),
        pairs: Path = typer.Option(..., "--pairs", help=f"pairs file ({formats_text()})"),
        scale: str = typer.Option("binary", "--scale", help=" | ".join([*BUILT_IN, "SCALE_FILE"])),
        annotators: str = typer.Option("", "--annotators", help="comma-separated names"),
        sample_per_group: str | None = typer.Option(
            None,
            "--sample-per-group",
            metavar="P,N",
            help=SAMPLE_PER_GROUP_HELP,
        ),
        group_by: str | None = typer.Option(
            None,
            "--group-by",
            metavar="COL[,COL]",
            help="group columns for --sample-per-group and --target-ci (default: "
            "dataset,difficulty,negative_strategy; with --target-ci those the file has)",
        ),
        allow_fewer: bool = typer.Option(
            False,
            "--allow-fewer",
            help="take all pairs of a group that has fewer "
            "than P or N (with a warning) instead of failing",
        ),
        seed: int | None = typer.Option(
            None,
            "--seed",
            help="seed of sampling, design and order (random when omitted; always stored)",
        ),
        per_item: int | None = typer.Option(
            None,
            "--per-item",
            metavar="K",
            help="each pair rated by K of the annotators (balanced); default: all rate all",
        ),
        calibration: int = typer.Option(
            0, "--calibration", metavar="N", help="N pairs every annotator rates"
        ),
        duplicates: float = typer.Option(
            0.0,
            "--duplicates",
            metavar="FRACTION",
            help="share of each queue shown again, later, terms swapped",
        ),
        tiebreak: bool = typer.Option(
            False,
            "--tiebreak",
            help="with --per-item 2: a third annotator rates a pair only when the first two "
            "disagree (2 + 1 design)",
        ),
        tiebreak_tolerance: float = typer.Option(
            0.0,
            "--tiebreak-tolerance",
            metavar="T",
            help="graded scales: codes that differ by at most T agree (default 0)",
        ),
        target_ci: float | None = typer.Option(
            None,
            "--target-ci",
            metavar="HALF_WIDTH",
            help="sequential audit: a group stops being served once the 95% interval of its "
            f"accuracy is within ±HALF_WIDTH ({TARGET_CI.describe()}); pairs are served "
            "group-interleaved",
        ),
        min_positives: int = typer.Option(
            10, "--min-positives", help="with --target-ci: positives a group needs first"
        ),
        min_negatives: int = typer.Option(
            10, "--min-negatives", help="with --target-ci: negatives a group needs first"
        ),
        file_order: bool = typer.Option(
            False,
            "--file-order",
            help="serve every annotator every pair in the file's order (not blind: the "
            "order of the file shows); cannot be combined with design options",
        ),
        checks: Path | None = typer.Option(
            None,
            "--checks",
            help="check pairs: a file with pair_id and check_answer (the known answer, a "
            "value of the scale); a check_answer column in the pairs file does the same",
        ),
        check_rate: float | None = typer.Option(
            None,
            "--check-rate",
            metavar="SHARE",
            help="share of each queue that is check pairs, spread through it (default: "
            "every check pair once, where the file puts it)",
        ),
        check_min_accuracy: float | None = typer.Option(
            None,
            "--check-min-accuracy",
            metavar="A",
            help="warn on the dashboard about a doctor whose accuracy on check pairs is below A",
        ),
        rushed_ms: int = typer.Option(
            1500, "--rushed-ms", metavar="MS", help="an answer faster than MS ms is rushed"
        ),
        predictions: Path | None = typer.Option(
            None,
            "--predictions",
            help="scores file (pair_id, score): stored with the study; with --target-ci the "
            "audit stops on the prediction-powered rule",
        ),
        score_column: str | None = typer.Option(
            None, "--score-column", help="score column of --predictions"
        ),
        sampling: str = typer.Option(
            "uniform",
            "--sampling",
            **choice(SAMPLINGS),
            help="active: serve the pairs the model is least sure about more often (needs "
            "--predictions and --target-ci)",
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Create a study. Every annotator's queue is shuffled with a seed (a fresh one when
        --seed is omitted, recorded in the study and printed), so the file's order tells
        nothing; --file-order serves the file's order instead. --sample-per-group,
        --per-item, --calibration, --duplicates, --tiebreak, --target-ci, --check-rate plan
        the queues.
        Prints the access codes once."""
        sc = load_scale(scale)
        frame = svc.load_pairs(pairs)
        frame = _with_annotators_and_checks(frame, annotators, checks)
        quality = QualitySettings(rushed_ms=rushed_ms, check_min_accuracy=check_min_accuracy)
        sample = sample_per_group_option(sample_per_group)
        designed = DesignOptions(
            sample_per_group=sample,
            group_by=_group_columns(group_by, target_ci, sample, frame.columns),
            allow_fewer=allow_fewer,
            per_item=per_item,
            calibration=calibration,
            duplicates=duplicates,
            seed=new_seed() if seed is None else seed,
            tiebreak=tiebreak,
            tiebreak_tolerance=tiebreak_tolerance,
            target_ci=target_ci,
            min_positives=min_positives,
            min_negatives=min_negatives,
            check_rate=check_rate,
        )
        _refuse_file_order_with_design(file_order, seed, designed)
        _create_any(
            name,
            frame,
            sc,
            annotators,
            pairs,
            designed,
            file_order=file_order,
            as_json=as_json,
            quality=quality,
            predictions=predictions,
            score_column=score_column,
            sampling=sampling,
        )

    @study.command("checks")
    def checks_cmd(
        name: str = typer.Argument(..., help="study name"),
        file: Path | None = typer.Option(
            None,
            "--file",
            help="mark check pairs: pair_id and check_answer (an empty answer unmarks)",
        ),
        rushed_ms: int | None = typer.Option(
            None, "--rushed-ms", metavar="MS", help="an answer faster than MS ms is rushed"
        ),
        check_min_accuracy: float | None = typer.Option(
            None,
            "--check-min-accuracy",
            metavar="A",
            help="warn about a doctor whose accuracy on check pairs is below A",
        ),
        no_min_accuracy: bool = typer.Option(
            False, "--no-min-accuracy", help="no warning on the accuracy on check pairs"
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Rater checks of a study: mark check pairs (pairs with a known answer) and set
        the rushed threshold and the minimum accuracy on check pairs. Without options,
        prints the settings and how many check pairs the study has."""
        _checks(name, file, rushed_ms, check_min_accuracy, no_min_accuracy, as_json)

    @study.command("plan")
    def plan(
        pairs: Path = typer.Option(..., "--pairs", help=f"pairs file ({formats_text()})"),
        annotators: str = typer.Option(
            ..., "--annotators", help="number of annotators, or comma-separated names"
        ),
        group_by: str = typer.Option(
            "dataset,difficulty,negative_strategy",
            "--group-by",
            help="group columns (those the file lacks are ignored)",
        ),
        sample_per_group: str | None = typer.Option(
            None, "--sample-per-group", metavar="P,N", help=SAMPLE_PER_GROUP_HELP
        ),
        per_item: int | None = typer.Option(None, "--per-item", metavar="K"),
        tiebreak: bool = typer.Option(
            False, "--tiebreak", help="2 + 1: a third rating only on disagreement"
        ),
        calibration: int = typer.Option(0, "--calibration", metavar="N"),
        target_ci: float | None = typer.Option(
            None, "--target-ci", metavar="HALF_WIDTH", help="sequential stopping per group"
        ),
        pilot: str | None = typer.Option(
            None, "--pilot", help="a rated study: accuracy per group and disagreement from it"
        ),
        accuracy: float = typer.Option(
            0.9, "--accuracy", help="expected accuracy of the automatic labels (no pilot)"
        ),
        error: float = typer.Option(0.05, "--error", help="a doctor's error rate (no pilot)"),
        dont_know: float = typer.Option(
            0.02, "--dont-know", help="a doctor's don't-know rate (no pilot)"
        ),
        predictions: Path | None = typer.Option(
            None,
            "--predictions",
            help="scores file covering the pilot's and these pairs: also plan the sequential "
            "audit with the prediction-powered interval (needs --pilot and --target-ci)",
        ),
        score_column: str | None = typer.Option(
            None, "--score-column", help="score column of --predictions"
        ),
        sampling: str = typer.Option(
            "uniform",
            "--sampling",
            **choice(SAMPLINGS),
            help="with --predictions: also plan"
            " active serving (pairs the model is least sure about drawn more often)",
        ),
        cost_per_rating: float = typer.Option(
            1.0, "--cost-per-rating", help="cost of one doctor rating (minutes, money)"
        ),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Expected number of ratings of a design, per group and in total, before a study
        starts (nothing is written)."""
        names = split_list(annotators)
        n = int(names[0]) if len(names) == 1 and names[0].isdigit() else len(names)
        options: dict[str, Any] = dict(
            group_by=split_list(group_by),
            sample_per_group=sample_per_group_option(sample_per_group),
            per_item=per_item,
            tiebreak=tiebreak,
            calibration=calibration,
            accuracy=accuracy,
            error=error,
            dont_know=dont_know,
        )
        _refuse_active_without_predictions(sampling, predictions)
        if predictions is not None:
            out = _plan_with_predictions(
                pairs,
                n,
                predictions,
                score_column,
                pilot,
                target_ci,
                options,
                sampling=sampling,
                cost_per_rating=cost_per_rating,
            )
        else:
            pilot_study = open_study(pilot) if pilot is not None else None
            out = plan_budget(
                svc.load_pairs(pairs), n, target_ci=target_ci, pilot=pilot_study, **options
            )
        emit_json(out) if as_json else _print_plan(out)

    @study.command("stopping")
    def stopping(
        name: str = typer.Argument(..., help="a study created with --target-ci"),
        switch: str = typer.Argument(..., metavar="on|off"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """Turn the sequential stopping of a study on or off. Off serves every withdrawn
        slot again; on stops at once every group already within its target."""
        if switch not in ("on", "off"):
            raise UsageProblem(f"say 'on' or 'off', not '{switch}'")
        out = set_stopping(open_study(name), switch == "on")
        emit_json(out.to_dict()) if as_json else typer.echo(_stopping_line(name, out))

    @study.command("list")
    def list_(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
        """List studies with their scale and progress."""
        rows = svc.list_studies()
        if as_json:
            emit_json([r.to_dict() for r in rows])
            return
        if not rows:
            typer.echo("no studies yet (medsim demo seeds two)")
        for r in rows:
            typer.echo(
                f"{r.study:<30} {r.scale:<16} {r.items:>7} pairs  "
                f"{r.annotators:>3} annotators  {r.rated:>7}/{r.assigned} rated"
            )

    @study.command("export")
    def export(
        name: str = typer.Argument(...),
        out: Path = typer.Option(..., "--out", help="output file; format from the extension"),
    ) -> None:
        """Export current ratings (long format, with rated_at)."""
        frame = svc.export_ratings(open_study(name), out)
        typer.echo(f"wrote {len(frame)} current ratings to {out}")

    @importer.command("ehr-rel")
    def import_ehr(
        file: Path = typer.Argument(..., help="EHR-Rel wide file (e.g. EHR-RelA.tsv)"),
        study_name: str = typer.Option(..., "--study", help="name of the new study"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Import an EHR-Rel wide file as a completed study (0–3 relatedness)."""
        result = svc.import_ehr_rel(file, study_name)
        _print_import(result, study_name, as_json)

    @importer.command("ratings")
    def import_ratings(
        ratings: Path = typer.Argument(..., help="long ratings file"),
        pairs: Path = typer.Option(..., "--pairs"),
        scale: str = typer.Option(..., "--scale"),
        study_name: str = typer.Option(..., "--study"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Import ratings collected elsewhere (e.g. spreadsheets) as a completed study."""
        result = svc.import_ratings(ratings, pairs, scale, study_name)
        _print_import(result, study_name, as_json)

    @app.command("demo")
    def demo(
        as_json: bool = typer.Option(False, "--json"),
        force: bool = typer.Option(False, "--force", help="seed even if studies exist"),
        credentials: Path | None = typer.Option(
            None,
            "--credentials",
            help="also write the demo sign-in details to this file "
            "(mode 600), and print that file when already seeded",
        ),
        server_store: bool = typer.Option(
            False,
            "--server-store",
            help="seed a database server (PostgreSQL) too; by default the demo goes only "
            "into an embedded SQLite store",
        ),
    ) -> None:
        """Seed the demo studies (binary and relatedness) when the database has none."""
        _demo(as_json, force, credentials, server_store)
