"""Use cases of :mod:`medsim_annot.interop`: import another tool's export as a completed
study, and publish a study's gold subset as a Hugging Face dataset folder.

Imports go through the same contracts and the same completed-study import as
``medsim import ratings``: one transaction, nothing written when any row is bad.
"""

from __future__ import annotations

from pathlib import Path

from data_schemas import columns as C
from data_schemas.scales import Scale, load_scale
from medsim_annot.interop import load_mapping, read_export
from medsim_annot.interop.hf import zip_folder  # noqa: F401  (the Export page's download)
from medsim_annot.services import studies as studies_svc
from medsim_annot.storage import Engine


def import_from_tool(
    tool: str,
    path: str | Path,
    scale: str | Scale,
    study: str,
    *,
    term_fields: tuple[str, str] | None = None,
    mapping: str | Path | None = None,
    engine: Engine | None = None,
) -> dict:
    """Import *tool*'s export (``labelstudio``, ``prodigy``, ``argilla``) as study *study*.

    Returns what the CLI prints: ``study``, ``tool``, ``file``, ``term_fields``, ``tasks``
    (tasks or records read), ``items`` (pairs stored), ``annotators`` (names), ``ratings``,
    ``skipped`` (reason → count), ``mapped`` (each distinct answer → scale value, with its
    count). Raises :class:`~data_schemas.errors.InputError` naming file, row and field for
    input that cannot be mapped; nothing is written then.
    """
    sc = scale if isinstance(scale, Scale) else load_scale(scale)
    mp = load_mapping(mapping)
    parsed, matcher = read_export(tool, path, sc, term_fields=term_fields, mapping=mp)
    pairs, ratings = parsed.validated(sc)
    config = {
        "imported_from": Path(path).name,
        "format": tool,
        "term_fields": list(parsed.term_fields or ()),
    }
    if mapping is not None:
        config["mapping_file"] = Path(mapping).name
    result = studies_svc.import_completed(study, pairs, ratings, sc, config, engine=engine)
    return {
        "study": study,
        "tool": parsed.tool,
        "file": parsed.file,
        "term_fields": list(parsed.term_fields or ()),
        "tasks": parsed.n_tasks,
        "items": result["items"],
        "annotators": [a["name"] for a in result["annotators"]],
        "ratings": result["ratings"],
        "skipped": parsed.skipped_counts(),
        "mapped": [
            {"answer": answer, "value": value, "count": n}
            for (answer, value), n in sorted(matcher.used.items())
        ],
        "columns": [c for c in pairs.columns if c not in (C.PAIR_ID, C.TERM_1, C.TERM_2)],
    }


# --------------------------------------------------------------------------- HF export
HF_LICENSE_DEFAULT = "other"
ALPHA_RESAMPLES = 1000
ALPHA_SEED = 0
#: Above this many pairs the card's intervals are percentile intervals: BCa's jackknife
#: (one alpha per left-out pair) takes most of the export's time on large studies.
ALPHA_BCA_MAX_ITEMS = 5_000


def _alpha_with_interval(ratings, scale: Scale) -> dict:
    """Krippendorff's alpha of *ratings* (the statistics' frame) with a 95% bootstrap interval
    over pairs (fixed seed, so the card is reproducible; BCa up to
    :data:`ALPHA_BCA_MAX_ITEMS` pairs, percentile above)."""
    import numpy as np

    from medsim_annot.stats import bootstrap_ci, krippendorff_alpha
    from medsim_annot.stats._frame import encode
    from medsim_annot.stats.alpha import alpha_from_coincidence, unit_coincidences

    if ratings.empty:
        return {"value": None, "reason": "no ratings"}
    est = krippendorff_alpha(ratings, scale)
    value = float(est.value)
    if np.isnan(value):
        return {"value": None, "reason": est.reason or "undefined"}
    enc = encode(ratings)
    values = enc.values
    v = len(values)
    o_unit = unit_coincidences(enc.counts()).reshape(len(enc.items), -1)
    ci = bootstrap_ci(
        o_unit,
        lambda t: alpha_from_coincidence(t.reshape(-1, v, v), values, scale.level),
        n_resamples=ALPHA_RESAMPLES,
        seed=ALPHA_SEED,
        method="BCa" if len(enc.items) <= ALPHA_BCA_MAX_ITEMS else "percentile",
    )
    out = {"value": value, "low": None, "high": None, "method": ci.method}
    if np.isfinite(ci.low) and np.isfinite(ci.high):
        out["low"], out["high"] = float(ci.low), float(ci.high)
    else:
        out["interval_reason"] = ci.reason or "the bootstrap distribution is degenerate"
    return out


def _last_rated(ratings) -> str | None:
    import pandas as pd

    if ratings.empty or C.RATED_AT not in ratings.columns:
        return None
    latest = pd.to_datetime(ratings[C.RATED_AT], utc=True).max()
    return None if pd.isna(latest) else latest.date().isoformat()


def export_gold_hf(
    study: str,
    out: str | Path,
    *,
    license: str = HF_LICENSE_DEFAULT,
    split: bool = False,
    seed: int = 0,
    test_size: float = 0.2,
    require_majority: bool = False,
    exclude_unclear: bool = False,
    exclude_all_different: bool = False,
    only_verified: bool = False,
    min_ratings: int | None = None,
    majority: str = "strict",
    engine: Engine | None = None,
) -> dict:
    """Write *study*'s gold subset as a Hugging Face dataset folder *out*
    (:mod:`medsim_annot.interop.hf`): Parquet data (one ``train`` split, or ``train`` and
    ``test`` stratified by the group columns with *seed*), ``README.md``, ``croissant.json``
    and ``manifest.json`` (SHA-256 of every file). The filters are those of
    :func:`medsim_annot.services.gold.export_gold`, in the same order. No clock time is
    written: exporting the same ratings again gives byte-identical files. Returns the
    manifest."""
    import hashlib

    import medsim_annot
    from medsim_annot.interop import hf
    from medsim_annot.io import write_table
    from medsim_annot.services import gold as gold_svc

    out = Path(out)
    if out.exists() and not out.is_dir():
        from medsim_annot.errors import UsageProblem

        raise UsageProblem(f"--out {out} is a file; the hf format writes a folder")
    info = studies_svc.get_study(study, engine=engine)
    gt = gold_svc.study_gold_table(study, majority=majority, engine=engine)
    scale = gt.scale
    kept, steps = gold_svc.filter_gold(
        gt,
        require_majority=require_majority,
        exclude_unclear=exclude_unclear,
        exclude_all_different=exclude_all_different,
        only_verified=only_verified,
        min_ratings=min_ratings,
    )
    kept = hf.typed(kept)
    by = [c for c in C.GROUP_COLUMNS if c in kept.columns]
    splits = (
        hf.split_frame(kept, seed=seed, test_size=test_size, by=by) if split else {"train": kept}
    )
    sub = gt.ratings[gt.ratings[C.PAIR_ID].isin(set(kept[C.PAIR_ID].astype(str)))]
    alpha_study = _alpha_with_interval(gt.ratings, scale)
    # The bootstrap is most of the export's time: no need to run it twice on the same ratings.
    alpha_exported = (
        alpha_study if len(sub) == len(gt.ratings) else _alpha_with_interval(sub, scale)
    )
    facts = hf.CardFacts(
        study=study,
        scale=scale,
        license=license,
        n_pairs=len(gt.table),
        n_rated=int((gt.table["n_ratings"] > 0).sum()),
        annotators=gt.annotators,
        n_ratings=len(gt.ratings),
        design=info.config,
        alpha={"study": alpha_study, "exported": alpha_exported},
        filter_steps=steps,
        filters={"majority_rule": majority},
        splits={name: len(frame) for name, frame in splits.items()},
        split_seed=seed if split else None,
        stratified_by=by if split else [],
        groups=hf.group_counts(kept),
        columns=[(str(c), hf.column_kind(kept[c])) for c in kept.columns],
        last_rated=_last_rated(gt.ratings),
    )
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for name, frame in splits.items():
        path = out / hf.data_path(name)
        write_table(frame, path, "parquet")
        files[hf.data_path(name)] = gold_svc.sha256_file(path)
    card = hf.dataset_card(facts)
    meta = hf.croissant(facts, files)
    for name, text in (("README.md", card), ("croissant.json", hf.dumps(meta))):
        data = text.encode("utf-8")
        tmp = out / (name + ".part")
        tmp.write_bytes(data)
        tmp.replace(out / name)
        files[name] = hashlib.sha256(data).hexdigest()
    version = studies_svc.ratings_version(study, engine=engine)
    manifest = {
        "study": study,
        "format": "hf",
        "license": license,
        "scale": gold_svc.manifest_scale(scale),
        "filters": gold_svc.manifest_filters(
            min_ratings=min_ratings,
            exclude_unclear=exclude_unclear,
            require_majority=require_majority,
            exclude_all_different=exclude_all_different,
            only_verified=only_verified,
            majority=majority,
        ),
        "filter_steps": steps,
        "split": {"seed": seed, "test_size": test_size, "stratified_by": by} if split else None,
        "counts": {
            "pairs": len(gt.table),
            "rated": facts.n_rated,
            "exported": len(kept),
            "annotators": len(gt.annotators),
            "ratings": len(gt.ratings),
            **{f"split_{k}": v for k, v in facts.splits.items()},
        },
        "krippendorff_alpha": facts.alpha,
        "ratings_version": {"count": version[0], "max_rating_id": version[1]},
        "columns": [c for c, _ in facts.columns],
        "software": "medsim-annot",
        "software_version": medsim_annot.__version__,
        "files": [{"path": p, "sha256": files[p]} for p in sorted(files)],
    }
    tmp = out / "manifest.json.part"
    tmp.write_text(hf.dumps(manifest), encoding="utf-8")
    tmp.replace(out / "manifest.json")
    return manifest
