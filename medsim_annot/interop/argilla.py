"""Argilla 2.x datasets, in the two formats its SDK exports.

- **disk** (``dataset.to_disk(FOLDER)``): ``FOLDER/records.json``, a JSON array of records,
  and ``FOLDER/.argilla/settings.json`` (fields, questions, guidelines). A record has ``id``,
  ``fields`` (our two terms), ``metadata`` (optional ``pair_id``, ``auto_label``, groups),
  ``status`` (``pending``/``completed``) and ``responses``: per question name a list of
  ``{"value", "user_id", "status"}``.
- **hub** (``dataset.to_hub(...)``, then the repository's folder, or one of its Parquet
  files): a table with one row per record: ``id``, ``status``, a column per field and per
  metadata property, and per question ``Q.responses`` (values), ``Q.responses.users`` and
  ``Q.responses.status`` (lists in the same order).

The question holding the rating is the mapping file's ``question``; else the only rating or
label (single) question of the settings; else the only question answered. A response
counts when its status is ``submitted`` (or has none); ``discarded`` and ``draft``
responses are not ratings (skipped, counted by reason), nor are records without responses.
User ids are UUIDs: name the annotators with ``annotators`` in a mapping file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from data_schemas.errors import InputError
from data_schemas.scales import Scale

from ._common import (
    PAIR_EXTRAS,
    Mapping,
    ToolImport,
    ValueMatcher,
    annotator_name,
    pick_term_fields,
    read_json,
)

RATING_QUESTIONS = ("rating", "label_selection")
COUNTED = ("submitted", "", None)


def read_argilla(
    path: str | Path,
    scale: Scale,
    *,
    term_fields: tuple[str, str] | None = None,
    mapping: Mapping | None = None,
) -> tuple[ToolImport, ValueMatcher]:
    """Read an Argilla disk or hub export into a :class:`ToolImport` (not yet validated)."""
    path = Path(path)
    mapping = mapping or Mapping()
    if not path.exists():
        raise InputError.single(
            "not found (Argilla: the folder of to_disk or of a to_hub dataset)", file=str(path)
        )
    source, records, fmt, settings = _open_export(path)
    name = str(source)
    out = ToolImport(f"Argilla ({fmt} format)", name)
    matcher = ValueMatcher(scale, mapping)
    question = _question(settings, records, mapping, name)
    fields = None
    for i, rec in enumerate(records, start=1):
        out.n_tasks += 1
        rfields = rec.get("fields") or {}
        if fields is None:
            fields = pick_term_fields(
                rfields.keys(), term_fields, mapping, file=name, row=i, where="fields"
            )
            out.term_fields = fields
        for f in fields:
            if f not in rfields or rfields[f] is None:
                raise InputError.single(
                    "is missing (the term field)", file=name, row=i, column=f"fields.{f}"
                )
        meta = rec.get("metadata") or {}
        extras = {c: meta.get(c, rfields.get(c)) for c in (*PAIR_EXTRAS, "pair_id")}
        item = rec.get("id") or rec.get("_server_id") or i
        pid = out.add_pair(
            str(item), rfields[fields[0]], rfields[fields[1]], extras, row=i, where="id"
        )
        responses = (rec.get("responses") or {}).get(question) or []
        if not responses:
            out.skip("record without responses", i)
            continue
        for j, resp in enumerate(responses):
            _add_response(out, matcher, mapping, pid, resp, i, f"responses.{question}[{j}]")
    return out, matcher


def _open_export(path: Path) -> tuple[Path, list[dict], str, dict]:
    """The records of an Argilla export at *path*: (the file read, its records, "disk" or
    "hub", the dataset settings if found next to it)."""
    settings = _settings(path if path.is_dir() else path.parent)
    if path.is_dir() and (path / "records.json").is_file():
        return path / "records.json", _disk_records(path / "records.json"), "disk", settings
    if path.is_file() and path.suffix.lower() == ".json":
        return path, _disk_records(path), "disk", settings
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    files = [f for f in files if ".argilla" not in f.parts]
    if not files or any(f.suffix.lower() != ".parquet" for f in files):
        raise InputError.single(
            "holds neither records.json (to_disk) nor Parquet files (to_hub)",
            file=str(path),
        )
    for folder in (files[0].parent, files[0].parent.parent):
        settings = settings or _settings(folder)
    source = files[0] if len(files) == 1 else path
    return source, _hub_records(files), "hub", settings


def _add_response(
    out: ToolImport,
    matcher: ValueMatcher,
    mapping: Mapping,
    pid: str,
    resp: dict,
    row: int,
    where: str,
) -> None:
    """Add one response of record *row* to *out* as a rating (skipped when not submitted
    or without a value)."""
    name = out.file
    status = resp.get("status")
    if status not in COUNTED:
        out.skip(f"{status} response", row)
        return
    who = resp.get("user_id")
    if not who:
        raise InputError.single("has no user_id", file=name, row=row, column=where)
    value = resp.get("value")
    if value is None or value == "":
        out.skip("response without a value", row)
        return
    if isinstance(value, list):
        if len(value) != 1:
            raise InputError.single(
                f"holds {len(value)} labels; one rating needs exactly one",
                file=name,
                row=row,
                column=where,
            )
        value = value[0]
    try:
        matched = matcher.match(value)
    except ValueError as exc:
        raise InputError.single(str(exc), file=name, row=row, column=where) from None
    out.add_rating(
        pid,
        annotator_name(who, mapping),
        matched,
        row=row,
        rated_at=resp.get("updated_at") or resp.get("inserted_at") or "",
    )


def _settings(folder: Path) -> dict:
    f = folder / ".argilla" / "settings.json"
    if not f.is_file():
        return {}
    try:
        data = json.loads(f.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError.single(f"is not valid JSON ({exc})", file=str(f)) from None
    return data if isinstance(data, dict) else {}


def _disk_records(file: Path) -> list[dict]:
    data = read_json(file)
    if not isinstance(data, list):
        raise InputError.single("must be a JSON array of Argilla records", file=str(file))
    for i, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise InputError.single("each record must be a JSON object", file=str(file), row=i)
    return data


def _hub_records(files: list[Path]) -> list[dict]:
    """Rows of the hub's flat table back into records (fields, metadata, responses)."""
    rows: list[dict] = []
    for f in files:
        try:
            rows.extend(pq.read_table(f).to_pylist())
        except Exception as exc:  # pyarrow raises many types
            raise InputError.single(
                f"not a readable Parquet file ({exc.__class__.__name__}: {exc})", file=str(f)
            ) from None
    records = []
    for row in rows:
        questions = {k[: -len(".responses")] for k in row if k.endswith(".responses")}
        skip = {"id", "status", "_server_id"}
        responses = {}
        for q in questions:
            values = row.get(f"{q}.responses") or []
            users = row.get(f"{q}.responses.users") or []
            statuses = row.get(f"{q}.responses.status") or [None] * len(values)
            responses[q] = [
                {"value": v, "user_id": u, "status": s}
                for v, u, s in zip(values, users, statuses, strict=False)
            ]
            skip |= {f"{q}.responses", f"{q}.responses.users", f"{q}.responses.status"}
        plain_cols = {k: v for k, v in row.items() if k not in skip and ".suggestion" not in k}
        records.append(
            {
                "id": row.get("id"),
                "_server_id": row.get("_server_id"),
                "status": row.get("status"),
                "fields": plain_cols,
                "metadata": plain_cols,
                "responses": responses,
            }
        )
    return records


def _question(settings: dict, records: list[dict], mapping: Mapping, name: str) -> str:
    answered = sorted({q for r in records for q in (r.get("responses") or {})})
    if mapping.question is not None:
        return mapping.question
    declared = [
        q.get("name")
        for q in settings.get("questions", [])
        if isinstance(q, dict)
        and (q.get("settings") or {}).get("type", q.get("type")) in RATING_QUESTIONS
    ]
    if len(declared) == 1:
        return str(declared[0])
    if len(answered) == 1:
        return str(answered[0])
    if not answered:
        return str(declared[0]) if declared else ""
    raise InputError.single(
        f"has several questions ({', '.join(answered)}); name the rating's with 'question' "
        "in a --mapping file",
        file=name,
        column="responses",
    )
