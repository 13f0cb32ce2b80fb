"""Audit of automatic labels against the doctors' majority vote, per group: the shape of
Table 3 of Schulz & Juric (AAAI 2020). Everything is a ``bincount`` over item arrays, so a
million items take well under a second."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.pairs import group_columns
from data_schemas.scales import Scale
from medsim_annot.i18n import t

from ._frame import encode, group_index
from .alpha import alpha_from_coincidence, alpha_statistic, unit_coincidences
from .bootstrap import ConfidenceInterval, bootstrap_ci
from .majority import Rule, majority_from_counts

METRICS = (
    "n_items",
    "nan_fraction",
    "krippendorff_alpha",
    "accuracy",
    "precision",
    "recall",
    "f1",
    "tp",
    "fp",
    "fn",
    "tn",
)
CI_METRICS = ("krippendorff_alpha", "accuracy", "precision", "recall")


@dataclass
class AuditResult:
    """``overall`` (dict of :data:`METRICS`), ``by_group`` (a frame: the group columns then
    the metrics, plus ``<metric>_ci`` pairs when bootstrapped), ``by`` (group columns),
    ``reasons`` (why a figure is NaN) and the per-item ``items`` frame (majority, truth)."""

    overall: dict
    by_group: pd.DataFrame
    by: list[str]
    items: pd.DataFrame
    reasons: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: ``{"overall": {...}, "by_group": [{...}, ...]}``."""
        return {
            "overall": dict(self.overall),
            "by_group": [dict(r) for r in self.by_group.to_dict(orient="records")],
        }


def confusion_scores(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Accuracy, precision, recall and F1 from confusion counts (arrays broadcast); a ratio
    whose denominator is 0 is NaN (``zero_division`` policy: undefined, not 0).

    Notes
    -----
    "similar" (auto_label 1) is the positive class:
    :math:`acc = \\frac{tp+tn}{tp+fp+fn+tn}`, :math:`prec = \\frac{tp}{tp+fp}`,
    :math:`rec = \\frac{tp}{tp+fn}`, :math:`F_1 = \\frac{2\\,prec\\,rec}{prec+rec}`.

    Examples
    --------
    >>> s = confusion_scores(30, 3, 0, 27)
    >>> [round(float(s[k]), 3) for k in ("accuracy", "precision", "recall", "f1")]
    [0.95, 0.909, 1.0, 0.952]
    """
    tp, fp, fn, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    with np.errstate(invalid="ignore", divide="ignore"):
        total = tp + fp + fn + tn
        acc = np.where(total > 0, (tp + tn) / total, np.nan)
        prec = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
        rec = np.where(tp + fn > 0, tp / (tp + fn), np.nan)
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), np.nan)
    return {"accuracy": acc, "precision": prec, "recall": rec, "f1": f1}


def audit_labels(
    pairs: pd.DataFrame,
    ratings: pd.DataFrame,
    scale: Scale,
    *,
    by: list[str] | None = None,
    rule: Rule = "strict",
    bootstrap: int = 0,
    confidence: float = 0.95,
    seed=None,
) -> AuditResult:
    """Audit the automatic labels (``auto_label``) of *pairs* against the majority vote.

    Parameters
    ----------
    pairs : DataFrame
        Validated pairs (``pair_id``, ``auto_label`` 0/1 or missing, group columns).
    ratings : DataFrame
        Ratings frame (``pair_id``, ``annotator``, ``value``; NaN = no decision).
    scale : Scale
        Needs ``positive`` and ``negative`` values (the binary scale: same = 1 = similar).
    by : list of str, optional
        Group columns; default every one of ``dataset``, ``difficulty``,
        ``negative_strategy`` present in *pairs*. Each combination present is a group.
    rule : {"strict", "decisive"}
        Majority rule (see :func:`medsim_annot.stats.majority_vote`).
    bootstrap : int
        Number of bootstrap resamples of items for ``*_ci`` intervals (0 = none).
    confidence, seed :
        Interval level and random seed of the bootstrap.

    Returns
    -------
    AuditResult
        Per group and overall: ``n_items`` (pairs with at least one rating),
        ``nan_fraction`` (share of those with no majority), ``krippendorff_alpha`` (at the
        scale's level), ``accuracy``, ``precision``, ``recall``, ``f1`` and ``tp``, ``fp``,
        ``fn``, ``tn`` over the pairs with both a majority and an auto_label.

    Notes
    -----
    "similar" (auto_label 1, the scale's ``positive`` value) is the positive class; a
    recall of 1.00 means no pair the doctors call similar was labelled negative. See
    :func:`confusion_scores` for the formulas and :func:`krippendorff_alpha` for alpha.

    References
    ----------
    Schulz, C., & Juric, D. (2020). Can Embeddings Adequately Represent Medical Terminology?
    AAAI 2020, section 3.3 and Table 3. https://doi.org/10.1609/aaai.v34i05.6404

    Examples
    --------
    >>> import pandas as pd
    >>> from data_schemas.scales import BINARY
    >>> pairs = pd.DataFrame({"pair_id": ["a", "b", "c"], "auto_label": [1, 0, 0]})
    >>> r = pd.DataFrame({"pair_id": list("aaabbbccc"), "annotator": list("XYZ") * 3,
    ...                   "value": [1, 1, 1, 0, 0, 1, 1, 1, float("nan")]})
    >>> res = audit_labels(pairs, r, BINARY)
    >>> {k: res.overall[k] for k in ("n_items", "tp", "fp", "fn", "tn")}
    {'n_items': 3, 'tp': 1, 'fp': 0, 'fn': 1, 'tn': 1}
    """
    if not scale.has_polarity:
        raise ValueError(
            f"the audit needs a scale with positive and negative values; "
            f"the {scale.name} scale has none"
        )
    pos, neg = scale.code(scale.positive), scale.code(scale.negative)
    domain = sorted(
        {o.code for o in scale.options if o.code is not None and not scale.is_no_decision(o.value)}
    )
    by = list(group_columns(pairs)) if by is None else list(by)
    reasons: dict[str, str] = {}
    ids = pairs[C.PAIR_ID]
    items = pd.Index(ids if pd.api.types.is_string_dtype(ids) else ids.astype(str))
    enc = encode(ratings, items=items, values=domain)
    counts = enc.counts()
    n_cast = np.bincount(enc.item, minlength=len(items)).astype(np.float64)
    major = majority_from_counts(counts, n_cast, enc.values, rule)
    truth = np.where(major == pos, 1.0, np.where(major == neg, 0.0, np.nan))
    if C.AUTO_LABEL in pairs.columns:
        label = pd.to_numeric(pairs[C.AUTO_LABEL], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    else:
        label = np.full(len(items), np.nan)
        reasons["accuracy"] = "the pairs have no auto_label column"
    rated = n_cast > 0
    scored = rated & ~np.isnan(truth) & ~np.isnan(label)
    cell = np.where(scored, np.nan_to_num(truth) * 2 + np.nan_to_num(label), -1).astype(np.int64)
    # cell: 3 = tp (truth 1, label 1), 2 = fn, 1 = fp, 0 = tn
    group, keys = group_index(pairs, by)
    g = len(keys)

    def tally(gr: np.ndarray, n: int) -> dict[str, np.ndarray]:
        out = {
            "n_items": np.bincount(gr[rated], minlength=n),
            "n_nan": np.bincount(gr[rated & np.isnan(truth)], minlength=n),
        }
        for name, c in (("tp", 3), ("fn", 2), ("fp", 1), ("tn", 0)):
            out[name] = np.bincount(gr[cell == c], minlength=n)
        return out

    def table(t: dict[str, np.ndarray], alpha: np.ndarray) -> pd.DataFrame:
        s = confusion_scores(t["tp"], t["fp"], t["fn"], t["tn"])
        with np.errstate(invalid="ignore", divide="ignore"):
            nan_frac = np.where(t["n_items"] > 0, t["n_nan"] / t["n_items"], np.nan)
        return pd.DataFrame(
            {
                "n_items": t["n_items"],
                "nan_fraction": nan_frac,
                "krippendorff_alpha": alpha,
                **s,
                **{k: t[k] for k in ("tp", "fp", "fn", "tn")},
            }
        )

    values = enc.values
    v = len(values)
    o_unit = unit_coincidences(counts).reshape(len(items), -1)
    o_group = np.stack(
        [np.bincount(group, weights=o_unit[:, j], minlength=g) for j in range(v * v)], axis=-1
    ).reshape(g, v, v)
    per_group = table(tally(group, g), alpha_from_coincidence(o_group, values, scale.level))
    zero = np.zeros(len(items), dtype=np.int64)
    overall = table(
        tally(zero, 1), alpha_from_coincidence(o_group.sum(axis=0)[None], values, scale.level)
    )
    by_group = (
        pd.concat([keys.reset_index(drop=True), per_group], axis=1) if by else per_group.iloc[0:0]
    )
    overall_d = {k: (v.item() if hasattr(v, "item") else v) for k, v in overall.iloc[0].items()}
    for k in ("n_items", "tp", "fp", "fn", "tn"):
        overall_d[k] = int(overall_d[k])
    if np.isnan(overall_d["krippendorff_alpha"]):
        reasons.setdefault(
            "krippendorff_alpha", t("no pairable items or no variation among the ratings")
        )
    for k in ("precision", "recall"):
        if np.isnan(overall_d[k]) and "accuracy" not in reasons:
            reasons[k] = (
                t("undefined: no predicted positives")
                if k == "precision"
                else t("undefined: no true positives")
            )
    if bootstrap:
        onehot = np.stack([cell == c for c in (3, 1, 2, 0)], axis=1).astype(np.float64)
        cis_all = []
        for gi in range(g + 1) if by else [g]:
            sel = rated & ((group == gi) if gi < g else True)
            cis_all.append(
                _bootstrap_group(
                    o_unit[sel], onehot[sel], values, scale.level, bootstrap, confidence, seed
                )
            )
        for name in CI_METRICS:
            by_group[f"{name}_ci"] = [cis[name].pair() for cis in cis_all[:-1]]
            overall_d[f"{name}_ci"] = cis_all[-1][name].pair()
            r = cis_all[-1][name].reason
            if r:
                reasons[f"{name}_ci"] = r
    item_frame = pd.DataFrame(
        {
            "majority": major,
            "truth": truth,
            "auto_label": label,
            "n_ratings": n_cast.astype(np.int64),
        },
        index=items,
    )
    return AuditResult(overall_d, by_group, by, item_frame, reasons)


def _bootstrap_group(
    o_unit: np.ndarray,
    onehot: np.ndarray,
    values: np.ndarray,
    level: str,
    n_resamples: int,
    confidence: float,
    seed,
) -> dict[str, ConfidenceInterval]:
    alpha_stat = alpha_statistic(values, level)

    def score(name: str):
        def stat(t: np.ndarray) -> np.ndarray:
            return confusion_scores(t[:, 0], t[:, 1], t[:, 2], t[:, 3])[name]

        return stat

    out = {
        "krippendorff_alpha": bootstrap_ci(
            o_unit, alpha_stat, n_resamples=n_resamples, confidence=confidence, seed=seed
        )
    }
    for name in ("accuracy", "precision", "recall"):
        out[name] = bootstrap_ci(
            onehot, score(name), n_resamples=n_resamples, confidence=confidence, seed=seed
        )
    return out
