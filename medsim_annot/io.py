"""One reader/writer for every contract: CSV, TSV, JSONL and Parquet, chosen by extension
(and Excel workbooks, ``.xlsx``, read only).

Readers return a frame of strings (missing cells are ``""``) so that every contract is
validated the same way whatever the file format; the contracts in :mod:`data_schemas`
coerce types and report problems by file, row and column.

Writers are deterministic: the same frame gives a byte-identical file. Every CSV/TSV the
app, the CLI and the builders produce — files and browser downloads — is written here, with
spreadsheet formulas escaped in every cell, header and index included (:func:`escape_formula`).

The formats and their file extensions are one registry (:data:`EXTENSIONS`); uploaders,
format options and folder scans read it (:func:`upload_types`, :func:`format_of`,
:func:`delimiter_of`). A new format is one entry there plus its reader and writer below.
"""

from __future__ import annotations

import contextlib
import csv
import io as _io
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from data_schemas.errors import InputError, Problem
from data_schemas.options import either
from medsim_annot.i18n import t

#: Every table format and the file extensions that select it (the first one is the one we
#: write and offer in uploaders).
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "csv": (".csv",),
    "tsv": (".tsv", ".tab", ".txt"),
    "jsonl": (".jsonl", ".ndjson", ".json"),
    "parquet": (".parquet", ".pq"),
}
FORMATS = tuple(EXTENSIONS)
#: Formats we read but never write: an Excel workbook's first sheet (openpyxl).
READ_ONLY_EXTENSIONS: dict[str, tuple[str, ...]] = {"xlsx": (".xlsx", ".xlsm")}
#: Every format a table can be read from (the uploaders of input files offer these).
READ_FORMATS = (*FORMATS, *READ_ONLY_EXTENSIONS)
_ALL_EXTENSIONS = {**EXTENSIONS, **READ_ONLY_EXTENSIONS}
#: The delimiter of each delimited text format.
DELIMITERS = {"csv": ",", "tsv": "\t"}
_EXT = {ext: fmt for fmt, exts in EXTENSIONS.items() for ext in exts}


#: How help texts name each format.
FORMAT_NAMES = {
    "csv": "CSV",
    "tsv": "TSV",
    "jsonl": "JSONL",
    "parquet": "Parquet",
    "xlsx": "Excel",
}


def formats_text(formats: tuple[str, ...] = FORMATS) -> str:
    """*formats* as help texts name them.

    >>> formats_text()
    'CSV, TSV, JSONL or Parquet'
    """
    return either(tuple(FORMAT_NAMES[f] for f in formats), quote=False)


def extensions_text(formats: tuple[str, ...] = FORMATS) -> str:
    """The extension we write for each of *formats*, as help and error texts list them.

    >>> extensions_text()
    '.csv, .tsv, .jsonl or .parquet'
    """
    return either(tuple(_ALL_EXTENSIONS[f][0] for f in formats), quote=False)


def upload_types(formats: tuple[str, ...] = FORMATS) -> list[str]:
    """File-uploader types (extensions without the dot) of *formats*.

    >>> upload_types()
    ['csv', 'tsv', 'jsonl', 'parquet']
    """
    return [e.lstrip(".") for f in formats for e in _ALL_EXTENSIONS[f][:1]]


def suffixes(formats: tuple[str, ...] = FORMATS) -> tuple[str, ...]:
    """Every extension (with the dot) that selects one of *formats*.

    >>> suffixes(("csv", "tsv"))
    ('.csv', '.tsv', '.tab', '.txt')
    """
    return tuple(e for f in formats for e in _ALL_EXTENSIONS[f])


def delimiter_of(path: str | Path) -> str | None:
    """The delimiter of a CSV/TSV *path* by its extension, None for other formats.

    >>> delimiter_of("x.tab") == "\\t", delimiter_of("x.parquet")
    (True, None)
    """
    return DELIMITERS.get(_EXT.get(Path(path).suffix.lower(), ""))


def format_of(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of *path*: *fmt* when given, else from the extension."""
    if fmt:
        if fmt not in FORMATS:
            raise InputError.single(
                t(
                    "unknown format '{format}'; use one of {formats}",
                    format=fmt,
                    formats=", ".join(FORMATS),
                ),
                file=str(path),
            )
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in _EXT:
        raise InputError.single(
            t(
                "cannot tell the format from the extension '{extension}'; use {extensions}",
                extension=suffix or t("(none)"),
                extensions=extensions_text(),
            ),
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


def read_table(path: str | os.PathLike[str], fmt: str | None = None) -> pd.DataFrame:
    """Read *path* into a frame of strings; raise :class:`InputError` naming file and row.

    An Excel workbook (``.xlsx``) is read from its first sheet, rows numbered as the sheet
    numbers them. UTF-8 with or without a byte-order mark is accepted; other encodings, ragged rows,
    duplicate or empty header names and unreadable files are clear errors.
    """
    path = Path(path)
    name = str(path)
    workbook = not fmt and path.suffix.lower() in suffixes(tuple(READ_ONLY_EXTENSIONS))
    kind = "xlsx" if workbook else format_of(path, fmt)
    if not path.exists():
        raise InputError.single(t("file not found"), file=name)
    if path.is_dir():
        raise InputError.single(t("is a folder, not a file"), file=name)
    if kind == "xlsx":
        return _read_xlsx(path, name)
    if kind == "parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise InputError.single(
                t(
                    "not a readable Parquet file ({error})",
                    error=f"{exc.__class__.__name__}: {exc}",
                ),
                file=name,
            ) from None
        out = pd.DataFrame(
            {str(c): [_cell(v) for v in frame[c].tolist()] for c in frame.columns}, dtype=object
        )
        _check_header(list(out.columns), name)
        return out
    raw = path.read_bytes()
    _not_a_spreadsheet(raw, kind, name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError.single(
            t(
                "is not UTF-8 text (byte {byte} at line {line}); save it as UTF-8",
                byte=f"0x{raw[exc.start]:02x}",
                line=line,
            ),
            file=name,
            row=line,
        ) from None
    if kind == "jsonl":
        return _read_jsonl(text, name)
    if kind == "csv":
        _not_semicolon_separated(text, name)
    return _read_delimited(text, "," if kind == "csv" else "\t", name)


#: How Excel workbooks begin: .xlsx is a ZIP archive, .xls an OLE2 compound file.
_WORKBOOK_MAGIC = {
    b"PK\x03\x04": ".xlsx",
    b"\xd0\xcf\x11\xe0": ".xls",
}


def _xlsx_cell(value) -> str:
    """A workbook cell as text: dates as ISO 8601, numbers and truth values as in the other
    readers (:func:`_cell`)."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return _cell(value).strip() if isinstance(value, str) else _cell(value)


def _read_xlsx(path: Path, name: str) -> pd.DataFrame:
    """The first sheet of an Excel workbook: its first row is the header; a row's number
    in a problem is the sheet's own (header row 1). Formulas count by the value Excel last
    computed; an empty row is skipped; a value under no header is a problem of its row."""
    import openpyxl  # ~0.15 s: only when a workbook is read (tests/test_layers.py)

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # zipfile, KeyError, InvalidFileException...
        raise InputError.single(
            t(
                "not a readable Excel workbook ({error})",
                error=f"{exc.__class__.__name__}: {exc}",
            ),
            file=name,
        ) from None
    try:
        sheet = book.worksheets[0] if book.worksheets else None
        rows = list(sheet.iter_rows(values_only=True)) if sheet is not None else []
    finally:
        book.close()
    if not rows or not any(v is not None and str(v).strip() for v in rows[0]):
        raise InputError.single(
            t("is empty: expected a header row on its first sheet"), file=name, row=1
        )
    header = [_xlsx_cell(v).strip() for v in rows[0]]
    while header and header[-1] == "":
        header.pop()  # columns past the last named one (formatting left in the sheet)
    _check_header(header, name)
    width = len(header)
    records, problems = [], []
    for i, row in enumerate(rows[1:], start=2):
        cells = [_xlsx_cell(v) for v in row]
        if not any(c.strip() for c in cells):
            continue
        beyond = [j for j, c in enumerate(cells[width:], start=width + 1) if c.strip()]
        if beyond:
            problems.append(
                Problem(t("has a value in column {n}, which has no header", n=beyond[0]), row=i)
            )
            continue
        records.append((cells + [""] * width)[:width])
    if problems:
        raise InputError(problems, name)
    return (
        pd.DataFrame(records, columns=header, dtype=object)
        if records
        else pd.DataFrame({c: pd.Series(dtype=object) for c in header})
    )


def _not_a_spreadsheet(raw: bytes, kind: str, name: str) -> None:
    """Name the commonest wrong file: a workbook saved with a text file's extension."""
    for magic, what in _WORKBOOK_MAGIC.items():
        if raw.startswith(magic):
            raise InputError.single(
                t(
                    "is an Excel workbook ({extension}), not a {kind} text file (renaming a "
                    "workbook does not convert it). Use the workbook under its own name "
                    "(.xlsx), or in Excel choose File > Save As > 'CSV UTF-8 (Comma "
                    "delimited)'.",
                    extension=what,
                    kind=kind.upper(),
                ),
                file=name,
            )


def _not_semicolon_separated(text: str, name: str) -> None:
    """A CSV file whose header splits on semicolons but not on commas was written by a
    spreadsheet set to a locale with decimal commas: say so rather than 'column missing'."""
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    if ";" in first and "," not in first:
        raise InputError.single(
            t(
                "separates its columns with semicolons (;), not commas: save it as 'CSV UTF-8 "
                "(Comma delimited)', or as tab-separated text with the extension .tsv"
            ),
            file=name,
            row=1,
        )


def _check_header(header: list[str], name: str) -> None:
    seen: set[str] = set()
    for i, col in enumerate(header):
        if col.strip() == "":
            raise InputError.single(t("header column {n} has no name", n=i + 1), file=name, row=1)
        if col in seen:
            raise InputError.single(
                t("column name appears twice in the header"), file=name, row=1, column=col
            )
        seen.add(col)


def _read_delimited(text: str, delimiter: str, name: str) -> pd.DataFrame:
    if "\x00" in text:
        raise InputError.single(t("contains NUL bytes: not a text table"), file=name)
    reader = csv.reader(_io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise InputError.single(
            t("malformed quoting ({error})", error=exc), file=name, row=reader.line_num
        ) from None
    # Physical line numbers: csv.reader counts lines; recompute per record for messages.
    if not rows or not any(c.strip() for c in rows[0]):
        raise InputError.single(t("is empty: expected a header row"), file=name, row=1)
    header = [unescape_formula(c.strip()) for c in rows[0]]
    _check_header(header, name)
    width = len(header)
    records = []
    problems = []
    for i, row in enumerate(rows[1:], start=2):
        if not row or (len(row) == 1 and row[0] == ""):
            continue  # blank line
        if len(row) != width:
            problems.append(
                Problem(
                    t(
                        "has {n} fields but the header has {width}",
                        n=len(row),
                        width=width,
                    ),
                    row=i,
                )
            )
            continue
        records.append([unescape_formula(c) if c[:1] == "'" else c for c in row])
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
            raise InputError.single(
                t("is not valid JSON ({error})", error=exc.msg), file=name, row=i
            ) from None
        if not isinstance(obj, dict):
            raise InputError.single(t("each line must be a JSON object"), file=name, row=i)
        for k in obj:
            columns.setdefault(str(k), None)
        records.append({str(k): _cell(v) for k, v in obj.items()})
    if not records:
        raise InputError.single(t("is empty: expected one JSON object per line"), file=name, row=1)
    cols = list(columns)
    return pd.DataFrame([[r.get(c, "") for c in cols] for r in records], columns=cols, dtype=object)


def write_table(frame: pd.DataFrame, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """Write *frame* deterministically. CSV and TSV cells that a spreadsheet would run as a
    formula (leading ``=``, ``+``, ``-``, ``@``; header cells too) get a leading ``'``
    (:func:`escape_formula`); JSON Lines and Parquet carry data and are written verbatim.

    The file is written to a temporary name and renamed, so it is never half-written.
    """
    path = Path(path)
    kind = format_of(path, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_target(path) as tmp:
        _write_table_to(frame, tmp, kind)
    return path


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary name beside *path* (``NAME.part``) to write to; renamed to *path* when the
    block ends without an error, removed when it raises: *path* is never half-written.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_target(Path(d) / "a.txt") as tmp:
    ...         _ = tmp.write_text("x")
    ...     sorted(p.name for p in Path(d).iterdir())
    ['a.txt']
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    try:
        yield tmp
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write *data* (text as UTF-8) to *path* through :func:`atomic_target`."""
    path = Path(path)
    with atomic_target(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _write_table_to(frame: pd.DataFrame, tmp: Path, kind: str) -> None:
    if kind in DELIMITERS:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            _write_delimited(frame, fh, DELIMITERS[kind])
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


def table_bytes(frame: pd.DataFrame, fmt: str = "csv", *, index: bool = False) -> bytes:
    """*frame* as UTF-8 CSV or TSV bytes for a download button, written exactly as
    :func:`write_table` writes files (formulas escaped in every cell, header included); with
    *index*, the index comes first as columns (its names escaped like any header cell).

    >>> table_bytes(pd.DataFrame({"=name": ["@x", "-0.5", "ok"]}))
    b"'=name\\n'@x\\n-0.5\\nok\\n"
    """
    if fmt not in DELIMITERS:
        raise ValueError(f"downloads are CSV or TSV, not '{fmt}'")
    if index:
        names = [n if n is not None else "" for n in frame.index.names]
        frame = frame.reset_index(names=names)
    buf = _io.StringIO(newline="")
    _write_delimited(frame, buf, DELIMITERS[fmt])
    return buf.getvalue().encode("utf-8")


def _write_delimited(frame: pd.DataFrame, fh, delimiter: str) -> None:
    """RFC 4180-style text with "\\n" line ends, formulas escaped in every cell (header
    included); a field is quoted when it holds the delimiter, a quote, CR or LF (Python's csv
    module leaves a bare CR unquoted, which loses data)."""
    fh.write(
        delimiter.join(_quote(_text(escape_formula(str(c))), delimiter) for c in frame.columns)
        + "\n"
    )
    columns = [frame.iloc[:, j].tolist() for j in range(frame.shape[1])]
    for row in zip(*columns):
        fh.write(delimiter.join(_quote(_text(escape_formula(v)), delimiter) for v in row) + "\n")


def _json_value(v):
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


_NEGATIVE_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|-inf")
_ESCAPED = re.compile(r"'+[=+\-@\t\r]")


def escape_formula(value):
    """Prefix a text cell starting with ``= + - @`` (or tab/CR) by ``'`` so spreadsheets show it.

    Numbers are left alone, also as text: ``-0.5`` written by us is data, not a formula. A
    text that already looks escaped (``'=x``) gets one more ``'``, so that
    :func:`unescape_formula` (which the CSV/TSV reader applies) gives back exactly what was
    written: the round trip loses nothing.

    >>> escape_formula("=HYPERLINK(1)")
    "'=HYPERLINK(1)"
    >>> escape_formula(-0.5), escape_formula("-0.5"), escape_formula("-1+A1"), escape_formula("'=x")
    (-0.5, '-0.5', "'-1+A1", "''=x")
    """
    if not isinstance(value, str) or not value:
        return value
    if value[0] in "=+-@\t\r" and not _NEGATIVE_NUMBER.fullmatch(value):
        return "'" + value
    if value[0] == "'" and _ESCAPED.match(value):
        return "'" + value
    return value


def unescape_formula(text: str) -> str:
    """The text :func:`escape_formula` was given, from what it wrote.

    >>> unescape_formula("'=HYPERLINK(1)"), unescape_formula("''=x"), unescape_formula("'ok")
    ('=HYPERLINK(1)', "'=x", "'ok")
    """
    return text[1:] if text[:1] == "'" and _ESCAPED.match(text) else text
