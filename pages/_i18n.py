"""A page's language: the person's own choice (kept in the session at sign-in from the store,
or chosen on their page), else the browser's (``st.context.locale``), else English.

``app.py`` calls :func:`apply` on every run, before any text is written: it sets the language
of :mod:`medsim_annot.i18n` (``t()``, ``tn()`` and the number formats then follow it) and
``<html lang dir>``. Callbacks and fragments, which run without ``app.py``, call
:func:`use_page_language` first (``_ui.requires`` does it for every guarded one).
"""

from __future__ import annotations

from contextvars import ContextVar

import streamlit as st

from medsim_annot import i18n
from pages.components.document_language import document_language

#: Session key of the person's own language (a language code), when they have one.
LANGUAGE_KEY = "medsim_language"
#: The language :func:`apply` gave ``<html lang>`` in this script run (``None``: not yet, as
#: in a widget callback, which runs before the script).
_APPLIED: ContextVar[str | None] = ContextVar("medsim_language_applied", default=None)


def browser_language() -> str | None:
    """The supported language of the browser's locale, if it is one."""
    return i18n.normalise(st.context.locale)


def page_language() -> str:
    """The language this session's pages are in now."""
    return i18n.choose(st.session_state.get(LANGUAGE_KEY), browser_language())


def use_page_language() -> str:
    """Set :func:`page_language` as the language of the code running now; returns it."""
    return i18n.set_language(page_language())


def set_person_language(lang: str | None) -> None:
    """Keep *lang* (or none: the browser's) as this session's language from now on."""
    chosen = i18n.normalise(lang)
    if chosen is None:
        st.session_state.pop(LANGUAGE_KEY, None)
    else:
        st.session_state[LANGUAGE_KEY] = chosen
    use_page_language()


def apply() -> str:
    """:func:`use_page_language` and ``<html lang dir>`` for it; returns the language."""
    lang = use_page_language()
    document_language(lang, i18n.direction(lang))
    _APPLIED.set(lang)
    return lang


def applied_language() -> str | None:
    """The language ``<html lang>`` got in this script run (``None`` before :func:`apply`)."""
    return _APPLIED.get()
