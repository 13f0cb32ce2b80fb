"""A gold table as a Hugging Face dataset folder: Parquet data, a dataset card
(``README.md`` with the hub's YAML header) and Croissant 1.0 metadata (``croissant.json``).

Everything here is a pure function of its inputs: no clock, no database, so the same study
gives byte-identical files. ``datasets.load_dataset(FOLDER)`` reads the folder through the
``configs`` of the card's YAML header.

Layout::

    FOLDER/
      README.md            dataset card (YAML header + generated body)
      croissant.json       Croissant 1.0 JSON-LD: files with SHA-256, fields with types
      data/train.parquet   (and data/test.parquet with a train/test split)
      manifest.json        counts, filters, agreement, SHA-256 of every other file
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from data_schemas import columns as C
from data_schemas.gold import LABEL_SOURCES, PROVENANCE_DESCRIPTIONS
from data_schemas.options import TEST_SIZE
from data_schemas.scales import Scale

DATA_DIR = "data"
#: The standard JSON-LD context of Croissant 1.0 (as in the specification).
CROISSANT_CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
CROISSANT_VERSION = "http://mlcommons.org/croissant/1.0"
#: How to cite the methods the card names (agreement statistic; the datasets' protocols).
CITATIONS = (
    "Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School "
    "for Communication, University of Pennsylvania. (Hayes & Krippendorff 2007, "
    "doi:10.1080/19312450709336664)",
    "Schulz, C. & Juric, D. (2020). Can Embeddings Adequately Represent Medical Terminology? "
    "New Large-Scale Medical Term Similarity Datasets Have the Answer! AAAI 2020, "
    "doi:10.1609/aaai.v34i05.6404",
    "Schulz, C., Levy-Kramer, J., Van Assel, C., Kepes, M. & Hammerla, N. (2020). Biomedical "
    "Concept Relatedness – A large EHR-based benchmark. COLING 2020, "
    "doi:10.18653/v1/2020.coling-main.577",
)
_TYPES = {
    "string": "sc:Text",
    "integer": "sc:Integer",
    "float": "sc:Float",
    "boolean": "sc:Boolean",
}


@dataclass
class CardFacts:
    """What the dataset card says, gathered by the service from the study."""

    study: str
    scale: Scale
    license: str
    n_pairs: int
    n_rated: int
    annotators: list[str]
    n_ratings: int
    design: dict
    alpha: dict  # {"study": {...}, "exported": {...}}: value, low, high, method, reason
    filter_steps: list[dict]
    filters: dict
    splits: dict[str, int]
    split_seed: int | None
    stratified_by: list[str]
    groups: dict[str, dict[str, int]] = field(default_factory=dict)
    columns: list[tuple[str, str]] = field(default_factory=list)
    #: Date of the latest rating (ISO date): the Croissant ``datePublished``, never the clock.
    last_rated: str | None = None
    #: Rows per label source in the dataset (:func:`data_schemas.gold.label_source_counts`).
    label_sources: dict[str, int] = field(default_factory=dict)
    #: What the audit flags compare the automatic label with (``majority``/``adjudicated``).
    audit_label: str = "majority"


def column_kind(series: pd.Series) -> str:
    """``string``, ``integer``, ``float`` or ``boolean`` for a gold-table column.

    >>> column_kind(pd.Series([True, False]))
    'boolean'
    >>> column_kind(pd.Series([1, None], dtype="Int64"))
    'integer'
    """
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_integer_dtype(series):
        return "integer"
    if pd.api.types.is_float_dtype(series):
        return "float"
    return "string"


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """*frame* with every text column as nullable strings, so each Parquet column has one
    type (a rater column that is empty in a split stays a string column)."""
    out = frame.copy()
    for c in out.columns:
        if column_kind(out[c]) == "string":
            out[c] = pd.array(
                [
                    None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
                    for v in out[c]
                ],
                dtype=pd.StringDtype(),
            )
    return out


def split_frame(
    kept: pd.DataFrame, *, seed: int, test_size: float, by: list[str]
) -> dict[str, pd.DataFrame]:
    """A seeded train/test split, stratified by the *by* columns: in each group
    ``round(test_size * n)`` pairs go to test. Rows keep their file order within each split.

    >>> t = pd.DataFrame({"pair_id": list("abcdefghij"), "dataset": ["x"] * 5 + ["y"] * 5})
    >>> s = split_frame(t, seed=1, test_size=0.4, by=["dataset"])
    >>> len(s["train"]), len(s["test"]), sorted(s["test"]["dataset"].value_counts().tolist())
    (6, 4, [2, 2])
    """
    TEST_SIZE.check(test_size)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(kept), dtype=bool)
    keys = (
        kept[by].astype(str).agg("\x1f".join, axis=1)
        if by
        else pd.Series([""] * len(kept), index=kept.index)
    )
    for key in sorted(set(keys)):
        rows = np.flatnonzero((keys == key).to_numpy())
        n_test = int(round(test_size * len(rows)))
        test[rng.permutation(rows)[:n_test]] = True
    return {
        "train": kept[~test].reset_index(drop=True),
        "test": kept[test].reset_index(drop=True),
    }


def size_category(n: int) -> str:
    """The hub's size category of *n* rows.

    >>> size_category(999), size_category(1000), size_category(20_000)
    ('n<1K', '1K<n<10K', '10K<n<100K')
    """
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M" if n < 1_000_000 else "1M<n<10M"


def data_path(split: str) -> str:
    return f"{DATA_DIR}/{split}.parquet"


def card_header(facts: CardFacts) -> dict:
    """The YAML header of the dataset card (the keys the hub reads)."""
    return {
        "license": facts.license,
        "pretty_name": f"{facts.study} (medsim-annot gold)",
        "task_categories": ["sentence-similarity"],
        "tags": ["medical", "term-similarity", "human-annotated", "medsim-annot"],
        "size_categories": [size_category(sum(facts.splits.values()))],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": data_path(s)} for s in facts.splits],
            }
        ],
    }


def _ci(a: dict) -> str:
    if a.get("value") is None:
        return f"undefined ({a.get('reason') or 'no pairable ratings'})"
    text = f"{a['value']:.3f}"
    if a.get("low") is not None and a.get("high") is not None:
        text += f" (95% {a['method']} bootstrap interval {a['low']:.3f} – {a['high']:.3f})"
    elif a.get("interval_reason"):
        text += f" (no interval: {a['interval_reason']})"
    return text


def dataset_card(facts: CardFacts) -> str:
    """The whole ``README.md``: YAML header and a body generated from *facts*."""
    sc = facts.scale
    header = yaml.safe_dump(card_header(facts), sort_keys=False, allow_unicode=True)
    lines = [
        "---",
        header.rstrip("\n"),
        "---",
        "",
        f"# {facts.study}",
        "",
        summary(facts),
        "",
        "## The pairs",
        "",
        "Each row is one pair: `term_1` and `term_2` are the two terms the doctors compared. "
        "Automatic labels (`auto_label`) and group columns, when present, were never shown "
        "to the doctors.",
    ]
    if facts.groups:
        lines += ["", "| column | value | pairs |", "|---|---|---|"]
        for col, counts in facts.groups.items():
            for value, n in counts.items():
                lines.append(f"| `{col}` | {value or '(empty)'} | {n} |")
    lines += [
        "",
        "## Scale and guideline",
        "",
        f"Level of measurement: {sc.level}. Options:",
        "",
        "| value | label | meaning |",
        "|---|---|---|",
    ]
    for o in sc.options:
        extra = " (no decision: not counted as a vote)" if sc.is_no_decision(o.value) else ""
        lines.append(
            f"| {Scale.display(o.value)} | {o.label} | {o.description}{extra} |".replace("\n", " ")
        )
    if sc.guideline.strip():
        lines += ["", "Guideline shown to the doctors:", ""]
        lines += ["> " + ln if ln else ">" for ln in sc.guideline.strip().split("\n")]
    lines += [
        "",
        "## Doctors and design",
        "",
        f"{len(facts.annotators)} doctors gave {facts.n_ratings} current ratings to "
        f"{facts.n_rated} pairs. Each doctor's rating is in the column `rater_<name>`.",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in _design_lines(facts.design)]
    a_study, a_exp = facts.alpha["study"], facts.alpha["exported"]
    lines += [
        "",
        "## Agreement",
        "",
        f"Krippendorff's alpha ({sc.level}), no-decision ratings left out:",
        "",
        f"- all rated pairs of the study: {_ci(a_study)}",
        f"- the pairs in this dataset: {_ci(a_exp)}",
        "",
        "## Filters",
        "",
        f"Majority rule: {facts.filters.get('majority_rule', 'strict')}. Filters run in this "
        "order; pairs before and after each:",
        "",
    ]
    if facts.filter_steps:
        lines += ["| filter | before | after |", "|---|---|---|"]
        lines += [f"| {s['filter']} | {s['before']} | {s['after']} |" for s in facts.filter_steps]
    else:
        lines.append(f"None: all {facts.n_pairs} pairs of the study are included.")
    lines += ["", "## Splits", ""]
    lines += [f"- `{s}`: {n} pairs (`{data_path(s)}`)" for s, n in facts.splits.items()]
    if facts.split_seed is not None:
        by = ", ".join(facts.stratified_by) or "nothing (no group columns)"
        lines.append(f"- seeded split (seed {facts.split_seed}), stratified by {by}")
    lines += ["", "## Columns", "", "| column | type |", "|---|---|"]
    lines += [f"| `{c}` | {k} |" for c, k in facts.columns]
    lines += [
        "",
        "Flags: `no_majority` (rated, no value has the majority), `all_different`, "
        "`unanimous`, `unclear_any` (a doctor flagged a term's meaning unclear), "
        "`auto_label_disagrees` and `verified` (the "
        + ("final label" if facts.audit_label == "adjudicated" else "majority")
        + " against / equal to the automatic label).",
        "",
        "## Labels and their provenance",
        "",
        "Every row says where its `label` comes from. The majority, the flags and the "
        "agreement figures above are computed on the doctors' own ratings only; an "
        "adjudicator's decision changes `label`, never a `rater_<name>` column.",
        "",
        "| column | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{c}` | {d} |" for c, d in PROVENANCE_DESCRIPTIONS.items()]
    lines += ["", "| label_source | meaning | rows |", "|---|---|---|"]
    lines += [
        f"| {src} | {LABEL_SOURCES.help[src]} | {facts.label_sources.get(src, 0)} |"
        for src in LABEL_SOURCES
    ]
    lines += [
        "",
        "## Files",
        "",
        "`croissant.json` describes the files and fields (Croissant 1.0); `manifest.json` "
        "holds the counts, the filters and the SHA-256 of every file.",
        "",
        "## Citation",
        "",
        "Please cite the methods this dataset was built and checked with:",
        "",
    ]
    lines += [f"- {c}" for c in CITATIONS]
    return "\n".join(lines) + "\n"


def summary(facts: CardFacts) -> str:
    """The card's first paragraph (also the Croissant description)."""
    total = sum(facts.splits.values())
    return (
        f"Pairs of medical terms judged by {len(facts.annotators)} doctors on the "
        f"{facts.scale.name} scale, exported as the gold subset of the medsim-annot study "
        f"'{facts.study}': {total} of its {facts.n_pairs} pairs, each with every doctor's "
        "rating, the verdict and agreement flags."
    )


def _design_lines(design: dict) -> list[tuple[str, str]]:
    """The study's design as card lines (keys of the study's stored config).

    >>> _design_lines({"design": "k_of_n", "per_item": 2, "annotators": 3, "calibration": 5,
    ...                "duplicates": 0.1, "seed": 7})[0]
    ('each pair rated by', '2 of the 3 doctors (balanced k-of-n design)')
    """
    out = []
    if design.get("imported_from"):
        out.append(
            ("imported from", f"{design['imported_from']} ({design.get('format', 'ratings')})")
        )
    if design.get("design") == "k_of_n":
        out.append(
            (
                "each pair rated by",
                f"{design.get('per_item')} of the {design.get('annotators')} doctors "
                "(balanced k-of-n design)",
            )
        )
    elif design.get("design") == "all":
        out.append(("each pair rated by", "every doctor"))
    if design.get("sampling") == "stratified":
        out.append(
            (
                "sampling",
                f"stratified by {', '.join(design.get('group_by') or [])}: "
                f"{design.get('positives')} positives and {design.get('negatives')} negatives "
                f"per group ({design.get('pairs_sampled')} of {design.get('pairs_in_file')} "
                "pairs)",
            )
        )
    if design.get("tiebreak"):
        out.append(
            (
                "third doctor",
                "only where the first two disagree (2 + 1 design); the `calibration` column "
                "marks the pairs agreement is computed on",
            )
        )
    if design.get("calibration"):
        out.append(("calibration pairs (rated by every doctor)", str(design["calibration"])))
    if design.get("duplicates"):
        out.append(
            ("share of each queue shown again later, terms swapped", str(design["duplicates"]))
        )
    if design.get("seed") is not None:
        out.append(("seed", str(design["seed"])))
    return out or [("design", "every doctor rated the pairs given to them (not recorded)")]


def croissant(facts: CardFacts, files: dict[str, str]) -> dict:
    """Croissant 1.0 metadata: one ``FileObject`` per split file (with its SHA-256) and one
    ``RecordSet`` per split whose fields are the columns with their types."""
    distribution = [
        {
            "@type": "cr:FileObject",
            "@id": f"{split}-file",
            "name": f"{split}-file",
            "contentUrl": path,
            "encodingFormat": "application/x-parquet",
            "sha256": files[path],
        }
        for split, path in ((s, data_path(s)) for s in facts.splits)
    ]
    record_sets: list[dict] = []
    for split in facts.splits:
        record_sets.append(
            {
                "@type": "cr:RecordSet",
                "@id": split,
                "name": split,
                "description": f"The {split} split: one record per pair.",
                "field": [
                    {
                        "@type": "cr:Field",
                        "@id": f"{split}/{col}",
                        "name": col,
                        **(
                            {"description": PROVENANCE_DESCRIPTIONS[col]}
                            if col in PROVENANCE_DESCRIPTIONS
                            else {}
                        ),
                        "dataType": _TYPES[kind],
                        "source": {
                            "fileObject": {"@id": f"{split}-file"},
                            "extract": {"column": col},
                        },
                    }
                    for col, kind in facts.columns
                ],
            }
        )
    if facts.label_sources:
        record_sets.append(
            {
                "@type": "cr:RecordSet",
                "@id": "label_sources",
                "name": "label_sources",
                "description": "Rows of the dataset per label source (where `label` comes from).",
                "key": {"@id": "label_sources/label_source"},
                "field": [
                    {
                        "@type": "cr:Field",
                        "@id": "label_sources/label_source",
                        "name": "label_source",
                        "dataType": "sc:Text",
                    },
                    {
                        "@type": "cr:Field",
                        "@id": "label_sources/rows",
                        "name": "rows",
                        "dataType": "sc:Integer",
                    },
                ],
                "data": [
                    {"label_sources/label_source": src, "label_sources/rows": int(n)}
                    for src, n in facts.label_sources.items()
                ],
            }
        )
    return {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "name": facts.study,
        "description": summary(facts),
        "conformsTo": CROISSANT_VERSION,
        "citeAs": CITATIONS[0],
        "license": facts.license,
        "version": "1.0.0",
        **({"datePublished": facts.last_rated} if facts.last_rated else {}),
        "distribution": distribution,
        "recordSet": record_sets,
    }


def dumps(obj) -> str:
    """JSON as every file of the folder is written: sorted nowhere, indented, UTF-8, one
    trailing newline (deterministic for a given object)."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def group_counts(kept: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Pairs per value of each group column present (``dataset``, ``difficulty``, ...)."""
    out = {}
    for col in C.GROUP_COLUMNS:
        if col in kept.columns:
            counts = kept[col].astype(str).value_counts().sort_index()
            out[col] = {str(k): int(v) for k, v in counts.items()}
    return out


def zip_folder(folder, prefix: str) -> bytes:
    """The files of *folder* as one ZIP (for a browser download), each under *prefix*/;
    fixed entry times and modes, so the same folder gives the same bytes."""
    folder = Path(folder)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.name.endswith(".part"):
                info = zipfile.ZipInfo(f"{prefix}/{p.relative_to(folder).as_posix()}")
                info.date_time = (1980, 1, 1, 0, 0, 0)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                z.writestr(info, p.read_bytes())
    return buf.getvalue()
