"""Turn pandera's failure cases into problems that name the row and the column."""

from __future__ import annotations

import re
import warnings

import pandas as pd

# pandera imports pyspark when it is installed (the Spark engine extra); its pandas-version
# notice is not ours to show.
warnings.filterwarnings(
    "ignore", message="PySpark does not yet fully support", category=FutureWarning
)
import pandera.pandas as pa  # noqa: E402
from pandera.errors import SchemaErrors  # noqa: E402

from ._text import N_, tr  # noqa: E402
from .errors import InputError, Problem  # noqa: E402

#: Characters refused in terms, ids and names: C0/C1 control characters (CR, LF, TAB, NUL,
#: ESC, ...), the Unicode line and paragraph separators and the bidirectional embedding,
#: override and isolate controls. A line break in a term would let it escape the HTML block it
#: is drawn in; the bidi controls make text display as something else.
CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

#: The sentence shown for a cell that holds one of :data:`CONTROL_CHARS`.
CONTROL_EXPLANATION = N_(
    "contains a line break, tab or other control character; terms, ids and names must be "
    "one line of printable text"
)


def has_control_chars(text: str) -> bool:
    """Whether *text* holds a character of :data:`CONTROL_CHARS`.

    >>> has_control_chars("fever"), has_control_chars("fever\\n\\n![x](http://e.org/x.png)")
    (False, True)
    """
    return CONTROL_CHARS.search(text) is not None


#: A pandera check refusing :data:`CONTROL_CHARS` (element-wise failures name row and column).
no_control_chars = pa.Check(
    lambda s: ~s.astype(str).str.contains(CONTROL_CHARS), name="no_control_chars"
)


def run_schema(
    schema: pa.DataFrameSchema,
    frame: pd.DataFrame,
    file: str | None,
    explain: dict[str, str],
    limits: dict[str, object] | None = None,
) -> pd.DataFrame:
    """Validate *frame* lazily with *schema*; raise :class:`InputError` listing every failure.

    *explain* maps a check name (or ``column:check``) to the plain sentence shown to people.
    Each sentence is a catalogue message (marked ``N_``), translated here, then formatted with
    the failing ``{value}`` and *limits* (e.g. ``{max_chars}``).
    Rows are reported as file lines: the header is line 1, so frame index ``i`` is line ``i+2``.
    """
    limits = limits or {}
    try:
        return schema.validate(frame, lazy=True)
    except SchemaErrors as exc:
        problems: list[Problem] = []
        cases = exc.failure_cases
        for rec in cases.to_dict(orient="records"):
            check = str(rec.get("check"))
            column = rec.get("column")
            index = rec.get("index")
            failure = rec.get("failure_case")
            if check == "column_in_dataframe":
                problems.append(Problem(tr("required column is missing"), column=str(failure)))
                continue
            base = check.split("(", 1)[0]
            explained = (
                explain.get(f"{column}:{check}")
                or explain.get(f"{column}:{base}")
                or explain.get(check)
            )
            # The sentence in the reader's language, then the failing value put in.
            message = tr(explained) if explained else tr("fails check {check}", check=check)
            shown = "" if failure is None else str(failure)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            message = message.format(value=shown, **limits) if explained else message
            row = int(index) + 2 if index is not None and not pd.isna(index) else None
            problems.append(
                Problem(message, row=row, column=None if column is None else str(column))
            )
        problems.sort(key=lambda p: (p.row is not None, p.row or 0, p.column or ""))
        raise InputError(problems, file) from None
