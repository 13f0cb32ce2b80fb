"""What the three importers share: the mapping file, matching a tool's answer to a scale
value, picking the two term fields, and collecting pairs, ratings and skipped answers.

Every importer turns a tool's export into a :class:`ToolImport`: a **pairs** frame and a long
**ratings** frame of plain strings (the contracts of :mod:`data_schemas`), the source row of
each pair and rating (so a contract error can name the row of the tool's file), and the
answers that are not ratings with the reason why. Nothing here touches the database.

Row numbers: the line number for JSONL (Prodigy), the 1-based number of the task or record
for a JSON array (Label Studio, Argilla ``records.json``) or a Parquet table (Argilla hub
format). Fields are named by their path in the tool's format (``annotations[2].result``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem
from data_schemas.pairs import validate_pairs
from data_schemas.ratings import validate_ratings
from data_schemas.scales import Scale, read_settings_file
from medsim_annot.errors import UsageProblem

#: Term fields tried, in order, when ``--term-fields`` is not given.
DEFAULT_TERM_FIELDS = (
    (C.TERM_1, C.TERM_2),
    ("text_1", "text_2"),
    ("term1", "term2"),
    ("text1", "text2"),
    ("sentence1", "sentence2"),
    ("text_a", "text_b"),
)
#: Pair columns taken from a task's data or metadata when present (auto label, groups, ids).
PAIR_EXTRAS = tuple(c for c in C.PAIR_OPTIONAL if c != C.PAIR_ID)
_MAPPING_KEYS = {"values", "annotators", "question", "term_fields"}


@dataclass(frozen=True)
class Mapping:
    """A mapping file (YAML or JSON), every key optional:

    ``values``: the tool's answer (a choice label, a choice id, a rating, Prodigy's
    ``accept``/``reject``) → a value of the scale, compared ignoring case;
    ``annotators``: the tool's user id → annotator name; ``question``: which question
    (Label Studio ``from_name``, Argilla question name) holds the rating when there are
    several; ``term_fields``: the two fields holding the terms (``--term-fields`` wins).
    """

    values: dict[str, str] = field(default_factory=dict)
    annotators: dict[str, str] = field(default_factory=dict)
    question: str | None = None
    term_fields: tuple[str, str] | None = None
    file: str | None = None


def read_export(path: Path, *, missing: str, folder: str) -> str:
    """The text of a tool's export *path*, or one clear error naming it: *missing* when it
    does not exist, *folder* when it is a folder, or that it is not UTF-8 text."""
    name = str(path)
    if not path.is_file():
        raise InputError.single(missing if not path.exists() else folder, file=name)
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError.single(f"is not UTF-8 text ({exc})", file=name) from None


def read_json(path: Path, *, missing: str = "file not found", folder: str = "is a folder"):
    """The parsed JSON document of *path* (see :func:`read_export` for the errors)."""
    text = read_export(path, missing=missing, folder=folder)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.single(
            f"is not a JSON file ({exc.__class__.__name__}: {exc})", file=str(path)
        ) from None


def load_mapping(path: str | Path | None) -> Mapping:
    """Read a mapping file; ``None`` gives the default mapping (match by label or value).

    >>> load_mapping(None).values
    {}
    """
    if path is None:
        return Mapping()
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError.single("mapping file not found", file=name)
    data = read_settings_file(path, name=name)
    if not isinstance(data, dict):
        raise InputError.single(
            "must be a mapping with keys " + ", ".join(sorted(_MAPPING_KEYS)), file=name
        )
    unknown = sorted(set(data) - _MAPPING_KEYS)
    if unknown:
        raise InputError.single(
            f"unknown key '{unknown[0]}' (allowed: {', '.join(sorted(_MAPPING_KEYS))})",
            file=name,
            column=unknown[0],
        )
    for key in ("values", "annotators"):
        if not isinstance(data.get(key, {}), dict):
            raise InputError.single(
                "must map the tool's text to ours (key: value lines)", file=name, column=key
            )
    terms = data.get("term_fields")
    if terms is not None:
        if isinstance(terms, str):
            terms = [t.strip() for t in terms.split(",")]
        if not (isinstance(terms, list) and len(terms) == 2 and all(terms)):
            raise InputError.single("must name exactly two fields", file=name, column="term_fields")
    return Mapping(
        values={str(k).strip().casefold(): str(v) for k, v in (data.get("values") or {}).items()},
        annotators={str(k): str(v) for k, v in (data.get("annotators") or {}).items()},
        question=None if data.get("question") is None else str(data["question"]),
        term_fields=(str(terms[0]), str(terms[1])) if terms else None,
        file=name,
    )


def parse_term_fields(text: str | None) -> tuple[str, str] | None:
    """``"text_1,text_2"`` → ``("text_1", "text_2")``; ``None``/empty → ``None``.

    >>> parse_term_fields("a, b")
    ('a', 'b')
    """
    if not text:
        return None
    parts = [t.strip() for t in text.split(",") if t.strip()]
    if len(parts) != 2:
        raise UsageProblem(f"--term-fields takes two field names, FIELD_1,FIELD_2, not '{text}'")
    return parts[0], parts[1]


def pick_term_fields(
    keys, given: tuple[str, str] | None, mapping: Mapping, *, file: str, row: int, where: str
) -> tuple[str, str]:
    """The two term fields: *given* (``--term-fields``), else the mapping's, else the first
    of :data:`DEFAULT_TERM_FIELDS` present in *keys* (the fields of the first task)."""
    chosen = given or mapping.term_fields
    if chosen:
        return chosen
    keys = set(keys)
    for a, b in DEFAULT_TERM_FIELDS:
        if a in keys and b in keys:
            return a, b
    tried = ", ".join(f"{a},{b}" for a, b in DEFAULT_TERM_FIELDS)
    raise InputError.single(
        f"cannot find the two term fields (tried {tried}; the task has "
        f"{', '.join(sorted(map(str, keys))) or 'no fields'}): name them with --term-fields",
        file=file,
        row=row,
        column=where,
    )


class ValueMatcher:
    """Match a tool's answer to a value of *scale*: first the mapping file's ``values``,
    then an option's label, then its value (both ignoring case; numbers compare as numbers).

    >>> from data_schemas.scales import BINARY, RELATEDNESS_0_3
    >>> ValueMatcher(BINARY, Mapping()).match("Don't know")
    'dont_know'
    >>> ValueMatcher(RELATEDNESS_0_3, Mapping()).match("2")
    2.0
    """

    def __init__(self, scale: Scale, mapping: Mapping):
        self.scale = scale
        self.mapping = mapping
        self.used: Counter = Counter()

    def match(self, raw, *, shown: str | None = None) -> str | float:
        """The scale value of *raw*; *shown* is how the answer is listed in the import
        summary (default: *raw*)."""
        value = self._match(raw)
        self.used[(shown or str(raw).strip(), str(Scale.display(value)))] += 1
        return value

    def _match(self, raw) -> str | float:
        text = str(raw).strip()
        key = text.casefold()
        target = self.mapping.values.get(key)
        if target is not None:
            try:
                value = self.scale.canonical(target)
            except ValueError as exc:
                raise ValueError(f"the mapping file maps '{text}' to {exc}") from None
            return value
        for o in self.scale.options:
            if o.label.strip().casefold() == key or str(Scale.display(o.value)).casefold() == key:
                return o.value
        try:
            value = self.scale.canonical(raw if isinstance(raw, (int, float)) else text)
        except ValueError:
            allowed = ", ".join(
                f"'{o.label}' ({Scale.display(o.value)})" for o in self.scale.options
            )
            raise ValueError(
                f"answer '{text}' matches no option of the {self.scale.name} scale "
                f"(labels or values: {allowed}); map it in a --mapping file under 'values'"
            ) from None
        return value


def plain(value) -> str:
    """A metadata value as the text a pairs file would hold."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def iso_time(value) -> str:
    """A timestamp from a tool (ISO text or Unix seconds) as ISO 8601 text ("" if none)."""
    if value is None or value == "":
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(float(value), dt.UTC).isoformat()
    return str(value)


@dataclass
class ToolImport:
    """A tool's export as our contracts, before validation (see the module docstring)."""

    tool: str
    file: str
    n_tasks: int = 0
    pairs: list[dict] = field(default_factory=list)
    pair_rows: list[int] = field(default_factory=list)
    ratings: list[dict] = field(default_factory=list)
    rating_rows: list[int] = field(default_factory=list)
    skipped: list[tuple[str, int]] = field(default_factory=list)
    term_fields: tuple[str, str] | None = None
    _index: dict[str, int] = field(default_factory=dict)

    # -- collecting ------------------------------------------------------------------------
    def add_pair(self, item_id: str, term_1, term_2, extras: dict, *, row: int, where: str) -> str:
        """Register the item *item_id* (first sight wins; a later task with the same id must
        name the same terms). Returns the pair id."""
        pid = plain(extras.get(C.PAIR_ID)) or str(item_id)
        t1, t2 = plain(term_1).strip(), plain(term_2).strip()
        if pid in self._index:
            first = self.pairs[self._index[pid]]
            if (first[C.TERM_1], first[C.TERM_2]) != (t1, t2):
                raise InputError.single(
                    f"item '{pid}' appears again with other terms ('{t1}' / '{t2}' instead of "
                    f"'{first[C.TERM_1]}' / '{first[C.TERM_2]}' at row "
                    f"{self.pair_rows[self._index[pid]]})",
                    file=self.file,
                    row=row,
                    column=where,
                )
            return pid
        rec = {C.PAIR_ID: pid, C.TERM_1: t1, C.TERM_2: t2}
        for c in PAIR_EXTRAS:
            if c in extras and extras[c] is not None:
                rec[c] = plain(extras[c])
        self._index[pid] = len(self.pairs)
        self.pairs.append(rec)
        self.pair_rows.append(row)
        return pid

    def add_rating(
        self, pid: str, annotator: str, value, *, row: int, rated_at="", comment=""
    ) -> None:
        self.ratings.append(
            {
                C.PAIR_ID: pid,
                C.ANNOTATOR: annotator,
                C.RATING: plain(value),
                C.RATED_AT: iso_time(rated_at),
                C.COMMENT: plain(comment),
            }
        )
        self.rating_rows.append(row)

    def skip(self, reason: str, row: int) -> None:
        self.skipped.append((reason, row))

    # -- validating ------------------------------------------------------------------------
    def validated(self, scale: Scale) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The pairs and ratings frames checked by the contracts; a contract problem is
        reported at the row of the tool's file it came from."""
        if not self.pairs:
            raise InputError.single(f"holds no {self.tool} tasks with two terms", file=self.file)
        if not self.ratings:
            raise InputError.single(
                f"has no ratings to import ({self.skipped_summary() or 'no answers'})",
                file=self.file,
            )
        cols = list(dict.fromkeys(k for rec in self.pairs for k in rec))
        pairs_raw = pd.DataFrame(
            [[rec.get(c, "") for c in cols] for rec in self.pairs], columns=cols, dtype=object
        )
        try:
            pairs = validate_pairs(pairs_raw, self.file)
        except InputError as exc:
            raise _remap(exc, self.pair_rows, self.file) from None
        ratings_raw = pd.DataFrame(self.ratings, dtype=object)
        try:
            ratings = validate_ratings(
                ratings_raw, scale, self.file, known_pairs=set(pairs[C.PAIR_ID])
            )
        except InputError as exc:
            raise _remap(exc, self.rating_rows, self.file) from None
        return pairs, ratings

    def skipped_counts(self) -> dict[str, int]:
        return dict(Counter(reason for reason, _ in self.skipped))

    def skipped_summary(self) -> str:
        return "; ".join(f"{n} {reason}" for reason, n in self.skipped_counts().items())


def _remap(exc: InputError, rows: list[int], file: str) -> InputError:
    """A contract error (rows counted as in a file with a header: data row i is line i + 2)
    with each row replaced by the tool file's row it came from."""
    out = []
    for p in exc.problems:
        row = p.row
        if row is not None and 0 <= row - 2 < len(rows):
            row = rows[row - 2]
        out.append(Problem(p.message, row, p.column))
    return InputError(out, file)


def need(obj: dict, key: str, *, file: str, row: int, where: str):
    """``obj[key]``, or an error naming the missing field."""
    if not isinstance(obj, dict) or key not in obj:
        raise InputError.single(f"has no '{key}' field", file=file, row=row, column=where)
    return obj[key]


def annotator_name(raw, mapping: Mapping) -> str:
    """The annotator name for a tool's user (id, e-mail or name), renamed by the mapping."""
    text = plain(raw).strip()
    return mapping.annotators.get(text, text)
