"""``medsim export gold`` (the reproducible gold subset) and ``medsim report`` (the study's
QA report as one self-contained HTML file)."""

from __future__ import annotations

from pathlib import Path

import typer

from data_schemas.gold import AUDIT_LABELS, GoldFilters
from medsim_annot.commands._common import choice, emit_json, get_group
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import LANGUAGES, normalise
from medsim_annot.io import write_atomic
from medsim_annot.services.dashboard import html_report
from medsim_annot.services.gold.export import HfOptions, export_gold
from medsim_annot.services.study_handle import open_study


def register(app: typer.Typer) -> None:
    export = get_group(app, "export", "Export data: the verified gold subset with a manifest.")

    @export.command("gold")
    def export_gold_cmd(
        study: str = typer.Argument(..., help="Study name."),
        out: Path = typer.Option(
            ..., "--out", help="Output file (.csv, .tsv, .jsonl, .parquet), or folder for hf."
        ),
        fmt: str | None = typer.Option(
            None,
            "--format",
            help="csv|tsv|jsonl|parquet (default: from --out), or hf: a Hugging Face "
            "dataset folder (Parquet, README.md card, croissant.json, manifest.json).",
        ),
        license_: str = typer.Option(
            "other", "--license", help="hf: the dataset's licence (hub identifier, e.g. cc-by-4.0)."
        ),
        split: str | None = typer.Option(
            None, "--split", metavar="train/test", help="hf: a seeded train/test split by group."
        ),
        seed: int = typer.Option(0, "--seed", help="hf: seed of the train/test split."),
        test_size: float = typer.Option(
            0.2, "--test-size", help="hf: share of each group's pairs in the test split."
        ),
        require_majority: bool = typer.Option(
            False, "--require-majority", help="Keep pairs with a majority verdict."
        ),
        or_adjudicated: bool = typer.Option(
            False,
            "--or-adjudicated",
            help="With --require-majority: also keep the pairs an adjudicator decided "
            "(a majority or an adjudicated label).",
        ),
        exclude_unclear: bool = typer.Option(
            False, "--exclude-unclear", help="Drop pairs any annotator flagged unclear."
        ),
        exclude_all_different: bool = typer.Option(
            False, "--exclude-all-different", help="Drop pairs whose ratings all differ."
        ),
        only_verified: bool = typer.Option(
            False, "--only-verified", help="Keep pairs whose majority equals the automatic label."
        ),
        min_ratings: int | None = typer.Option(
            None, "--min-ratings", metavar="K", help="Keep pairs with at least K ratings."
        ),
        exclude_rushed: bool = typer.Option(
            False,
            "--exclude-rushed",
            help="Leave out ratings made faster than the study's rushed threshold "
            "(`medsim study checks`) before the verdicts are formed.",
        ),
        aggregate: str = typer.Option(
            "majority",
            "--aggregate",
            help="majority (default) | dawid-skene | mace: add a model's label and posterior "
            "(crowd-kit; nominal scales; file formats only, refused with hf).",
        ),
        audit_label: str = typer.Option(
            "majority",
            "--audit-label",
            **choice(AUDIT_LABELS),
            help="What verified/auto_label_disagrees compare the automatic label with: "
            + AUDIT_LABELS.describe(),
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
    ) -> None:
        """One row per pair (every annotator's rating, verdict, flags) plus FILE.manifest.json.

        Filters run in a fixed order: min-ratings, exclude-unclear, require-majority,
        exclude-all-different, only-verified. Same inputs give a byte-identical file.
        """
        if split not in (None, "train/test"):
            raise UsageProblem(f"--split takes train/test, not '{split}'")
        result = export_gold(
            open_study(study),
            out,
            fmt,
            filters=GoldFilters(
                min_ratings=min_ratings,
                exclude_unclear=exclude_unclear,
                require_majority=require_majority,
                exclude_all_different=exclude_all_different,
                only_verified=only_verified,
                exclude_rushed=exclude_rushed,
                or_adjudicated=or_adjudicated,
            ),
            aggregate=aggregate,
            audit_label=audit_label,
            hf=HfOptions(license=license_, split=split is not None, seed=seed, test_size=test_size),
        )
        if as_json:
            emit_json(result.to_dict())
            return
        manifest, c = result.manifest, result.counts
        if result.is_folder:  # a dataset folder: its files and their hashes
            parts = ", ".join(f"{k[6:]} {v}" for k, v in c.items() if k.startswith("split_"))
            typer.echo(f"wrote {out}/: {c['exported']} of {c['pairs']} pairs ({parts})")
        else:
            typer.echo(
                f"wrote {out}: {c['exported']} of {c['pairs']} pairs "
                f"({result.format}, sha256 {result.sha256[:12]}…)"
            )
        if "model_differs_from_majority" in c:
            typer.echo(
                f"  {manifest['aggregate']}: labels {c['model_differs_from_majority']} pairs "
                "differently from the majority"
            )
        if "rushed_excluded" in c:
            typer.echo(
                f"  exclude_rushed: {c['rushed_excluded']} ratings faster than "
                f"{manifest['filters']['rushed_ms']} ms left out"
            )
        for step in result.filter_steps:
            typer.echo(f"  {step['filter']}: {step['before']} -> {step['after']}")
        sources = ", ".join(f"{k} {v}" for k, v in result.label_sources.items() if v)
        typer.echo(f"  label sources: {sources or 'none'}")
        if result.is_folder:
            for f in manifest["files"]:
                typer.echo(f"  {f['path']}  sha256 {f['sha256'][:12]}…")
        else:
            typer.echo(f"manifest: {result.manifest_path}")

    @app.command("report")
    def report_cmd(
        study: str = typer.Argument(..., help="Study name."),
        out: Path = typer.Option(..., "--out", help="Output HTML file."),
        bootstrap: int = typer.Option(
            0, "--bootstrap", metavar="N", help="Bootstrap resamples for confidence intervals."
        ),
        lang: str = typer.Option(
            "en",
            "--lang",
            help="Language of the report: en, de or es (this command's own lines stay English).",
        ),
    ) -> None:
        """The study's QA report (tables and charts) as one self-contained HTML file."""
        if normalise(lang) not in LANGUAGES:
            raise UsageProblem(f"--lang takes {', '.join(LANGUAGES)}, not '{lang}'")
        html = html_report(open_study(study), bootstrap=bootstrap, lang=normalise(lang))
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, html)
        typer.echo(f"wrote {out} ({len(html.encode('utf-8')) // 1024} KiB)")
