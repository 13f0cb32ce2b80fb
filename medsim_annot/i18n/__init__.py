"""Every word a person sees, in their language (English, German, Spanish).

Messages are gettext catalogues read with Babel (:mod:`.catalog`; ``make messages`` extracts,
updates and compiles them, see docs/i18n.md). In code, a visible string is written as

- ``t("Rated pairs")`` or ``t("Pair {n} of {total}", n=..., total=...)`` — translated into the
  current language (:func:`~.state.current_language`), then ``str.format``-ed with the keywords;
- ``tn("{n} pair", "{n} pairs", count, n=fmt_int(count))`` — the plural form the language needs;
- ``N_("…")`` — marked for the catalogue but translated later with ``t(text)`` (module-level
  constants, defaults of data models).

Numbers inside messages are formatted first with :func:`fmt_int`, :func:`fmt_decimal`,
:func:`fmt_percent`, :func:`fmt_date`. The command line and logs stay English: nothing sets a
language there. This package never imports streamlit; ``pages/_i18n.py`` decides a page's
language and sets it here.
"""

from __future__ import annotations

from data_schemas import _text

from .catalog import translations
from .format import DASH, fmt_date, fmt_decimal, fmt_int, fmt_percent
from .languages import (
    LANGUAGES,
    PSEUDO,
    PSEUDO_RTL,
    SOURCE,
    choose,
    direction,
    from_accept_language,
    normalise,
)
from .state import current_language, language, set_language

__all__ = [
    "DASH",
    "LANGUAGES",
    "N_",
    "PSEUDO",
    "PSEUDO_RTL",
    "SOURCE",
    "choose",
    "current_language",
    "direction",
    "fmt_date",
    "fmt_decimal",
    "fmt_int",
    "fmt_percent",
    "from_accept_language",
    "language",
    "normalise",
    "set_language",
    "t",
    "tn",
]


def N_(message: str) -> str:  # noqa: N802 - the gettext convention
    """Mark *message* for the catalogue without translating it now."""
    return message


def t(message: str, /, **values: object) -> str:
    """*message* in the current language, formatted with *values* when any are given."""
    text = translations(current_language()).gettext(message)
    return text.format(**values) if values else text


def tn(singular: str, plural: str, n: int, /, **values: object) -> str:
    """The form of *singular*/*plural* the current language uses for *n*, formatted with
    *values* (pass the formatted count yourself, e.g. ``n=fmt_int(n)``)."""
    text = translations(current_language()).ngettext(singular, plural, n)
    return text.format(**values) if values else text


# The data contracts (data_schemas, which imports nothing of ours) translate through these.
_text.install(t, tn)
