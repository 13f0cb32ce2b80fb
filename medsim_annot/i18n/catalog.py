"""The message catalogues: gettext ``.po`` files per language and area under
``medsim_annot/locale/<lang>/LC_MESSAGES/<area>.po`` (areas: :mod:`.areas`), compiled to ``.mo``
by ``make messages`` (``make run`` and ``make test`` do it). A catalogue whose ``.mo`` is
missing or older than its ``.po`` is read from the ``.po`` itself, so a fresh checkout works
with no step at all. Every area of a language is merged into one set of translations."""

from __future__ import annotations

import functools
import gettext
import io
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

from .languages import PSEUDO_LANGUAGES, SOURCE
from .pseudo import pseudo

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN_DIR = "LC_MESSAGES"


def po_files(lang: str) -> list[Path]:
    """The ``.po`` files of *lang*, one per area, in name order."""
    return sorted((LOCALE_DIR / lang / DOMAIN_DIR).glob("*.po"))


def _load(po: Path) -> Translations:
    mo = po.with_suffix(".mo")
    if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
        with mo.open("rb") as fp:
            return Translations(fp, domain=po.stem)
    with po.open("rb") as fp:
        catalog = read_po(fp, locale=po.parent.parent.name)
    buf = io.BytesIO()
    write_mo(buf, catalog, use_fuzzy=False)
    buf.seek(0)
    return Translations(buf, domain=po.stem)


class _Pseudo(gettext.NullTranslations):
    """Every message accented and wrapped (the English plural rule)."""

    def gettext(self, message: str) -> str:
        return pseudo(message)

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        return pseudo(msgid1 if n == 1 else msgid2)

    def pgettext(self, context: str, message: str) -> str:
        return pseudo(message)


@functools.cache
def translations(lang: str) -> gettext.NullTranslations:
    """The merged translations of *lang* (loaded once per process)."""
    if lang in PSEUDO_LANGUAGES:
        return _Pseudo()
    if lang == SOURCE:
        return gettext.NullTranslations()
    merged: Translations | None = None
    for po in po_files(lang):
        part = _load(po)
        if merged is None:
            merged = part
        else:
            merged.merge(part)
    return merged if merged is not None else gettext.NullTranslations()
