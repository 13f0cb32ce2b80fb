"""One reader/writer for every contract: CSV, TSV, JSONL and Parquet, chosen by extension.

Readers return a frame of strings (missing cells are ``""``) so that every contract is
validated the same way whatever the file format; the contracts in :mod:`data_schemas`
coerce types and report problems by file, row and column.

Writers are deterministic: the same frame gives a byte-identical file.
"""

from __future__ import annotations

import csv
import io as _io
import json
import math
from pathlib import Path

import pandas as pd

from data_schemas.errors import InputError, Problem

FORMATS = ("csv", "tsv", "jsonl", "parquet")
_EXT = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".txt": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def format_of(path: str | Path, fmt: str | None = None) -> str:
    """The format of *path*: *fmt* when given, else from the extension."""
    if fmt:
        if fmt not in FORMATS:
            raise InputError.single(
                f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}", file=str(path)
            )
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in _EXT:
        raise InputError.single(
            f"cannot tell the format from the extension '{suffix or '(none)'}'; "
            "use .csv, .tsv, .jsonl or .parquet",
            file=str(path),
        )
    return _EXT[suffix]


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer():
            return str(int(value)) if abs(value) < 1e15 else repr(value)
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_table(path: str | Path, fmt: str | None = None) -> pd.DataFrame:
    """Read *path* into a frame of strings; raise :class:`InputError` naming file and row.

    UTF-8 with or without a byte-order mark is accepted; other encodings, ragged rows,
    duplicate or empty header names and unreadable files are clear errors.
    """
    path = Path(path)
    name = str(path)
    kind = format_of(path, fmt)
    if not path.exists():
        raise InputError.single("file not found", file=name)
    if path.is_dir():
        raise InputError.single("is a folder, not a file", file=name)
    if kind == "parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise InputError.single(
                f"not a readable Parquet file ({exc.__class__.__name__}: {exc})", file=name
            ) from None
        out = pd.DataFrame(
            {str(c): [_cell(v) for v in frame[c].tolist()] for c in frame.columns}, dtype=object
        )
        _check_header(list(out.columns), name)
        return out
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError.single(
            f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at line {line}); save it as UTF-8",
            file=name,
            row=line,
        ) from None
    if kind == "jsonl":
        return _read_jsonl(text, name)
    return _read_delimited(text, "," if kind == "csv" else "\t", name)


def _check_header(header: list[str], name: str) -> None:
    seen: set[str] = set()
    for i, col in enumerate(header):
        if col.strip() == "":
            raise InputError.single(f"header column {i + 1} has no name", file=name, row=1)
        if col in seen:
            raise InputError.single(
                "column name appears twice in the header", file=name, row=1, column=col
            )
        seen.add(col)


def _read_delimited(text: str, delimiter: str, name: str) -> pd.DataFrame:
    if "\x00" in text:
        raise InputError.single("contains NUL bytes: not a text table", file=name)
    reader = csv.reader(_io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise InputError.single(
            f"malformed quoting ({exc})", file=name, row=reader.line_num
        ) from None
    # Physical line numbers: csv.reader counts lines; recompute per record for messages.
    if not rows or not any(c.strip() for c in rows[0]):
        raise InputError.single("is empty: expected a header row", file=name, row=1)
    header = [c.strip() for c in rows[0]]
    _check_header(header, name)
    width = len(header)
    records = []
    problems = []
    for i, row in enumerate(rows[1:], start=2):
        if not row or (len(row) == 1 and row[0] == ""):
            continue  # blank line
        if len(row) != width:
            problems.append(Problem(f"has {len(row)} fields but the header has {width}", row=i))
            continue
        records.append(row)
    if problems:
        raise InputError(problems, name)
    return (
        pd.DataFrame(records, columns=header, dtype=object)
        if records
        else pd.DataFrame({c: pd.Series(dtype=object) for c in header})
    )


def _read_jsonl(text: str, name: str) -> pd.DataFrame:
    records = []
    columns: dict[str, None] = {}
    for i, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError.single(f"is not valid JSON ({exc.msg})", file=name, row=i) from None
        if not isinstance(obj, dict):
            raise InputError.single("each line must be a JSON object", file=name, row=i)
        for k in obj:
            columns.setdefault(str(k), None)
        records.append({str(k): _cell(v) for k, v in obj.items()})
    if not records:
        raise InputError.single("is empty: expected one JSON object per line", file=name, row=1)
    cols = list(columns)
    return pd.DataFrame([[r.get(c, "") for c in cols] for r in records], columns=cols, dtype=object)


def write_table(
    frame: pd.DataFrame, path: str | Path, fmt: str | None = None, *, escape_formulas: bool = False
) -> Path:
    """Write *frame* deterministically; with *escape_formulas* guard CSV/TSV cells that a
    spreadsheet would run as a formula (leading ``=``, ``+``, ``-``, ``@``) with a ``'``.

    The file is written to a temporary name and renamed, so it is never half-written.
    """
    path = Path(path)
    kind = format_of(path, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    if kind in ("csv", "tsv"):
        _write_delimited(frame, tmp, "," if kind == "csv" else "\t", escape_formulas)
    elif kind == "jsonl":
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            for rec in frame.to_dict(orient="records"):
                fh.write(
                    json.dumps(
                        {k: _json_value(v) for k, v in rec.items()},
                        ensure_ascii=False,
                        sort_keys=False,
                    )
                )
                fh.write("\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.replace_schema_metadata(None)
        pq.write_table(
            table,
            tmp,
            compression="zstd",
            use_dictionary=True,
            write_statistics=True,
            store_schema=False,
        )
    tmp.replace(path)
    return path


def _text(value) -> str:
    """A cell as text: integers without a decimal point, floats shortest-round-trip,
    missing values empty, timestamps ISO 8601, booleans true/false."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool,)):
        return "true" if value else "false"
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return _cell(value)


def _quote(text: str, delimiter: str) -> str:
    if any(ch in text for ch in (delimiter, '"', "\r", "\n")):
        return '"' + text.replace('"', '""') + '"'
    return text


def _write_delimited(frame: pd.DataFrame, path: Path, delimiter: str, escape: bool) -> None:
    """RFC 4180-style text with "\\n" line ends; a field is quoted when it holds the delimiter,
    a quote, CR or LF (Python's csv module leaves a bare CR unquoted, which loses data)."""
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(delimiter.join(_quote(str(c), delimiter) for c in frame.columns) + "\n")
        columns = [frame[c].tolist() for c in frame.columns]
        for row in zip(*columns):
            cells = []
            for v in row:
                if escape:
                    v = escape_formula(v)
                cells.append(_quote(_text(v), delimiter))
            fh.write(delimiter.join(cells) + "\n")


def _json_value(v):
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def escape_formula(value):
    """Prefix a text cell starting with ``= + - @`` (or tab/CR) by ``'`` so spreadsheets show it.

    Numbers are left alone: ``-0.5`` written by us is data, not a formula.

    >>> escape_formula("=HYPERLINK(1)")
    "'=HYPERLINK(1)"
    >>> escape_formula(-0.5)
    -0.5
    """
    if isinstance(value, str) and value and value[0] in "=+-@\t\r":
        return "'" + value
    return value
