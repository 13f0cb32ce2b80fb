"""The gold export's filters, run in this fixed order (only those asked for; counts before
and after each go into the manifest):

1. ``min_ratings`` — keep pairs with at least *K* ratings cast (no-decision ratings count);
2. ``exclude_unclear`` — drop pairs that any annotator flagged "unclear meaning";
3. ``require_majority`` — keep pairs with a majority verdict (:func:`medsim_annot.stats.majority_vote`);
   with ``or_adjudicated`` also the pairs an adjudicator decided (step
   ``require_majority_or_adjudicated``; the table needs its ``label_source`` column);
4. ``exclude_all_different`` — drop pairs whose ratings are all different;
5. ``only_verified`` — keep pairs whose majority equals the automatic label.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.gold import (
    FILTER_ORDER,
    LABEL_SOURCE_COLUMN,
    GoldFilters,
)
from data_schemas.options import MIN_RATINGS
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, t
from medsim_annot.services.gold.table import GoldTable

#: The export filters (and the steps of a manifest) as a page names them; the manifest and
#: the CLI keep the names.
FILTER_NAMES = {
    "min_ratings": N_("minimum ratings"),
    "exclude_unclear": N_("exclude unclear"),
    "exclude_rushed": N_("leave out rushed ratings"),
    "require_majority": N_("require a majority"),
    "require_majority_or_adjudicated": N_("require a majority or an adjudicated label"),
    "exclude_all_different": N_("exclude all different"),
    "only_verified": N_("only verified"),
}


def filter_name(name: str) -> str:
    """A filter's name in the current language (an unknown one as it is)."""
    return t(FILTER_NAMES[name]) if name in FILTER_NAMES else name


def filter_gold(gt: GoldTable, filters: GoldFilters) -> tuple[pd.DataFrame, list[dict]]:
    """:func:`apply_filters` on *gt*'s table, with ``only_verified`` possible exactly when the
    table has automatic labels and the scale positive and negative values (every export)."""
    has_label = C.AUTO_LABEL in gt.table.columns and gt.scale.has_polarity
    return apply_filters(gt.table, has_auto_label=has_label, **filters.asked())


def apply_filters(
    table: pd.DataFrame,
    *,
    require_majority: bool = False,
    exclude_unclear: bool = False,
    exclude_all_different: bool = False,
    only_verified: bool = False,
    min_ratings: int | None = None,
    has_auto_label: bool = True,
    or_adjudicated: bool = False,
) -> tuple[pd.DataFrame, list[dict]]:
    """Apply the export filters in the fixed order :data:`FILTER_ORDER`.

    Returns the kept rows (file order) and one step per filter asked for:
    ``{"filter", "value", "before", "after"}``.

    Examples
    --------
    >>> t = pd.DataFrame({"n_ratings": [3, 1, 3], "no_majority": [False, False, True],
    ...                   "unclear_any": [False] * 3, "all_different": [False, False, True],
    ...                   "verified": [True, False, False]})
    >>> kept, steps = apply_filters(t, min_ratings=2, require_majority=True)
    >>> [(s["filter"], s["before"], s["after"]) for s in steps]
    [('min_ratings', 3, 2), ('require_majority', 2, 1)]
    >>> t["no_majority"] = [False, True, True]
    >>> t["label_source"] = ["majority", "unresolved", "adjudicated"]
    >>> kept, steps = apply_filters(t, require_majority=True, or_adjudicated=True)
    >>> [(s["filter"], s["before"], s["after"]) for s in steps]
    [('require_majority_or_adjudicated', 3, 2)]
    """
    if min_ratings is not None:
        MIN_RATINGS.check(min_ratings)
    if or_adjudicated and not require_majority:
        raise UsageProblem(
            t(
                "or an adjudicated label (or_adjudicated) widens require a majority "
                "(require_majority); ask for both"
            )
        )
    if or_adjudicated and LABEL_SOURCE_COLUMN not in table.columns:
        raise UsageProblem(
            t(
                "or an adjudicated label (or_adjudicated) needs the table's label sources "
                "(a gold export's provenance)"
            )
        )
    if only_verified and not has_auto_label:
        raise UsageProblem(
            t(
                "only verified pairs (only_verified) keeps pairs whose majority equals the "
                "automatic label, but this study has no automatic labels (or its scale has no "
                "positive/negative values)"
            )
        )
    asked = {
        "min_ratings": min_ratings,
        "exclude_unclear": exclude_unclear,
        "require_majority": require_majority,
        "exclude_all_different": exclude_all_different,
        "only_verified": only_verified,
    }
    keep = np.ones(len(table), dtype=bool)
    steps = []
    for name in FILTER_ORDER:
        value = asked[name]
        if value is None or value is False:
            continue
        before = int(keep.sum())
        if name == "min_ratings":
            keep &= table["n_ratings"].to_numpy() >= int(value)
        elif name == "exclude_unclear":
            keep &= ~table["unclear_any"].to_numpy(dtype=bool)
        elif name == "require_majority":
            has_label = ~table["no_majority"].to_numpy(dtype=bool) & (
                table["n_ratings"].to_numpy() > 0
            )
            if or_adjudicated:
                has_label |= table[LABEL_SOURCE_COLUMN].astype(str).to_numpy() == "adjudicated"
                name = "require_majority_or_adjudicated"
            keep &= has_label
        elif name == "exclude_all_different":
            keep &= ~table["all_different"].to_numpy(dtype=bool)
        else:
            keep &= table["verified"].to_numpy(dtype=bool)
        steps.append(
            {
                "filter": name,
                "value": int(value) if name == "min_ratings" else True,
                "before": before,
                "after": int(keep.sum()),
            }
        )
    return table[keep].reset_index(drop=True), steps
