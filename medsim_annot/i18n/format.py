"""Numbers, percentages and dates written the way the current language writes them (CLDR
data through Babel): ``0,87`` and ``1.200`` in German, ``0.87`` and ``1,200`` in English."""

from __future__ import annotations

import datetime as dt
import math

from babel.dates import format_date, format_datetime
from babel.numbers import format_decimal, format_percent

from .languages import formatting_locale
from .state import current_language

DASH = "—"


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_int(n: int | float | None) -> str:
    """A count with the language's grouping (``1.200``); missing → ``—``."""
    if _missing(n):
        return DASH
    return format_decimal(int(round(float(n))), locale=formatting_locale(current_language()))  # type: ignore[arg-type]


def fmt_decimal(x: float | None, digits: int = 2) -> str:
    """*x* with exactly *digits* decimals (``0,87``); missing → ``—``."""
    if _missing(x):
        return DASH
    pattern = "#,##0." + "0" * digits if digits > 0 else "#,##0"
    return format_decimal(
        float(x),  # type: ignore[arg-type]
        format=pattern,
        locale=formatting_locale(current_language()),
        decimal_quantization=True,
    )


def fmt_percent(share: float | None, digits: int = 0) -> str:
    """A share (0.42) as a percentage (``42 %`` in German, ``42%`` in English)."""
    if _missing(share):
        return DASH
    pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "") + "%"
    loc = formatting_locale(current_language())
    if loc == "de" or loc == "es":
        pattern = pattern[:-1] + "\u00a0%"
    return format_percent(float(share), format=pattern, locale=loc)  # type: ignore[arg-type]


def fmt_date(value: dt.date | dt.datetime | None, *, time: bool = False) -> str:
    """A date (or date and time, to the minute) in the language's medium format."""
    if value is None:
        return DASH
    loc = formatting_locale(current_language())
    if time and isinstance(value, dt.datetime):
        return format_datetime(value, format="medium", locale=loc).rsplit(":", 1)[0]
    day = value.date() if isinstance(value, dt.datetime) else value
    return format_date(day, format="medium", locale=loc)
