"""Label Studio's JSON export (Export → JSON): a JSON array of tasks.

Each task has ``id``, ``data`` (the fields the labeling config shows: our two terms, and
optionally ``pair_id``, ``auto_label``, group columns) and ``annotations``; each annotation
has ``completed_by`` (a user id, or an object with ``id``/``email``), ``was_cancelled``
(the annotator pressed *Skip*), ``created_at``/``updated_at`` and ``result``: a list of
regions, each with ``from_name`` (the control's name), ``type`` and ``value``. A rating is a
``choices`` result (``value.choices``, exactly one), a ``rating`` result (``value.rating``)
or a ``number`` result (``value.number``); a ``textarea`` result becomes the comment.
Optional ``meta`` fields of the task are read like ``data`` for auto labels and groups.

Not ratings (skipped, counted by reason): cancelled annotations, annotations without a
choice or rating, tasks without annotations. ``predictions`` are a model's, never read.
"""

from __future__ import annotations

from pathlib import Path

from data_schemas.errors import InputError
from data_schemas.scales import Scale

from ._common import (
    PAIR_EXTRAS,
    Mapping,
    ToolImport,
    ValueMatcher,
    annotator_name,
    need,
    pick_term_fields,
    read_json,
)

RATING_TYPES = {"choices": "choices", "rating": "rating", "number": "number"}


def read_labelstudio(
    path: str | Path,
    scale: Scale,
    *,
    term_fields: tuple[str, str] | None = None,
    mapping: Mapping | None = None,
) -> tuple[ToolImport, ValueMatcher]:
    """Read a Label Studio JSON export into a :class:`ToolImport` (not yet validated)."""
    path = Path(path)
    name = str(path)
    mapping = mapping or Mapping()
    tasks = read_json(
        path,
        missing="file not found (Label Studio: the JSON export file)",
        folder="is a folder; give the JSON export file",
    )
    if not isinstance(tasks, list):
        raise InputError.single(
            "is not a Label Studio JSON export (expected a JSON array of tasks)", file=name
        )
    out = ToolImport("Label Studio", name)
    matcher = ValueMatcher(scale, mapping)
    fields = None
    for i, task in enumerate(tasks, start=1):
        if not isinstance(task, dict):
            raise InputError.single("each task must be a JSON object", file=name, row=i)
        out.n_tasks += 1
        data = need(task, "data", file=name, row=i, where="data")
        if not isinstance(data, dict):
            raise InputError.single("must be an object", file=name, row=i, column="data")
        if fields is None:
            fields = pick_term_fields(
                data.keys(), term_fields, mapping, file=name, row=i, where="data"
            )
            out.term_fields = fields
        for f in fields:
            if f not in data:
                raise InputError.single(
                    "is missing (the term field)", file=name, row=i, column=f"data.{f}"
                )
        meta_raw = task.get("meta")
        meta: dict = meta_raw if isinstance(meta_raw, dict) else {}
        extras = {c: data.get(c, meta.get(c)) for c in (*PAIR_EXTRAS, "pair_id")}
        item = task.get("id", i)
        pid = out.add_pair(str(item), data[fields[0]], data[fields[1]], extras, row=i, where="data")
        annotations = task.get("annotations") or []
        if not annotations:
            out.skip("task without annotations", i)
            continue
        for j, ann in enumerate(annotations):
            _add_annotation(out, matcher, mapping, pid, ann, i, f"annotations[{j}]")
    return out, matcher


def _add_annotation(
    out: ToolImport,
    matcher: ValueMatcher,
    mapping: Mapping,
    pid: str,
    ann,
    row: int,
    where: str,
) -> None:
    """Add one annotation of task *row* to *out* as a rating (skipped when cancelled or
    without a choice or rating)."""
    name = out.file
    if not isinstance(ann, dict):
        raise InputError.single("must be an object", file=name, row=row, column=where)
    if ann.get("was_cancelled"):
        out.skip("cancelled (skipped) annotation", row)
        return
    who = ann.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    if who is None or who == "":
        raise InputError.single(
            "has no annotator", file=name, row=row, column=f"{where}.completed_by"
        )
    raw, comment = _answer(ann.get("result") or [], mapping, name, row, where)
    if raw is None:
        out.skip("annotation without a choice or rating", row)
        return
    try:
        value = matcher.match(raw)
    except ValueError as exc:
        raise InputError.single(str(exc), file=name, row=row, column=f"{where}.result") from None
    out.add_rating(
        pid,
        annotator_name(who, mapping),
        value,
        row=row,
        rated_at=ann.get("updated_at") or ann.get("created_at") or "",
        comment=comment,
    )


def _answer(result: list, mapping: Mapping, name: str, row: int, where: str):
    """The one rating of an annotation's result list (or ``None``) and its comment."""
    found = []
    comments: list[str] = []
    for k, region in enumerate(result):
        if not isinstance(region, dict):
            continue
        kind = region.get("type")
        value = region.get("value") or {}
        if kind == "textarea":
            comments.extend(str(t) for t in value.get("text", []))
            continue
        if kind not in RATING_TYPES:
            continue
        if mapping.question is not None and region.get("from_name") != mapping.question:
            continue
        key = RATING_TYPES[kind]
        if key not in value:
            raise InputError.single(
                f"a {kind} result without value.{key}",
                file=name,
                row=row,
                column=f"{where}.result[{k}]",
            )
        answer = value[key]
        if isinstance(answer, list):
            if len(answer) != 1:
                raise InputError.single(
                    f"holds {len(answer)} choices; one rating needs exactly one",
                    file=name,
                    row=row,
                    column=f"{where}.result[{k}].value.{key}",
                )
            answer = answer[0]
        found.append((region.get("from_name"), answer, k))
    if len({q for q, _, _ in found}) > 1:
        names = ", ".join(sorted({str(q) for q, _, _ in found}))
        raise InputError.single(
            f"answers several questions ({names}); name the rating's with 'question' in a "
            "--mapping file",
            file=name,
            row=row,
            column=f"{where}.result",
        )
    if not found:
        return None, " ".join(comments)
    return found[-1][1], " ".join(comments)
