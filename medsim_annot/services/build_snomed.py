"""Use case: build the 20 SNOMED CT term-similarity datasets (AAAI 2020) from an RF2 release.

:func:`build_snomed` reads the release (:mod:`medsim_annot.builders.rf2`), applies the rules
of :mod:`medsim_annot.builders.snomed` and writes one pairs file per dataset x difficulty x
negative strategy plus ``statistics.csv``. Everything is checked before anything is written,
and each file is written atomically, so bad input never leaves half a build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from data_schemas.errors import InputError
from data_schemas.options import THRESHOLD
from medsim_annot.builders import snomed
from medsim_annot.builders.rf2 import read_release
from medsim_annot.io import FORMATS, write_table

STATISTICS_FILE = "statistics.csv"


@dataclass
class SnomedBuild:
    """What :func:`build_snomed` wrote: file paths by ``(dataset, difficulty, strategy)``,
    the statistics table (also in ``statistics.csv``) and its path, the release type read,
    and the number of positives without an allowed negative per file (normally all 0)."""

    files: dict[tuple[str, str, str], Path]
    statistics: pd.DataFrame
    statistics_path: Path
    release_type: dict[str, str] = field(default_factory=dict)
    missing_negatives: dict[tuple[str, str, str], int] = field(default_factory=dict)


def file_name(dataset: str, difficulty: str, strategy: str, fmt: str = "tsv") -> str:
    """The name of one output file.

    >>> file_name("syn-syn", "hard", "levenshtein")
    'syn-syn_hard_levenshtein.tsv'
    """
    return f"{dataset}_{difficulty}_{strategy}.{fmt}"


def _check_choice(values: Sequence[str], allowed: Sequence[str], what: str) -> list[str]:
    values = list(dict.fromkeys(v.strip().lower() for v in values if v.strip()))
    if not values:
        raise InputError.single(f"no {what} given; use some of {', '.join(allowed)}")
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise InputError.single(f"unknown {what} '{unknown[0]}'; use some of {', '.join(allowed)}")
    return [v for v in allowed if v in values]  # canonical order


def build_snomed(
    rf2_dir: str | Path,
    out_dir: str | Path,
    threshold: int = 5,
    seed: int = 42,
    strategies: Sequence[str] = snomed.STRATEGIES,
    datasets: Sequence[str] = snomed.DATASETS,
    progress=None,
    *,
    fmt: str = "tsv",
    workers: int = -1,
) -> SnomedBuild:
    """Build the datasets of the release in *rf2_dir* into *out_dir*.

    Parameters
    ----------
    rf2_dir : path
        An RF2 release folder (Snapshot or Full, found by standard file names).
    out_dir : path
        Where the pairs files and ``statistics.csv`` go (created when missing).
    threshold : int
        Largest Levenshtein distance (lower-cased terms) of an *easy* positive.
    seed : int
        Seed of the random choices; the same input and seed give byte-identical files.
    strategies, datasets : sequences of str
        Subsets of ``random, levenshtein`` and of ``fsn-syn, syn-syn,
        possibly-equivalent-to, replaced-by, same-as``.
    progress : callable, optional
        ``progress(description, total)`` -> object with ``update(n)`` and ``close()``.
    fmt : str
        Output format of the pairs files: tsv, csv, jsonl or parquet.

    Raises
    ------
    InputError
        Unknown dataset/strategy/format, negative threshold, or a bad release folder.
    """
    strategies = _check_choice(strategies, snomed.STRATEGIES, "negative strategy")
    datasets = _check_choice(datasets, snomed.DATASETS, "dataset")
    if fmt not in FORMATS:
        raise InputError.single(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    THRESHOLD.check(threshold)
    need_assoc = any(d in snomed.REFSETS for d in datasets)
    release = read_release(rf2_dir, need_associations=need_assoc, progress=progress)
    result = snomed.build_datasets(
        release,
        threshold=int(threshold),
        seed=int(seed),
        strategies=strategies,
        datasets=datasets,
        workers=workers,
        progress=progress,
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[tuple[str, str, str], Path] = {}
    bar = progress("write files", len(result.files) + 1) if progress else None
    for key, frame in result.files.items():
        paths[key] = write_table(frame, out / file_name(*key, fmt=fmt))
        if bar is not None:
            bar.update(1)
    stats_path = write_table(result.statistics, out / STATISTICS_FILE)
    if bar is not None:
        bar.update(1)
        bar.close()
    return SnomedBuild(
        paths, result.statistics, stats_path, release.release_type, result.missing_negatives
    )


def format_statistics(stats: pd.DataFrame) -> str:
    """The statistics table of a build as aligned text (the layout of the paper's Table 2)."""
    return snomed.format_statistics(stats)
