"""Prodigy's ``db-out`` export: JSONL, one annotated task per line.

A line holds the task's own fields (our two terms, optionally ``pair_id``, ``auto_label``,
group columns, here or in ``meta``), ``_input_hash`` (the same input shown to several
annotators has the same hash: it identifies the pair), ``answer`` (``accept``, ``reject`` or
``ignore``), ``_annotator_id`` (else ``_session_id``) and ``_timestamp`` (Unix seconds).

- A **choice** task (``options`` with ``id`` and ``text``, the chosen ids in ``accept``):
  the one accepted option is matched to the scale by its id or text (label or value,
  ignoring case), or through the mapping file's ``values``.
- A **binary** task (no options): ``accept`` / ``reject`` are matched through the mapping
  file's ``values``, by default to the scale's positive / negative value (binary scale:
  ``same`` / ``not_same``).

Not ratings (skipped, counted by reason): ``ignore`` answers; a rejected choice task (the
annotator rejected the question itself); an accepted choice task with no option chosen.
"""

from __future__ import annotations

import json
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
    read_export,
)

ANSWERS = ("accept", "reject", "ignore")


def read_prodigy(
    path: str | Path,
    scale: Scale,
    *,
    term_fields: tuple[str, str] | None = None,
    mapping: Mapping | None = None,
) -> tuple[ToolImport, ValueMatcher]:
    """Read a Prodigy ``db-out`` JSONL file into a :class:`ToolImport` (not yet validated)."""
    path = Path(path)
    name = str(path)
    mapping = mapping or Mapping()
    text = read_export(
        path,
        missing="file not found (Prodigy: the JSONL file of db-out)",
        folder="is a folder; give the JSONL file of prodigy db-out",
    )
    out = ToolImport("Prodigy", name)
    matcher = ValueMatcher(scale, mapping)
    fields = None
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError.single(f"is not valid JSON ({exc.msg})", file=name, row=i) from None
        if not isinstance(task, dict):
            raise InputError.single("each line must be a JSON object", file=name, row=i)
        out.n_tasks += 1
        meta_raw = task.get("meta")
        meta: dict = meta_raw if isinstance(meta_raw, dict) else {}
        merged = {**meta, **task}
        if fields is None:
            fields = pick_term_fields(
                merged.keys(), term_fields, mapping, file=name, row=i, where="(task fields)"
            )
            out.term_fields = fields
        for f in fields:
            if f not in merged:
                raise InputError.single("is missing (the term field)", file=name, row=i, column=f)
        item = need(task, "_input_hash", file=name, row=i, where="_input_hash")
        extras = {c: merged.get(c) for c in (*PAIR_EXTRAS, "pair_id")}
        pid = out.add_pair(
            str(item), merged[fields[0]], merged[fields[1]], extras, row=i, where="_input_hash"
        )
        answer = need(task, "answer", file=name, row=i, where="answer")
        if answer not in ANSWERS:
            raise InputError.single(
                f"must be accept, reject or ignore, not '{answer}'",
                file=name,
                row=i,
                column="answer",
            )
        if answer == "ignore":
            out.skip("ignored answer", i)
            continue
        who = task.get("_annotator_id") or task.get("_session_id")
        if not who:
            raise InputError.single(
                "has neither _annotator_id nor _session_id: cannot tell the annotator",
                file=name,
                row=i,
                column="_annotator_id",
            )
        found = _raw_answer(out, task, answer, scale, mapping, i)
        if found is None:
            continue
        raw, where = found
        try:
            value = matcher.match(raw, shown=answer if where == "answer" else None)
        except ValueError as exc:
            raise InputError.single(str(exc), file=name, row=i, column=where) from None
        out.add_rating(
            pid,
            annotator_name(who, mapping),
            value,
            row=i,
            rated_at=task.get("_timestamp") or "",
        )
    return out, matcher


def _raw_answer(
    out: ToolImport, task: dict, answer: str, scale: Scale, mapping: Mapping, row: int
) -> tuple[object, str] | None:
    """The text to match for task *row* and the column it came from ("accept" for a choice
    task, "answer" for a binary one); ``None`` when the task is skipped (noted in *out*)."""
    name = out.file
    if not task.get("options"):
        return _binary(answer, scale, mapping, name, row), "answer"
    if answer == "reject":
        out.skip("rejected choice task", row)
        return None
    chosen = task.get("accept") or []
    if not chosen:
        out.skip("accepted with no option chosen", row)
        return None
    if len(chosen) != 1:
        raise InputError.single(
            f"holds {len(chosen)} chosen options; one rating needs exactly one",
            file=name,
            row=row,
            column="accept",
        )
    return _option(task["options"], chosen[0], mapping, name, row), "accept"


def _option(options: list, chosen, mapping: Mapping, name: str, row: int):
    """The text to match for the chosen option id: the id when the mapping names it, else
    the option's text."""
    if str(chosen).strip().casefold() in mapping.values:
        return chosen
    for opt in options:
        if isinstance(opt, dict) and str(opt.get("id")) == str(chosen):
            return opt.get("text", chosen)
    raise InputError.single(
        f"chosen option '{chosen}' is not among the task's options",
        file=name,
        row=row,
        column="accept",
    )


def _binary(answer: str, scale: Scale, mapping: Mapping, name: str, row: int):
    if answer in mapping.values:
        return answer
    default = scale.positive if answer == "accept" else scale.negative
    if default is None:
        raise InputError.single(
            f"a binary '{answer}' answer, but the {scale.name} scale has no "
            f"{'positive' if answer == 'accept' else 'negative'} value: map accept and "
            "reject under 'values' in a --mapping file",
            file=name,
            row=row,
            column="answer",
        )
    return Scale.display(default)
