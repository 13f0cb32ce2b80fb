"""Read a SNOMED CT release in RF2 (Release Format 2): concepts, descriptions, associations.

The files are found under the release folder by their standard names (any sub-folder):

==============  ==================================================================
kind            file name pattern (``Snapshot`` preferred, else ``Full``)
==============  ==================================================================
concept         ``sct2_Concept_Snapshot_*.txt`` / ``sct2_Concept_Full_*.txt``
description     ``sct2_Description_Snapshot-en*.txt`` / ``sct2_Description_Full-en*.txt``
association     ``der2_cRefset_Association*Snapshot_*.txt`` / ``...Full_*.txt``
==============  ==================================================================

Several files of one kind (an edition with extensions) are read together. RF2 files are
UTF-8, tab-separated, with no quoting (a ``"`` is an ordinary character) and CRLF line
ends. Every value is read as a string (identifiers stay exact).

A Full file holds every version of every component; the **current state** of a component
is its row with the latest ``effectiveTime``. A Snapshot already holds only that row; the
same reduction is applied to both, so a Full and a Snapshot of one release read the same.

Files are read with the multi-threaded pyarrow CSV reader (quoting off), which reads the
~3 million rows of an international Full description file in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from data_schemas.errors import InputError, Problem

CONCEPT_COLUMNS = ("id", "effectiveTime", "active", "moduleId")
DESCRIPTION_COLUMNS = ("id", "effectiveTime", "active", "conceptId", "typeId", "term")
ASSOCIATION_COLUMNS = (
    "id",
    "effectiveTime",
    "active",
    "moduleId",
    "refsetId",
    "referencedComponentId",
    "targetComponentId",
)

KINDS = {
    "concept": (("Snapshot", "sct2_Concept_Snapshot_*.txt"), ("Full", "sct2_Concept_Full_*.txt")),
    "description": (
        ("Snapshot", "sct2_Description_Snapshot-en*.txt"),
        ("Full", "sct2_Description_Full-en*.txt"),
    ),
    "association": (
        ("Snapshot", "der2_cRefset_Association*Snapshot_*.txt"),
        ("Full", "der2_cRefset_Association*Full_*.txt"),
    ),
}
_COLUMNS = {
    "concept": CONCEPT_COLUMNS,
    "description": DESCRIPTION_COLUMNS,
    "association": ASSOCIATION_COLUMNS,
}


@dataclass
class Release:
    """The current state of an RF2 release: one row per component id.

    Attributes
    ----------
    concepts : DataFrame
        ``id, effectiveTime, active, moduleId`` (strings; ``active`` is ``"0"``/``"1"``).
    descriptions : DataFrame
        ``id, effectiveTime, active, conceptId, typeId, term``.
    associations : DataFrame
        ``id, effectiveTime, active, moduleId, refsetId, referencedComponentId,
        targetComponentId`` (empty when the release has no association file and none
        was required).
    files : dict
        kind -> list of the files read.
    release_type : dict
        kind -> ``"Snapshot"`` or ``"Full"``.
    """

    concepts: pd.DataFrame
    descriptions: pd.DataFrame
    associations: pd.DataFrame
    files: dict[str, list[Path]] = field(default_factory=dict)
    release_type: dict[str, str] = field(default_factory=dict)


def find_release_files(folder: str | Path) -> dict[str, tuple[str, list[Path]]]:
    """The RF2 files of each kind under *folder*: kind -> (``Snapshot``|``Full``, files).

    Snapshot files are preferred when both are present. Kinds with no file are absent.
    """
    folder = Path(folder)
    found: dict[str, tuple[str, list[Path]]] = {}
    for kind, variants in KINDS.items():
        for release_type, pattern in variants:
            files = sorted(p for p in folder.rglob(pattern) if p.is_file())
            if files:
                found[kind] = (release_type, files)
                break
    return found


def read_release(folder: str | Path, *, need_associations: bool = True, progress=None) -> Release:
    """Read the concepts, descriptions and associations of the release in *folder* and
    reduce each to its current state.

    Parameters
    ----------
    folder : path
        The release folder (Snapshot or Full, files found by name in any sub-folder).
    need_associations : bool
        Whether a missing association refset file is an error.
    progress : callable, optional
        ``progress(description, total)`` returning an object with ``update(n)`` and
        ``close()`` (a tqdm bar, for instance); one step per file read.

    Raises
    ------
    InputError
        The folder does not exist or holds no RF2 file of a needed kind; a file lacks a
        required column, is not UTF-8, has a row with the wrong number of fields, or an
        ``active``/``effectiveTime`` value that is not RF2.
    """
    folder = Path(folder)
    if not folder.exists():
        raise InputError.single("folder not found", file=str(folder))
    if not folder.is_dir():
        raise InputError.single("is a file; give the RF2 release folder", file=str(folder))
    found = find_release_files(folder)
    needed = ["concept", "description"] + (["association"] if need_associations else [])
    missing = [k for k in needed if k not in found]
    if missing:
        problems = [
            Problem(
                f"no RF2 {k} file found in this folder or below (expected "
                f"{KINDS[k][0][1]} or {KINDS[k][1][1]})"
            )
            for k in missing
        ]
        raise InputError(problems, str(folder))
    frames: dict[str, pd.DataFrame] = {}
    total = sum(len(found[k][1]) for k in found)
    bar = progress("read RF2 files", total) if progress else None
    for kind in ("concept", "description", "association"):
        if kind not in found:
            frames[kind] = pd.DataFrame({c: pd.Series(dtype=object) for c in _COLUMNS[kind]})
            continue
        parts = []
        for path in found[kind][1]:
            parts.append(read_rf2_file(path, _COLUMNS[kind]))
            if bar is not None:
                bar.update(1)
        frames[kind] = current_state(
            pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        )
    if bar is not None:
        bar.close()
    return Release(
        frames["concept"],
        frames["description"],
        frames["association"],
        files={k: v[1] for k, v in found.items()},
        release_type={k: v[0] for k, v in found.items()},
    )


def read_rf2_file(path: str | Path, columns) -> pd.DataFrame:
    """Read the *columns* of one RF2 file as strings; raise :class:`InputError` on bad input.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "sct2_Concept_Snapshot_X_1.txt")
    >>> _ = open(p, "w", newline="").write("id\\teffectiveTime\\tactive\\tmoduleId\\r\\n"
    ...                                    "19999999103\\t20200131\\t1\\t9\\r\\n")
    >>> read_rf2_file(p, ("id", "active")).to_dict(orient="records")
    [{'id': '19999999103', 'active': '1'}]
    """
    path = Path(path)
    name = str(path)
    with open(path, "rb") as fh:
        first = fh.readline()
    try:
        header_line = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise InputError.single(
            "is not UTF-8 text; RF2 files are UTF-8", file=name, row=1
        ) from None
    header = header_line.split("\t")
    if not header_line.strip():
        raise InputError.single("is empty: expected an RF2 header row", file=name, row=1)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(
            [
                Problem("required RF2 column is missing from the header", row=1, column=c)
                for c in missing
            ],
            name,
        )
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise InputError.single(
            "column name appears twice in the header", file=name, row=1, column=dupes[0]
        )
    read_options = pacsv.ReadOptions(
        column_names=header, skip_rows=1, use_threads=True, block_size=1 << 24
    )
    parse_options = pacsv.ParseOptions(
        delimiter="\t",
        quote_char=False,
        double_quote=False,
        escape_char=False,
        newlines_in_values=False,
        ignore_empty_lines=True,
    )
    convert_options = pacsv.ConvertOptions(
        column_types={c: pa.string() for c in header},
        include_columns=list(columns),
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    try:
        table = pacsv.read_csv(
            path,
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise _explain_failure(path, len(header), str(exc)) from None
    frame = table.to_pandas()[list(columns)]
    _check_values(frame, name)
    return frame


def _explain_failure(path: Path, width: int, arrow_message: str) -> InputError:
    """Find the line the fast reader stumbled on (only on the error path) and say why."""
    name = str(path)
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                return InputError.single(
                    "is not UTF-8 text; RF2 files are UTF-8", file=name, row=number
                )
            line = line.rstrip("\r\n")
            if number > 1 and line and line.count("\t") + 1 != width:
                return InputError.single(
                    f"has {line.count(chr(9)) + 1} tab-separated fields but the header has {width}",
                    file=name,
                    row=number,
                )
    first = arrow_message.split("\n")[0]
    return InputError.single(f"is not a valid RF2 file ({first})", file=name)


def _check_values(frame: pd.DataFrame, name: str) -> None:
    problems: list[Problem] = []
    if "active" in frame.columns:
        bad = ~frame["active"].isin(["0", "1"])
        for i in bad[bad].index[:5]:
            problems.append(
                Problem(
                    f"active must be 0 or 1, not '{frame.at[i, 'active']}'",
                    row=int(i) + 2,
                    column="active",
                )
            )
    if "effectiveTime" in frame.columns:
        et = frame["effectiveTime"].astype(str)
        bad = ~(et.str.len().eq(8) & et.str.isdigit())
        for i in bad[bad].index[:5]:
            problems.append(
                Problem(
                    f"effectiveTime must be YYYYMMDD, not '{frame.at[i, 'effectiveTime']}'",
                    row=int(i) + 2,
                    column="effectiveTime",
                )
            )
    if "id" in frame.columns:
        bad = frame["id"].astype(str).str.strip().eq("")
        for i in bad[bad].index[:5]:
            problems.append(Problem("id is empty", row=int(i) + 2, column="id"))
    if problems:
        problems.sort(key=lambda p: p.row or 0)
        raise InputError(problems, name)


def current_state(frame: pd.DataFrame) -> pd.DataFrame:
    """Each component's row with the latest ``effectiveTime`` (RF2 dates sort as text).

    When one id has two rows with the same latest date (not valid RF2), the later row in
    the file wins.

    >>> f = pd.DataFrame({"id": ["1", "1", "2"], "effectiveTime": ["20200131", "20190131",
    ...                   "20200131"], "active": ["0", "1", "1"]})
    >>> current_state(f)["active"].tolist()
    ['0', '1']
    """
    if len(frame) == 0:
        return frame.reset_index(drop=True)
    ordered = frame.sort_values(["id", "effectiveTime"], kind="stable")
    return ordered.drop_duplicates("id", keep="last").reset_index(drop=True)
