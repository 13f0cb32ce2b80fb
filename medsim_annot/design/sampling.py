"""Stratified random sample of pairs: P positives and N negatives per group."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem
from data_schemas.options import SAMPLE_PER_GROUP
from medsim_annot.i18n import t


@dataclass
class SampleResult:
    """The sampled pairs (file order kept), warnings for short groups, and the parameters to
    store with the study (``config``) so the sample can be drawn again."""

    pairs: pd.DataFrame
    counts: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)


def stratified_sample(
    pairs: pd.DataFrame,
    positives: int = 30,
    negatives: int = 30,
    group_by: list[str] | tuple[str, ...] = C.GROUP_COLUMNS,
    seed: int = 0,
    *,
    allow_fewer: bool = False,
    file: str | None = None,
) -> SampleResult:
    """Draw *positives* pairs with ``auto_label`` 1 and *negatives* with ``auto_label`` 0 from
    every group (the distinct value combinations of *group_by*), without replacement.

    Parameters
    ----------
    pairs : DataFrame
        A validated pairs frame (``auto_label`` as 0/1, group columns as strings).
    positives, negatives : int
        P and N per group (Schulz et al. 2020 drew 30 + 30 per dataset).
    group_by : sequence of str
        Group columns; columns the frame lacks are an error. An empty sequence means one group.
    seed : int
        Seed of the random generator (``numpy.random.default_rng``); the same seed and frame
        give the same sample. Each group draws from its own generator seeded with
        ``(seed, group index in sorted order)``, so adding a group does not change the others.
    allow_fewer : bool
        Policy for a group with fewer than P positives or N negatives. ``False`` (default):
        raise :class:`InputError` listing every short group, so a study never silently ends up
        unbalanced. ``True``: take all the group has and list a warning per short group.

    Returns
    -------
    SampleResult
        ``pairs`` in their original order, ``counts`` (one row per group: available and taken
        positives and negatives), ``warnings`` and ``config``.

    Examples
    --------
    >>> df = pd.DataFrame({"pair_id": [f"p{i}" for i in range(8)], "term_1": list("abcdefgh"),
    ...                    "term_2": list("ijklmnop"), "auto_label": [1, 0] * 4,
    ...                    "dataset": ["A"] * 4 + ["B"] * 4})
    >>> res = stratified_sample(df, 1, 1, ["dataset"], seed=7)
    >>> res.pairs.groupby("dataset").size().tolist()
    [2, 2]
    """
    SAMPLE_PER_GROUP.check(positives)
    SAMPLE_PER_GROUP.check(negatives)
    group_by = list(group_by)
    missing = [c for c in group_by if c not in pairs.columns]
    if C.AUTO_LABEL not in pairs.columns:
        missing.insert(0, C.AUTO_LABEL)
    if missing:
        raise InputError(
            [
                Problem(t("column needed for stratified sampling is missing"), column=c)
                for c in missing
            ],
            file,
        )
    labels = pd.to_numeric(pairs[C.AUTO_LABEL], errors="coerce")
    keys = pairs[group_by].astype(str) if group_by else pd.DataFrame(index=pairs.index)
    key_tuples = (
        [tuple(r) for r in keys.itertuples(index=False, name=None)]
        if group_by
        else [()] * len(pairs)
    )
    groups = sorted(set(key_tuples))
    members: dict[tuple, list[int]] = {}
    for pos, k in enumerate(key_tuples):
        members.setdefault(k, []).append(pos)
    label_arr = labels.to_numpy(dtype=float, na_value=np.nan)
    taken: list[np.ndarray] = []
    rows, warnings, problems = [], [], []
    for gi, g in enumerate(groups):
        in_group = np.asarray(members[g], dtype=int)
        rng = np.random.default_rng([int(seed), gi])
        rec = dict(zip(group_by, g))
        for label, want, name in ((1, positives, "positives"), (0, negatives, "negatives")):
            pool = in_group[label_arr[in_group] == label]
            n = min(want, len(pool))
            if len(pool) < want:
                where = ", ".join(f"{c}={v!r}" for c, v in rec.items()) or t("all pairs")
                msg = (
                    t(
                        "group {group} has {n} positives (auto_label={label}), {wanted} wanted",
                        group=where,
                        n=len(pool),
                        label=label,
                        wanted=want,
                    )
                    if name == "positives"
                    else t(
                        "group {group} has {n} negatives (auto_label={label}), {wanted} wanted",
                        group=where,
                        n=len(pool),
                        label=label,
                        wanted=want,
                    )
                )
                if allow_fewer:
                    warnings.append(msg + t("; took all {n}", n=len(pool)))
                else:
                    problems.append(Problem(msg))
            taken.append(np.sort(rng.choice(pool, size=n, replace=False)) if n else pool[:0])
            rec[f"{name}_available"] = len(pool)
            rec[f"{name}_taken"] = n
        rows.append(rec)
    if problems:
        raise InputError(problems, file)
    idx = np.sort(np.concatenate(taken)) if taken else np.array([], dtype=int)
    sample = pairs.iloc[idx].reset_index(drop=True)
    counts = pd.DataFrame(
        rows,
        columns=[
            *group_by,
            "positives_available",
            "positives_taken",
            "negatives_available",
            "negatives_taken",
        ],
    )
    config = {
        "sampling": "stratified",
        "positives": int(positives),
        "negatives": int(negatives),
        "group_by": group_by,
        "seed": int(seed),
        "allow_fewer": bool(allow_fewer),
        "pairs_in_file": int(len(pairs)),
        "pairs_sampled": int(len(sample)),
    }
    return SampleResult(sample, counts, warnings, config)
