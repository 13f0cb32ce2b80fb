"""The **gold file** contract: what ``medsim export gold`` writes (CSV, TSV, JSONL, Parquet,
or the Hugging Face dataset folder) and what ``medsim agreement`` and ``medsim evaluate``
read back.

One row per pair: ``pair_id``, ``term_1``, ``term_2``, the concept ids and group columns
present, other metadata columns, ``auto_label`` (when the study has automatic labels), one
``rater_<name>`` column per annotator (the scale value; empty when not rated),
``majority`` (plus ``mean`` and ``median`` on numeric scales), ``n_ratings``,
``n_decisive``, the agreement flags :data:`FLAGS`, then the model columns
:data:`MODEL_COLUMNS` (``--aggregate``), the provenance columns :data:`PROVENANCE_COLUMNS`
(the final ``label`` of the pair, where it came from: ``label_source``, one of
:data:`LABEL_SOURCES`, and for an adjudicated pair who decided, why
(:data:`ADJUDICATION_REASONS`) and the id of the event that recorded it), and last
:data:`CALIBRATION_COLUMN` (2 + 1 studies).

Beside a file ``F`` its manifest ``F.manifest.json`` (:func:`manifest_path`); in a Hugging
Face folder ``manifest.json`` (:data:`HF_MANIFEST`). Both manifests are built by
:func:`gold_manifest`, so they share one shape.

Cell texts: the same words mean "true", "false" and "empty" in every file the project reads
(:data:`TRUE_TEXT`, :data:`FALSE_TEXT`, :data:`EMPTY_TEXT`), whether written by this project,
a spreadsheet (``TRUE``, ``1.0``), pandas (``<NA>``, ``nan``) or R (``NA``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from . import columns as C
from ._text import N_, tr
from .errors import Problem
from .options import StrOptions
from .scales import Scale

#: Prefix of the per-annotator columns (``rater_<name>``); the EHR-Rel files use the same.
RATER_PREFIX = C.EHR_RATER_PREFIX
#: Per-row column of a gold export of a 2 + 1 study: the pair is a calibration pair (rated
#: by every annotator). A plain boolean column, so it survives CSV, TSV, JSONL, Parquet and
#: the Hugging Face export alike.
CALIBRATION_COLUMN = "calibration"
#: The verdict columns (``mean`` and ``median`` on numeric scales only).
VERDICT_COLUMNS = ("majority", "mean", "median")
#: Rating counts per pair: cast (no-decision ratings count) and decisive.
COUNT_COLUMNS = ("n_ratings", "n_decisive")
#: Agreement flag columns of the per-pair table, in file order.
FLAGS = (
    "no_majority",
    "all_different",
    "unanimous",
    "unclear_any",
    "auto_label_disagrees",
    "verified",
)
#: Columns a model aggregate (``--aggregate dawid-skene|mace``) adds.
MODEL_COLUMNS = ("model_label", "model_posterior", "model_differs_from_majority")
#: Provenance columns of every gold file (before the calibration flag): the final label, its source, and for an
#: adjudicated pair the adjudicator, the reason and the id of the event that fixed the label
#: (empty on the other rows: their label follows from the raters' answers in the same row).
LABEL_COLUMN = "label"
LABEL_SOURCE_COLUMN = "label_source"
ADJUDICATOR_COLUMN = "adjudicator"
ADJUDICATION_REASON_COLUMN = "adjudication_reason"
LABEL_EVENT_COLUMN = "label_event_id"
PROVENANCE_COLUMNS = (
    LABEL_COLUMN,
    LABEL_SOURCE_COLUMN,
    ADJUDICATOR_COLUMN,
    ADJUDICATION_REASON_COLUMN,
    LABEL_EVENT_COLUMN,
)

#: What each provenance column holds (the Hugging Face card and ``croissant.json`` say it).
PROVENANCE_DESCRIPTIONS = {
    LABEL_COLUMN: "the final label of the pair: an adjudicator's decision where there is one, "
    "else the raters' majority, else the model's label (--aggregate), else empty",
    LABEL_SOURCE_COLUMN: "where the label comes from: adjudicated, unanimous, tiebreak, "
    "majority, model or unresolved",
    ADJUDICATOR_COLUMN: "who decided the label (adjudicated rows only)",
    ADJUDICATION_REASON_COLUMN: "why: rater_error, ambiguous_term, guideline_gap, "
    "auto_label_wrong or other (adjudicated rows only)",
    LABEL_EVENT_COLUMN: "id of the event in the study's log that recorded the decision "
    "(adjudicated rows only)",
}

#: Where a gold row's ``label`` comes from, in the order they take precedence (an
#: adjudication overrides the raters; the model fills only pairs the raters left open).
LabelSource = Literal["adjudicated", "unanimous", "tiebreak", "majority", "model", "unresolved"]
LABEL_SOURCES = StrOptions.of(
    LabelSource,
    "label_source",
    {
        "adjudicated": "an adjudicator's decision (the newest one for the pair)",
        "unanimous": "at least two ratings, all the same decisive value",
        "tiebreak": "the majority of a 2 + 1 pair after its third (tie-break) rating",
        "majority": "the majority of the ratings cast, not unanimous",
        "model": "no majority; the label of the model of the raters (--aggregate)",
        "unresolved": "no majority, no decision, no model label: the label is empty",
    },
)

#: Why an adjudicator chose a label (the short taxonomy; ``other`` needs a text).
AdjudicationReason = Literal[
    "rater_error", "ambiguous_term", "guideline_gap", "auto_label_wrong", "other"
]
ADJUDICATION_REASONS = StrOptions.of(
    AdjudicationReason,
    "reason",
    {
        "rater_error": N_("one or more raters made a mistake"),
        "ambiguous_term": N_("a term can be read in more than one way"),
        "guideline_gap": N_("the guideline does not settle this kind of pair"),
        "auto_label_wrong": N_("the automatic label is wrong"),
        "other": N_("something else, said in the text"),
    },
)

#: Why a pair needs an adjudicator, in the order of how much it needs one.
AdjudicationNeed = Literal[
    "all_different", "tiebreak_disagrees", "no_majority", "against_model", "against_auto_label"
]
ADJUDICATION_NEEDS = StrOptions.of(
    AdjudicationNeed,
    "need",
    {
        "all_different": N_("every rating differs"),
        "tiebreak_disagrees": N_("a 2 + 1 pair still without a majority after its third rating"),
        "no_majority": N_("no strict majority among the ratings cast"),
        "against_model": N_("the majority differs from the Dawid-Skene label"),
        "against_auto_label": N_("the majority differs from the automatic label"),
    },
)

#: Which label the audit of automatic labels (``verified``, ``auto_label_disagrees``) in a
#: gold export compares with: the raters' majority (default) or the final label, in which
#: an adjudicator's decision replaces the majority. Recorded in the manifest.
AuditLabel = Literal["majority", "adjudicated"]
AUDIT_LABELS = StrOptions.of(
    AuditLabel,
    "audit_label",
    {
        "majority": "the raters' majority",
        "adjudicated": "the final label (an adjudicator's decision where there is one)",
    },
)


def label_source_counts(sources) -> dict[str, int]:
    """Rows per label source, every source named (zeros included), in :data:`LABEL_SOURCES`
    order; the counts add up to the rows.

    >>> label_source_counts(["majority", "adjudicated", "majority"])["majority"]
    2
    """
    values = [str(v) for v in sources]
    for v in set(values):
        LABEL_SOURCES.check(v)
    return {name: values.count(name) for name in LABEL_SOURCES}


#: The export filters in the order they are applied.
FILTER_ORDER = (
    "min_ratings",
    "exclude_unclear",
    "require_majority",
    "exclude_all_different",
    "only_verified",
)
#: Name of the manifest inside a Hugging Face dataset folder.
HF_MANIFEST = "manifest.json"
MANIFEST_SUFFIX = ".manifest.json"

#: Cell texts read as true / false (case-insensitive, stripped); the empty cell is false.
TRUE_TEXT = frozenset({"1", "1.0", "true", "yes", "y", "t"})
FALSE_TEXT = frozenset({"", "0", "0.0", "false", "no", "n", "f"})
#: Cell texts read as "no value" (case-insensitive, stripped).
EMPTY_TEXT = frozenset({"", "nan", "na", "n/a", "none", "null", "<na>"})


def cell_text(value: object) -> str:
    """A cell as stripped text (``None`` is empty).

    >>> cell_text("  same "), cell_text(None)
    ('same', '')
    """
    return "" if value is None else str(value).strip()


def is_empty(value: object) -> bool:
    """Whether a cell means "no value".

    >>> [is_empty(v) for v in ("", "<NA>", "NA", None, "0")]
    [True, True, True, True, False]
    """
    return cell_text(value).lower() in EMPTY_TEXT


def rater_column(name: str) -> str:
    """The export column of annotator *name*.

    >>> rater_column("dr_chen")
    'rater_dr_chen'
    """
    return f"{RATER_PREFIX}{name}"


def rater_columns(columns) -> list[str]:
    """The ``rater_<name>`` columns of a header, in order.

    >>> rater_columns(["pair_id", "rater_A", "rater_", "majority", "rater_B"])
    ['rater_A', 'rater_B']
    """
    return [
        str(c)
        for c in columns
        if str(c).startswith(RATER_PREFIX) and len(str(c)) > len(RATER_PREFIX)
    ]


def is_gold_export(columns) -> bool:
    """Whether a header is a gold export's: ``pair_id`` and ``rater_<name>`` columns, no
    long ``annotator``/``rating`` columns.

    >>> is_gold_export(["pair_id", "rater_A"]), is_gold_export(["pair_id", "annotator", "rating"])
    (True, False)
    """
    cols = [str(c) for c in columns]
    return (
        C.PAIR_ID in cols
        and C.ANNOTATOR not in cols
        and C.RATING not in cols
        and bool(rater_columns(cols))
    )


def manifest_path(out: str | Path) -> Path:
    """``FILE.manifest.json`` beside *out*.

    >>> manifest_path("gold.csv").name
    'gold.csv.manifest.json'
    """
    out = Path(out)
    return out.with_name(out.name + MANIFEST_SUFFIX)


def read_manifest(path: str | Path) -> dict | None:
    """The manifest beside gold file *path* (``None`` when absent or unreadable: a gold file
    is readable without it)."""
    try:
        data = json.loads(manifest_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---- the manifest ----------------------------------------------------------------------------
def manifest_scale(scale: Scale) -> dict:
    """The scale as every gold manifest records it (file and Hugging Face exports)."""
    return {
        "name": scale.name,
        "level": scale.level,
        "options": [Scale.display(o.value) for o in scale.options],
        "no_decision": [Scale.display(v) for v in scale.no_decision],
    }


@dataclass(frozen=True)
class GoldFilters:
    """The export filters (applied in the order :data:`FILTER_ORDER`; see
    :func:`medsim_annot.services.gold.filters.apply_filters`) and the majority rule they use."""

    min_ratings: int | None = None
    exclude_unclear: bool = False
    require_majority: bool = False
    exclude_all_different: bool = False
    only_verified: bool = False
    majority: str = "strict"
    #: Leave out the ratings made faster than the study's rushed threshold before the
    #: verdicts are formed (a filter of ratings, not of pairs: it runs before the others).
    exclude_rushed: bool = False
    #: The threshold in milliseconds (``None``: the study's, filled in by the export).
    rushed_ms: int | None = None
    #: With ``require_majority``: also keep the pairs an adjudicator decided (label source
    #: ``adjudicated``), so the requirement is "a majority or an adjudicated label".
    or_adjudicated: bool = False

    def asked(self) -> dict:
        """The five filters by name (what :func:`apply_filters` takes as keywords), and
        ``or_adjudicated`` when asked."""
        return {
            **{name: getattr(self, name) for name in FILTER_ORDER},
            **({"or_adjudicated": True} if self.or_adjudicated else {}),
        }

    def manifest(self) -> dict:
        """The filters as every gold manifest records them, with their fixed order.

        >>> GoldFilters(min_ratings=2).manifest()["order"][0]
        'min_ratings'
        """
        return {
            "min_ratings": self.min_ratings,
            "exclude_unclear": bool(self.exclude_unclear),
            "require_majority": bool(self.require_majority),
            "exclude_all_different": bool(self.exclude_all_different),
            "only_verified": bool(self.only_verified),
            "majority_rule": self.majority,
            "order": list(FILTER_ORDER),
            # Only when asked: the manifests of exports without it keep their bytes.
            **(
                {"exclude_rushed": True, "rushed_ms": self.rushed_ms} if self.exclude_rushed else {}
            ),
            **({"or_adjudicated": True} if self.or_adjudicated else {}),
        }


def gold_manifest(
    *,
    study: str,
    scale: Scale,
    filters: dict,
    filter_steps: list[dict],
    counts: dict,
    alpha: dict,
    ratings_version: tuple[int, int | None],
    columns: Sequence[str],
    software_version: str,
    after: Mapping[str, Mapping[str, object]] | None = None,
) -> dict:
    """The manifest of a gold export, file or Hugging Face folder: one shape for both.

    Every manifest has, in this order: ``study``, ``scale`` (:func:`manifest_scale`),
    ``filters`` (:meth:`GoldFilters.manifest`), ``filter_steps``, ``counts``,
    ``krippendorff_alpha``, ``ratings_version`` (``count``, ``max_rating_id``: the ratings
    the file was built from), ``columns``, ``software`` and ``software_version``. What one
    export kind adds goes in *after*: ``{key: {extra keys}}`` places the extra keys right
    after *key* (``"software_version"`` for the end).

    >>> from data_schemas.scales import BINARY
    >>> m = gold_manifest(study="s", scale=BINARY, filters={}, filter_steps=[], counts={},
    ...                   alpha={}, ratings_version=(3, 7), columns=["pair_id"],
    ...                   software_version="1", after={"study": {"format": "hf"}})
    >>> list(m)[:3], m["ratings_version"]
    (['study', 'format', 'scale'], {'count': 3, 'max_rating_id': 7})
    """
    extra = dict(after or {})
    common = {
        "study": study,
        "scale": manifest_scale(scale),
        "filters": filters,
        "filter_steps": filter_steps,
        "counts": counts,
        "krippendorff_alpha": alpha,
        "ratings_version": {"count": ratings_version[0], "max_rating_id": ratings_version[1]},
        "columns": [str(c) for c in columns],
        "software": "medsim-annot",
        "software_version": software_version,
    }
    unknown = sorted(set(extra) - set(common))
    if unknown:
        raise ValueError(f"no manifest key {unknown[0]!r} to place extra keys after")
    out: dict = {}
    for key, value in common.items():
        out[key] = value
        out.update(extra.get(key, {}))
    return out


# ---- the reader ------------------------------------------------------------------------------
@dataclass
class GoldFile:
    """A gold file as read (:func:`read_gold_frame`): ``pair_ids`` (stripped text, file
    order), ``ratings`` (long: ``pair_id``, ``annotator``, ``rating`` text, for every non-empty
    ``rater_<name>`` cell), ``calibration`` (bool per row, ``None`` when the file has no
    :data:`CALIBRATION_COLUMN`) and the ``problems`` found (row numbers count the header as
    row 1)."""

    frame: pd.DataFrame
    pair_ids: pd.Series
    ratings: pd.DataFrame
    calibration: pd.Series | None
    problems: list[Problem] = field(default_factory=list)

    def calibration_pairs(self) -> list[str] | None:
        """The pairs the calibration column marks (sorted), ``None`` when it marks none."""
        if self.calibration is None:
            return None
        marked = sorted(set(self.pair_ids[self.calibration.to_numpy(dtype=bool)]))
        return marked or None


def read_gold_frame(
    frame: pd.DataFrame,
    *,
    known_pairs: set[str] | None = None,
    canonical: Callable[[str], str] | None = None,
) -> GoldFile:
    """Read a gold export's table: the pair ids, every rater cell that is not empty
    (:data:`EMPTY_TEXT`) and the calibration flags (:data:`TRUE_TEXT` / :data:`FALSE_TEXT`).
    Nothing is raised: what is wrong is in ``problems``, by row and column (pair ids, then
    rater cells, then calibration flags).

    *canonical* turns a rater cell into the rating stored (e.g. the scale's display of its
    canonical value); a ``ValueError`` it raises becomes a problem of that cell.

    >>> g = read_gold_frame(pd.DataFrame({"pair_id": ["a", "b"], "rater_A": ["same", "<NA>"],
    ...                                   "calibration": ["true", "maybe"]}))
    >>> g.ratings.values.tolist(), [p.message for p in g.problems]
    ([['a', 'A', 'same']], ["calibration must be true or false, not 'maybe'"])
    """
    problems: list[Problem] = []
    pair_ids = frame[C.PAIR_ID].map(cell_text) if C.PAIR_ID in frame.columns else None
    if pair_ids is None:
        problems.append(Problem(tr("required column is missing"), column=C.PAIR_ID))
        pair_ids = pd.Series([""] * len(frame), dtype=object)
    else:
        for i, pid in enumerate(pair_ids):
            if pid == "":
                problems.append(Problem(tr("pair_id is empty"), row=i + 2, column=C.PAIR_ID))
            elif known_pairs is not None and pid not in known_pairs:
                problems.append(
                    Problem(
                        tr("pair_id '{pair_id}' is not in the pairs file", pair_id=pid),
                        row=i + 2,
                        column=C.PAIR_ID,
                    )
                )
    rows: list[tuple[str, str, str]] = []
    for col in rater_columns(frame.columns):
        who = col[len(RATER_PREFIX) :]
        for i, text in enumerate(frame[col].map(cell_text)):
            if text.lower() in EMPTY_TEXT:
                continue
            if canonical is not None:
                try:
                    text = canonical(text)
                except ValueError as exc:
                    problems.append(Problem(str(exc), row=i + 2, column=col))
                    continue
            rows.append((pair_ids.iloc[i], who, text))
    ratings = pd.DataFrame(rows, columns=[C.PAIR_ID, C.ANNOTATOR, C.RATING])
    calibration = None
    if CALIBRATION_COLUMN in frame.columns:
        flags = frame[CALIBRATION_COLUMN].map(lambda v: cell_text(v).lower())
        for i, f in enumerate(flags):
            if f not in TRUE_TEXT | FALSE_TEXT:
                problems.append(
                    Problem(
                        tr("calibration must be true or false, not '{value}'", value=f),
                        row=i + 2,
                        column=CALIBRATION_COLUMN,
                    )
                )
        calibration = flags.isin(TRUE_TEXT)
    return GoldFile(frame, pair_ids, ratings, calibration, problems)


#: Words a binary verdict or rating column may hold, as 1 (similar) or 0 (dissimilar): the
#: truth words and the binary scales' values.
BINARY_WORDS: dict[str, int] = {
    **{t: 1 for t in TRUE_TEXT},
    **{f: 0 for f in FALSE_TEXT if f},
    "same": 1,
    "not_same": 0,
    "similar": 1,
    "dissimilar": 0,
}
#: Texts of a no-decision rating, read as "no value" in a verdict or rating column.
NO_DECISION_TEXT = frozenset({"dont_know", "don't know", "no_decision"})


def read_values(
    frame: pd.DataFrame, column: str, *, binary_words: bool = False, binary: bool = False
) -> tuple[pd.Series, list[Problem]]:
    """The numbers of a verdict or rating column (``majority``, ``mean``, ``rating``) by
    pair id: empty and no-decision cells are NaN, with *binary_words* (or *binary*: the column
    is a binary verdict, said so in problems) the :data:`BINARY_WORDS` are 1 or 0; any other
    text is a problem (by row and column).

    >>> v, problems = read_values(pd.DataFrame({"pair_id": ["a", "b", "c"],
    ...                                         "majority": ["same", "NA", "0"]}),
    ...                           "majority", binary=True)
    >>> v.tolist(), problems
    ([1.0, nan, 0.0], [])
    """
    problems: list[Problem] = []
    values = np.empty(len(frame))
    for i, v in enumerate(frame[column].tolist()):
        text = cell_text(v)
        low = text.lower()
        if low in EMPTY_TEXT or low in NO_DECISION_TEXT:
            values[i] = np.nan
        elif (binary or binary_words) and low in BINARY_WORDS:
            values[i] = BINARY_WORDS[low]
        else:
            try:
                values[i] = float(text)
            except ValueError:
                problems.append(
                    Problem(
                        tr("'{value}' is not a number or a binary label", value=text)
                        if binary
                        else tr("'{value}' is not a number", value=text),
                        row=i + 2,
                        column=column,
                    )
                )
                values[i] = np.nan
    return pd.Series(values, index=frame[C.PAIR_ID].astype(str).str.strip().to_numpy()), problems
