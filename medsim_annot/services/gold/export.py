"""Gold-subset export (:func:`export_gold`): the filtered gold table as a file with a
manifest beside it that makes the export reproducible, or a Hugging Face dataset folder.

The file is a deterministic function of the study's pairs, current ratings and the
options: the same inputs give a byte-identical file. The export time lives only in the
manifest (``FILE.manifest.json``), which also holds the SHA-256 of the file. Every export is
recorded in the event log (:mod:`medsim_annot.services.activity`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

import medsim_annot
from data_schemas import columns as C
from data_schemas.errors import InputError
from data_schemas.gold import (
    AUDIT_LABELS,
    FILTER_ORDER,
    HF_MANIFEST,
    LABEL_SOURCE_COLUMN,
    GoldFilters,
    gold_manifest,
    label_source_counts,
    manifest_path,
)
from data_schemas.options import MAJORITY_RULES
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.interop import hf
from medsim_annot.io import FORMATS, format_of, write_atomic, write_table
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services.activity import record_event
from medsim_annot.services.gold.filters import filter_gold
from medsim_annot.services.gold.snapshot import GoldSnapshot, design_manifest, gold_snapshot
from medsim_annot.services.gold.table import add_model_columns
from medsim_annot.services.quality import QualitySettings
from medsim_annot.services.stored_predictions import manifest_entry
from medsim_annot.services.study_handle import Study
from medsim_annot.stats.aggregate import check_method
from medsim_annot.stats.alpha import alpha_with_interval

# ---- export ------------------------------------------------------------------------------------
HF_LICENSE_DEFAULT = "other"
#: Bootstrap resamples and seed of the Hugging Face card's alpha intervals (fixed, so the card
#: is reproducible).
ALPHA_RESAMPLES = 1000
ALPHA_SEED = 0
#: Above this many pairs the card's intervals are percentile intervals: BCa's jackknife
#: (one alpha per left-out pair) takes most of the export's time on large studies.
ALPHA_BCA_MAX_ITEMS = 5_000


@dataclass(frozen=True)
class HfOptions:
    """Options of the Hugging Face dataset folder (``--format hf``): the licence (hub
    identifier), a seeded train/test split stratified by the group columns, and the test
    share of each group."""

    license: str = HF_LICENSE_DEFAULT
    split: bool = False
    seed: int = 0
    test_size: float = 0.2


@dataclass(frozen=True)
class GoldExport:
    """What :func:`export_gold` wrote: the output *path* (a file, or the hf folder), its
    *format*, the *manifest* exactly as written beside it and *sha256*, the SHA-256 of the
    file (of the folder's ``manifest.json`` for hf; the one recorded in the event log).
    :meth:`to_dict` is the manifest: what ``medsim export gold --json`` prints."""

    path: Path
    format: str
    manifest: dict
    sha256: str

    @property
    def is_folder(self) -> bool:
        """Whether the export is a Hugging Face dataset folder (format ``hf``)."""
        return self.format == "hf"

    @property
    def manifest_path(self) -> Path:
        """Where the manifest was written: ``FILE.manifest.json``, or the folder's
        ``manifest.json``."""
        return self.path / HF_MANIFEST if self.is_folder else manifest_path(self.path)

    @property
    def counts(self) -> dict:
        """The manifest's ``counts`` (``pairs``, ``exported``, ``label_source``, ...)."""
        return self.manifest["counts"]

    @property
    def exported(self) -> int:
        """Pairs in the export (after the filters)."""
        return int(self.counts["exported"])

    @property
    def pairs(self) -> int:
        """Pairs in the study."""
        return int(self.counts["pairs"])

    @property
    def label_sources(self) -> dict[str, int]:
        """Exported pairs per label source (:func:`data_schemas.gold.label_source_counts`)."""
        return self.counts["label_source"]

    @property
    def filter_steps(self) -> list[dict]:
        """Each filter applied, with the pairs before and after it."""
        return self.manifest["filter_steps"]

    def to_dict(self) -> dict:
        return self.manifest


def _filters_of(filters: GoldFilters | None, options: dict) -> GoldFilters:
    if filters is not None and options:
        raise TypeError("give the filters either as GoldFilters or as keywords, not both")
    if filters is not None:
        return filters
    unknown = sorted(
        set(options) - {*FILTER_ORDER, "majority", "exclude_rushed", "rushed_ms", "or_adjudicated"}
    )
    if unknown:
        raise TypeError(f"export_gold() got an unexpected keyword argument '{unknown[0]}'")
    return GoldFilters(**options)


def export_gold(
    study: Study,
    out: str | Path,
    fmt: str | None = None,
    *,
    filters: GoldFilters | None = None,
    aggregate: str = "majority",
    hf: HfOptions | None = None,
    audit_label: str = "majority",
    now: dt.datetime | None = None,
    **filter_options,
) -> GoldExport:
    """Export the gold subset of *study*: a file *out* with ``out.manifest.json`` beside it,
    or (format ``hf``) a Hugging Face dataset folder *out*.

    Parameters
    ----------
    study : Study
        The study (:func:`~medsim_annot.services.study_handle.open_study`); its pairs,
        ratings, decisions and config are read again in one read transaction
        (:func:`~medsim_annot.services.gold.snapshot.gold_snapshot`).
    out : path
        Output file; its format is *fmt* or comes from the extension (csv, tsv, jsonl,
        parquet). With *fmt* ``hf``, the folder to write.
    fmt : str, optional
        csv, tsv, jsonl, parquet or hf.
    filters : GoldFilters, optional
        The filters, applied in the order of :data:`FILTER_ORDER` (see the module docstring),
        and the majority rule. The same can be given as keywords (``min_ratings=2``, ...).
    aggregate : {"majority", "dawid-skene", "mace"}
        ``majority`` (default, the paper-compatible verdict) or a model of the annotators
        (crowd-kit, nominal scales only; :func:`medsim_annot.stats.aggregate.model_gold`),
        which adds the columns ``model_label``, ``model_posterior`` and
        ``model_differs_from_majority`` (the filters still use the majority). File formats
        only: the hf format is refused with a model aggregate.
    hf : HfOptions, optional
        Options of the hf format; a split is refused with a file format.
    audit_label : {"majority", "adjudicated"}
        What the audit flags ``verified`` and ``auto_label_disagrees`` compare the automatic
        label with (:func:`add_provenance`); recorded in the manifest's ``adjudication``.
    now : datetime, optional
        Export time written to a file's manifest (default: the current UTC time). The hf
        folder holds no clock time.

    Returns
    -------
    GoldExport
        The path, format and SHA-256 written, and the manifest
        (:func:`data_schemas.gold.gold_manifest`; :meth:`GoldExport.to_dict`). A file's adds ``file``,
        ``format``, ``aggregate``, ``design`` (:func:`design_manifest`),
        ``krippendorff_alpha_reasons``, ``formula_escaping``, ``exported_at`` and ``sha256``;
        its ``counts`` are ``pairs``, ``rated``, ``exported``, ``annotators``, ``ratings``;
        ``krippendorff_alpha`` is ``study`` (all current ratings) and ``exported`` (the
        ratings of the exported pairs), null with a reason when undefined. The hf folder's
        (:func:`_write_hf`) adds ``format``, ``license``, ``split`` and ``files``.

    Notes
    -----
    CSV/TSV cells starting with ``=``, ``+``, ``-`` or ``@`` are prefixed with ``'``
    (:func:`medsim_annot.io.escape_formula`) against spreadsheet formula injection; numbers
    are written as numbers. Nothing is written when an option is invalid. Every export is
    recorded in the event log.
    """
    chosen = _filters_of(filters, filter_options)
    MAJORITY_RULES.check(chosen.majority)
    AUDIT_LABELS.check(audit_label)
    out = Path(out)
    if fmt == "hf":
        kind = "hf"
        if aggregate != "majority":
            raise UsageProblem(
                t(
                    "aggregation (aggregate) '{aggregate}' applies to the file formats (csv, "
                    "tsv, jsonl, parquet); the hf dataset carries the majority verdict only",
                    aggregate=aggregate,
                )
            )
        if out.exists() and not out.is_dir():
            raise UsageProblem(
                t("output (out) {out} is a file; the hf format writes a folder", out=out)
            )
    else:
        kind = format_of(out, fmt)
        if kind not in FORMATS:
            raise InputError.single(t("unknown format '{format}'", format=kind), file=str(out))
        if hf is not None and hf.split:
            raise UsageProblem(t("a train/test split (split) applies to the hf format (fmt) only"))
    if chosen.exclude_rushed and chosen.rushed_ms is None:
        chosen = replace(chosen, rushed_ms=QualitySettings.of(study.config).rushed_ms)
    snap = gold_snapshot(
        study,
        majority=chosen.majority,
        exclude_rushed_ms=chosen.rushed_ms if chosen.exclude_rushed else None,
    )
    if kind == "hf":
        manifest, digest, n_kept = _write_hf(snap, out, chosen, hf or HfOptions(), audit_label)
    else:
        manifest = _write_file(snap, out, kind, chosen, aggregate, now, audit_label)
        digest, n_kept = manifest["sha256"], manifest["counts"]["exported"]
    record_event(
        "gold_exported",
        study=study,
        detail={"file": out.name, "format": kind, "pairs": n_kept, "sha256": digest},
    )
    return GoldExport(path=out, format=kind, manifest=manifest, sha256=digest)


def predictions_entry(snap: GoldSnapshot) -> dict:
    """The manifest's ``predictions`` (every version stored with the study: name, version,
    score column, source file, SHA-256, pairs, when), only when the study has any: the
    manifest of a study without predictions keeps its bytes."""
    listed = manifest_entry(snap.study)
    return {"predictions": listed} if listed else {}


def _write_file(
    snap: GoldSnapshot,
    out: Path,
    kind: str,
    filters: GoldFilters,
    aggregate: str,
    now: dt.datetime | None,
    audit_label: str = "majority",
) -> dict:
    """Write the file and its manifest; returns the manifest."""
    gt = snap.gt
    scale = gt.scale
    check_method(aggregate, scale.level)
    differs = None
    if aggregate != "majority":
        differs = add_model_columns(gt, aggregate)
    adjudication = snap.provenance(audit_label)
    kept, steps = filter_gold(gt, filters)
    write_table(kept, out, kind)
    digest = sha256_file(out)
    alpha_all, why_all = _alpha(gt.ratings, scale)
    sub = gt.ratings[gt.ratings[C.PAIR_ID].isin(set(kept[C.PAIR_ID].astype(str)))]
    alpha_sub, why_sub = _alpha(sub, scale)
    when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    manifest = gold_manifest(
        study=snap.study.name,
        scale=scale,
        filters=filters.manifest(),
        filter_steps=steps,
        counts={
            "pairs": int(len(gt.table)),
            "rated": int((gt.table["n_ratings"] > 0).sum()),
            "exported": int(len(kept)),
            "annotators": len(gt.annotators),
            "ratings": int(len(gt.ratings)),
            **({"rushed_excluded": gt.rushed_excluded} if filters.exclude_rushed else {}),
            **({"model_differs_from_majority": differs} if differs is not None else {}),
            "label_source": label_source_counts(kept[LABEL_SOURCE_COLUMN]),
        },
        alpha={"study": alpha_all, "exported": alpha_sub},
        ratings_version=snap.version,
        columns=[str(c) for c in kept.columns],
        software_version=medsim_annot.__version__,
        after={
            "scale": {"file": out.name, "format": kind, "guideline": snap.guideline},
            "filters": {
                "aggregate": aggregate,
                "design": design_manifest(snap.study.config, kept),
            },
            "ratings_version": {"adjudication": adjudication, **predictions_entry(snap)},
            "krippendorff_alpha": {
                "krippendorff_alpha_reasons": {
                    k: v for k, v in (("study", why_all), ("exported", why_sub)) if v
                }
            },
            "columns": {"formula_escaping": kind in ("csv", "tsv")},
            "software_version": {
                "exported_at": when.isoformat().replace("+00:00", "Z"),
                "sha256": digest,
            },
        },
    )
    write_atomic(manifest_path(out), json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def _card_alpha(ratings: pd.DataFrame, scale: Scale) -> dict:
    return alpha_with_interval(
        ratings,
        scale,
        n_resamples=ALPHA_RESAMPLES,
        seed=ALPHA_SEED,
        bca_max_items=ALPHA_BCA_MAX_ITEMS,
    )


def _last_rated(ratings: pd.DataFrame) -> str | None:
    if ratings.empty or C.RATED_AT not in ratings.columns:
        return None
    latest = pd.to_datetime(ratings[C.RATED_AT], utc=True).max()
    return None if pd.isna(latest) else latest.date().isoformat()


def _write_hf(
    snap: GoldSnapshot,
    out: Path,
    filters: GoldFilters,
    options: HfOptions,
    audit_label: str = "majority",
) -> tuple[dict, str, int]:
    """Write the Hugging Face dataset folder (:mod:`medsim_annot.interop.hf`): Parquet data
    (one ``train`` split, or ``train`` and ``test`` stratified by the group columns with the
    seed), ``README.md``, ``croissant.json`` and ``manifest.json`` (SHA-256 of every file).
    No clock time is written: exporting the same ratings again gives byte-identical files.
    Returns the manifest, the SHA-256 of ``manifest.json`` and the number of pairs."""
    gt = snap.gt
    scale = gt.scale
    adjudication = snap.provenance(audit_label)
    kept, steps = filter_gold(gt, filters)
    sources = label_source_counts(kept[LABEL_SOURCE_COLUMN])
    kept = hf.typed(kept)
    by = [c for c in C.GROUP_COLUMNS if c in kept.columns]
    splits = (
        hf.split_frame(kept, seed=options.seed, test_size=options.test_size, by=by)
        if options.split
        else {"train": kept}
    )
    sub = gt.ratings[gt.ratings[C.PAIR_ID].isin(set(kept[C.PAIR_ID].astype(str)))]
    alpha_study = _card_alpha(gt.ratings, scale)
    # The bootstrap is most of the export's time: no need to run it twice on the same ratings.
    alpha_exported = alpha_study if len(sub) == len(gt.ratings) else _card_alpha(sub, scale)
    facts = hf.CardFacts(
        study=snap.study.name,
        scale=scale,
        license=options.license,
        n_pairs=len(gt.table),
        n_rated=int((gt.table["n_ratings"] > 0).sum()),
        annotators=gt.annotators,
        n_ratings=len(gt.ratings),
        design=snap.study.config,
        alpha={"study": alpha_study, "exported": alpha_exported},
        filter_steps=steps,
        filters={"majority_rule": filters.majority},
        splits={name: len(frame) for name, frame in splits.items()},
        split_seed=options.seed if options.split else None,
        stratified_by=by if options.split else [],
        groups=hf.group_counts(kept),
        columns=[(str(c), hf.column_kind(kept[c])) for c in kept.columns],
        last_rated=_last_rated(gt.ratings),
        label_sources=sources,
        audit_label=audit_label,
    )
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, frame in splits.items():
        path = out / hf.data_path(name)
        write_table(frame, path, "parquet")
        files[hf.data_path(name)] = sha256_file(path)
    card = hf.dataset_card(facts)
    meta = hf.croissant(facts, files)
    for name, text in (("README.md", card), ("croissant.json", hf.dumps(meta))):
        data = text.encode("utf-8")
        write_atomic(out / name, data)
        files[name] = hashlib.sha256(data).hexdigest()
    manifest = gold_manifest(
        study=snap.study.name,
        scale=scale,
        filters=filters.manifest(),
        filter_steps=steps,
        counts={
            "pairs": len(gt.table),
            "rated": facts.n_rated,
            "exported": len(kept),
            "annotators": len(gt.annotators),
            "ratings": len(gt.ratings),
            **({"rushed_excluded": gt.rushed_excluded} if filters.exclude_rushed else {}),
            **{f"split_{k}": v for k, v in facts.splits.items()},
            "label_source": sources,
        },
        alpha=facts.alpha,
        ratings_version=snap.version,
        columns=[c for c, _ in facts.columns],
        software_version=medsim_annot.__version__,
        after={
            "study": {"format": "hf", "license": options.license},
            "scale": {"guideline": snap.guideline},
            "ratings_version": {"adjudication": adjudication, **predictions_entry(snap)},
            "filter_steps": {
                "split": {"seed": options.seed, "test_size": options.test_size, "stratified_by": by}
                if options.split
                else None
            },
            "software_version": {"files": [{"path": p, "sha256": files[p]} for p in sorted(files)]},
        },
    )
    text = hf.dumps(manifest)
    write_atomic(out / HF_MANIFEST, text)
    return manifest, hashlib.sha256(text.encode("utf-8")).hexdigest(), len(kept)


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _alpha(ratings: pd.DataFrame, scale: Scale) -> tuple[float | None, str | None]:
    if ratings.empty:
        return None, "no ratings"
    rep = agreement_svc.agreement_report(ratings, scale)
    value = float(rep.krippendorff_alpha)
    if np.isnan(value):
        return None, rep.reasons.get("krippendorff_alpha", "undefined")
    return value, None
