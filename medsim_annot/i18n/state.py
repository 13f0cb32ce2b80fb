"""The language of the code running now: a context variable, English unless a page (or the
ratings endpoint) sets the person's language for the request it serves. The command line
never sets it, so it stays English."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from .languages import SOURCE, choose

_CURRENT: ContextVar[str] = ContextVar("medsim_language", default=SOURCE)


def current_language() -> str:
    """The language messages are translated into now."""
    return _CURRENT.get()


def set_language(lang: str | None) -> str:
    """Make *lang* (any tag; unsupported → English) the language from now on in this context;
    returns the language set."""
    chosen = choose(lang)
    _CURRENT.set(chosen)
    return chosen


@contextlib.contextmanager
def language(lang: str | None) -> Iterator[str]:
    """*lang* for the duration of a ``with`` block, then the previous language again."""
    token = _CURRENT.set(choose(lang))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)
