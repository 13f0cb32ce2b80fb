"""Majority vote per item (the ground truth of an audit), plus mean and median for numeric
scales. Vectorised: value counts per item come from one ``bincount``."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.options import MAJORITY_RULES, MajorityRule

from ._frame import CodedRatings, encode

MAJORITY = "majority"
Rule = MajorityRule
#: The majority rules, for option checks and help texts (:data:`MAJORITY_RULES`).
RULES: tuple[Rule, ...] = get_args(Rule)


def majority_from_counts(
    counts: np.ndarray, n_cast: np.ndarray, values: np.ndarray, rule: Rule = "strict"
) -> np.ndarray:
    """Majority code per item from value counts (shape (n_items, V)) and the number of
    ratings cast per item (decisive + no decision); NaN where no value wins."""
    MAJORITY_RULES.check(rule)
    out = np.full(len(counts), np.nan)
    if counts.shape[1] == 0:
        return out
    top = counts.argmax(axis=1)
    best = counts[np.arange(len(counts)), top]
    base = n_cast if rule == "strict" else counts.sum(axis=1)
    wins = (2 * best > base) & (best > 0)
    out[wins] = np.asarray(values, dtype=np.float64)[top[wins]]
    return out


def _median_from_counts(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    n = counts.sum(axis=1)
    cum = np.cumsum(counts, axis=1)
    lo = np.floor((n - 1) / 2)
    hi = np.ceil((n - 1) / 2)
    i_lo = np.minimum((cum <= lo[:, None]).sum(axis=1), len(values) - 1)
    i_hi = np.minimum((cum <= hi[:, None]).sum(axis=1), len(values) - 1)
    med = (values[i_lo] + values[i_hi]) / 2.0
    return np.where(n > 0, med, np.nan)


def majority_vote(
    ratings: pd.DataFrame | CodedRatings,
    *,
    rule: Rule = "strict",
    numeric: bool = False,
    items=None,
) -> pd.DataFrame:
    """The majority rating of every item.

    Parameters
    ----------
    ratings : DataFrame or CodedRatings
        Ratings frame (``pair_id``, ``annotator``, ``value``; NaN value = no decision) or its
        codes.
    rule : {"strict", "decisive"}
        ``"strict"``: a value wins when it has more than half of the ratings *cast* for the
        item; no-decision ratings count as cast but never win. ``"decisive"``: more than half
        of the decisive ratings.
    numeric : bool
        Also return ``mean`` and ``median`` of the decisive ratings (numeric scales).
    items : sequence, optional
        Pair ids fixing the rows (items without ratings get NaN).

    Returns
    -------
    DataFrame
        Indexed by ``pair_id``: ``majority`` (code, NaN when no value wins), ``n_ratings``
        (cast), ``n_decisive``, and optionally ``mean``, ``median``.

    Notes
    -----
    With :math:`n_{uc}` the ratings of value *c* for item *u*, :math:`m_u` the ratings cast
    and :math:`d_u = \\sum_c n_{uc}` the decisive ones, the strict majority is
    :math:`\\hat y_u = c` if :math:`n_{uc} > m_u / 2` (else missing); the decisive rule uses
    :math:`n_{uc} > d_u / 2`.

    References
    ----------
    Schulz, C., & Juric, D. (2020). Can Embeddings Adequately Represent Medical Terminology?
    New Large-Scale Medical Term Similarity Datasets Have the Answer! AAAI 2020, 8775-8782.
    https://doi.org/10.1609/aaai.v34i05.6404

    Examples
    --------
    Published rule (Schulz & Juric 2020, section 3.3): two "same" (1) and one "don't know"
    (NaN) of three doctors is a majority (2 > 3/2); one "same", one "not same", one "don't
    know" is none. One "same" and two "don't know" wins only under the decisive rule.

    >>> import pandas as pd
    >>> nan = float("nan")
    >>> r = pd.DataFrame({"pair_id": ["p1"] * 3 + ["p2"] * 3 + ["p3"] * 3,
    ...                   "annotator": list("ABC") * 3,
    ...                   "value": [1, 1, nan, 1, 0, nan, 1, nan, nan]})
    >>> majority_vote(r)["majority"].tolist()
    [1.0, nan, nan]
    >>> majority_vote(r, rule="decisive")["majority"].tolist()
    [1.0, nan, 1.0]
    """
    if isinstance(ratings, CodedRatings):
        enc = ratings if items is None else ratings.on_items(items)
    else:
        enc = encode(ratings, items=items)
    counts = enc.counts()
    n_cast = np.bincount(enc.item, minlength=enc.n_items).astype(np.float64)
    out = pd.DataFrame(
        {
            MAJORITY: majority_from_counts(counts, n_cast, enc.values, rule),
            "n_ratings": n_cast.astype(np.int64),
            "n_decisive": counts.sum(axis=1).astype(np.int64),
        },
        index=pd.Index(enc.items, name=C.PAIR_ID),
    )
    if numeric:
        with np.errstate(invalid="ignore", divide="ignore"):
            out["mean"] = (counts @ enc.values) / counts.sum(axis=1)
        out["median"] = _median_from_counts(counts, enc.values) if len(enc.values) else np.nan
    return out
