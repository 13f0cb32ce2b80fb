"""Extract, update, compile and check the catalogues (``make messages``, ``make
messages-check``; ``tools/i18n.py`` is the command). Strings are found where the code marks
them: ``t("…")``, ``tn("…", "…", n)`` and ``N_("…")`` (Babel's Python extractor), in every
source file of :data:`.areas.SOURCES` but the command line's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from .areas import EXCLUDED, SOURCES, area_of, names
from .catalog import DOMAIN_DIR, LOCALE_DIR
from .languages import LANGUAGES, SOURCE

ROOT = LOCALE_DIR.parent.parent
#: ``t``/``tn``/``N_`` (medsim_annot.i18n) and ``tr``/``trn`` (data_schemas/_text.py).
KEYWORDS: dict[str, tuple[int, ...] | None] = {
    "t": None,
    "tn": (1, 2),
    "N_": None,
    "tr": None,
    "trn": (1, 2),
}
PROJECT = "medsim-annot"
_PLACEHOLDER = re.compile(r"\{([^{}:!]*)[^{}]*\}")


def source_files() -> list[Path]:
    """Every Python source scanned for messages, in path order."""
    files: list[Path] = []
    for entry in SOURCES:
        path = ROOT / entry
        found = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for f in found:
            rel = f.relative_to(ROOT).as_posix()
            if "__pycache__" in rel or any(fnmatch(rel, p) for p in EXCLUDED):
                continue
            files.append(f)
    return files


def extract() -> dict[str, Catalog]:
    """A template catalogue per area, from the sources as they are now."""
    templates = {area: Catalog(project=PROJECT, locale=None) for area in names()}
    for path in source_files():
        rel = path.relative_to(ROOT).as_posix()
        cat = templates[area_of(rel)]
        for lineno, message, comments, context in extract_from_file(
            "python",
            str(path),
            keywords=KEYWORDS,  # type: ignore[arg-type]
            comment_tags=("Translators:",),
            strip_comment_tags=True,
        ):
            cat.add(message, None, [(rel, lineno)], auto_comments=comments, context=context)
    return templates


def po_path(lang: str, area: str) -> Path:
    return LOCALE_DIR / lang / DOMAIN_DIR / f"{area}.po"


def _write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fp:
        write_po(
            fp, catalog, width=100, sort_output=True, include_lineno=False, ignore_obsolete=True
        )


def write_templates(templates: dict[str, Catalog]) -> list[Path]:
    """``locale/<area>.pot``: what a translator's tool starts from."""
    out = []
    for area, cat in templates.items():
        path = LOCALE_DIR / f"{area}.pot"
        _write(path, cat)
        out.append(path)
    return out


def update(templates: dict[str, Catalog]) -> list[Path]:
    """Each language's ``.po`` brought to the templates: new messages added untranslated,
    messages no longer in the code dropped, changed ones kept as fuzzy for the translator."""
    out = []
    for lang in LANGUAGES:
        if lang == SOURCE:
            continue
        for area, template in templates.items():
            path = po_path(lang, area)
            if path.exists():
                with path.open("rb") as fp:
                    cat = read_po(fp, locale=lang)
            else:
                cat = Catalog(project=PROJECT, locale=lang)
            cat.update(template, update_header_comment=False)
            _write(path, cat)
            out.append(path)
    return out


def compile_all() -> list[Path]:
    """``.mo`` beside every ``.po`` (fuzzy entries left out)."""
    out = []
    for po in sorted(LOCALE_DIR.glob(f"*/{DOMAIN_DIR}/*.po")):
        with po.open("rb") as fp:
            cat = read_po(fp, locale=po.parent.parent.name)
        mo = po.with_suffix(".mo")
        with mo.open("wb") as fp:
            write_mo(fp, cat, use_fuzzy=False)
        out.append(mo)
    return out


@dataclass(frozen=True)
class Problem:
    """One way a catalogue disagrees with the code."""

    lang: str
    area: str
    kind: str  # "missing" | "untranslated" | "fuzzy" | "stale" | "placeholders" | "conflict"
    msgid: str

    def __str__(self) -> str:
        return f"{self.lang}/{self.area}.po: {self.kind}: {self.msgid!r}"


def _texts(value: object) -> tuple[str, ...]:
    """A message's id or translation as a tuple of strings (one, or the plural forms)."""
    if isinstance(value, (tuple, list)):
        return tuple(str(v or "") for v in value)
    return (str(value or ""),)


def _key(value: object) -> tuple[str, ...]:
    return _texts(value)


def _placeholders(text: str) -> set[str]:
    return set(_PLACEHOLDER.findall(text))


def _conflicts() -> list[Problem]:
    """A message translated differently in two areas of one language: the runtime merges the
    areas, so one of the two would silently win (the same words, one translation)."""
    problems: list[Problem] = []
    for lang in LANGUAGES:
        if lang == SOURCE:
            continue
        seen: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}
        for area in names():
            path = po_path(lang, area)
            if not path.exists():
                continue
            with path.open("rb") as fp:
                cat = read_po(fp, locale=lang)
            for m in cat:
                if not m.id or m.fuzzy or not all(_texts(m.string)):
                    continue
                key, text = _key(m.id), _texts(m.string)
                first = seen.setdefault(key, (area, text))
                if first[1] != text:
                    problems.append(Problem(lang, f"{first[0]}+{area}", "conflict", key[0]))
    return problems


def check(templates: dict[str, Catalog] | None = None) -> list[Problem]:
    """Every problem of every language's catalogues against the code: a message of the code
    missing, untranslated or fuzzy in a catalogue; a catalogue entry the code no longer has
    (stale); a translation whose ``{placeholders}`` differ from its message's; a message two
    areas translate differently (conflict)."""
    templates = extract() if templates is None else templates
    problems: list[Problem] = []
    for lang in LANGUAGES:
        if lang == SOURCE:
            continue
        for area, template in templates.items():
            path = po_path(lang, area)
            cat = Catalog(locale=lang)
            if path.exists():
                with path.open("rb") as fp:
                    cat = read_po(fp, locale=lang)
            wanted = {_key(m.id): m for m in template if m.id}
            have = {_key(m.id): m for m in cat if m.id}
            for key in wanted:
                entry = have.get(key)
                if entry is None:
                    problems.append(Problem(lang, area, "missing", key[0]))
                    continue
                strings = _texts(entry.string)
                if not all(strings):
                    problems.append(Problem(lang, area, "untranslated", key[0]))
                elif entry.fuzzy:
                    problems.append(Problem(lang, area, "fuzzy", key[0]))
                else:
                    expected = set().union(*(_placeholders(i) for i in key))
                    if any(
                        _placeholders(s) - expected
                        or (len(key) == 1 and _placeholders(s) != expected)
                        for s in strings
                    ):
                        problems.append(Problem(lang, area, "placeholders", key[0]))
            for key in have.keys() - wanted.keys():
                problems.append(Problem(lang, area, "stale", key[0]))
    problems += _conflicts()
    return problems
