"""Visible messages of the data contracts, in the reader's language.

``data_schemas`` imports nothing of the project, so it cannot call the catalogues itself:
it writes ``tr("Column {column} is missing", column=name)`` (or ``trn`` for a plural, ``N_``
to only mark a string), and :mod:`medsim_annot.i18n` installs the real translator on import
(:func:`install`). Without it (``data_schemas`` used alone) messages stay English.
"""

from __future__ import annotations

from collections.abc import Callable


def _english(message: str, /, **values: object) -> str:
    return message.format(**values) if values else message


def _english_plural(singular: str, plural: str, n: int, /, **values: object) -> str:
    return _english(singular if n == 1 else plural, **values)


_translate: Callable[..., str] = _english
_translate_plural: Callable[..., str] = _english_plural


def install(translate: Callable[..., str], translate_plural: Callable[..., str]) -> None:
    """Use *translate* (``t``) and *translate_plural* (``tn``) for every message from now on."""
    global _translate, _translate_plural
    _translate, _translate_plural = translate, translate_plural


def tr(message: str, /, **values: object) -> str:
    """*message* in the current language, formatted with *values*."""
    return _translate(message, **values)


def trn(singular: str, plural: str, n: int, /, **values: object) -> str:
    """The plural form of *singular*/*plural* for *n* in the current language, formatted."""
    return _translate_plural(singular, plural, n, **values)


def N_(message: str) -> str:  # noqa: N802 - the gettext convention
    """Mark *message* for the catalogue without translating it now."""
    return message
