"""The languages the app speaks, and how a language tag from a person, a browser or a URL
becomes one of them.

``en`` is the source language (the msgids). ``de`` and ``es`` have catalogues. Two pseudo
languages exist for testing only and are never offered in a choice list: ``qps-ploc`` (every
catalogue string accented and wrapped in ``⟦ ⟧``, left to right) and ``qps-plocm`` (the same,
right to left), after Microsoft's pseudo-locale tags. A later Arabic or Hebrew catalogue is
one more entry in :data:`RTL`.
"""

from __future__ import annotations

SOURCE = "en"
#: Languages a person can choose, with their own names (shown in that language).
LANGUAGES: dict[str, str] = {"en": "English", "de": "Deutsch", "es": "Español"}
PSEUDO = "qps-ploc"
PSEUDO_RTL = "qps-plocm"
PSEUDO_LANGUAGES = (PSEUDO, PSEUDO_RTL)
#: Right-to-left languages (``dir="rtl"``).
RTL = frozenset({PSEUDO_RTL, "ar", "he", "fa", "ur"})
ALL = (*LANGUAGES, *PSEUDO_LANGUAGES)


def normalise(tag: object) -> str | None:
    """The supported language for a BCP 47 tag or POSIX locale name (``de-AT`` → ``de``,
    ``es_ES.UTF-8`` → ``es``, ``qps-ploc`` → itself), else ``None``."""
    if not isinstance(tag, str):
        return None
    clean = tag.strip().split(".")[0].replace("_", "-").lower()
    if not clean:
        return None
    if clean in PSEUDO_LANGUAGES:
        return clean
    base = clean.split("-")[0]
    return base if base in LANGUAGES else None


def choose(*candidates: object) -> str:
    """The first candidate that is a supported language, else English."""
    for candidate in candidates:
        lang = normalise(candidate)
        if lang is not None:
            return lang
    return SOURCE


def from_accept_language(header: str | None) -> str | None:
    """The supported language an HTTP ``Accept-Language`` header prefers most, else ``None``."""
    if not header:
        return None
    weighted: list[tuple[float, int, str]] = []
    for i, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        lang = normalise(tag)
        if lang is not None and q > 0:
            weighted.append((-q, i, lang))
    return min(weighted)[2] if weighted else None


def direction(lang: str) -> str:
    """``"rtl"`` or ``"ltr"``: the writing direction of *lang*."""
    return "rtl" if lang in RTL else "ltr"


def formatting_locale(lang: str) -> str:
    """The CLDR locale numbers and dates of *lang* are formatted with (pseudo → English)."""
    return SOURCE if lang in PSEUDO_LANGUAGES else lang
