"""The study's own texts per language: the guideline and the scale's question, option labels
and option descriptions, given by the admin for the doctors who work in another language
(Study setup, ``medsim study texts STUDY --lang de --file texts.yaml``).

Each field falls back on its own to the study's text (:meth:`StudyTexts.apply`): a German
question with no German labels shows the German question above the study's own labels. The
translated guideline belongs to the guideline version it was written for: once the guideline
is revised, doctors see the study's new guideline until its translation is given again (a
rating records the guideline version it was made under, so a doctor must never read an
older guideline than the one in force). The term pairs are data and are never translated.

The texts of a language are stored append-only (the last stored ones hold), with a
``study_texts_set`` event. Bad input — a language the app does not have, an option value
not on the scale, an unknown field — is refused with a clear message and nothing is stored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from data_schemas.scales import Scale
from data_schemas.texts import StudyTexts, read_texts
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.people.language import check_language
from medsim_annot.services.rating_queue import WidgetSetup
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Transaction, session_scope
from medsim_annot.storage import events as events_store
from medsim_annot.storage import guidelines as guideline_store
from medsim_annot.storage import languages as store

EVENT = "study_texts_set"


@dataclass(frozen=True)
class StoredTexts:
    """A study's texts in one language as stored: the texts, the guideline version their
    guideline was written for, and the version in force now (``current``: whether the
    translated guideline is shown, i.e. there is one and it is of the version in force)."""

    language: str
    texts: StudyTexts
    guideline_version: int | None
    version_in_force: int

    @property
    def guideline_current(self) -> bool:
        return bool(self.texts.guideline) and self.guideline_version == self.version_in_force


def _language(code: str | None) -> str:
    lang = check_language(code)
    if lang is None:
        raise UsageProblem(
            t("Say which language the texts are in (a language of the app). Nothing was stored.")
        )
    return lang


def set_texts(study: Study, code: str, texts: StudyTexts, *, file: str | None = None) -> StudyTexts:
    """Store *texts* as the study's texts in language *code* (they replace the previous
    ones; empty fields fall back to the study's own). Refused, with nothing stored, for a
    language the app does not have or an option value that is not on the scale
    (:class:`~data_schemas.errors.InputError` naming *file* and each option)."""
    lang = _language(code)
    checked = texts.checked(study.scale, file=file)
    with session_scope(study.engine) as s:
        version = guideline_store.current_version(s, study.id)
        store.add_texts(
            s, study.id, lang, checked.model_dump_json(), version if checked.guideline else None
        )
        events_store.add_event(
            s,
            EVENT,
            study_id=study.id,
            detail={
                "language": lang,
                "question": bool(checked.question),
                "guideline": bool(checked.guideline),
                "guideline_version": version if checked.guideline else None,
                "options": sorted(checked.options),
                "file": file,
            },
        )
    return checked


def set_texts_file(study: Study, code: str, path: Path, *, name: str | None = None) -> StudyTexts:
    """:func:`set_texts` with the texts of a YAML or JSON file (errors name it as *name*)."""
    shown = name or str(path)
    return set_texts(study, code, read_texts(Path(path), name=shown), file=shown)


def _stored(s: Transaction, study: Study, lang: str) -> StoredTexts | None:
    row = store.current_texts(s, study.id, lang)
    if row is None:
        return None
    return StoredTexts(
        language=lang,
        texts=StudyTexts.model_validate_json(row.texts_json),
        guideline_version=row.guideline_version,
        version_in_force=guideline_store.current_version(s, study.id),
    )


def stored_texts(study: Study, code: str) -> StoredTexts | None:
    """The study's texts in language *code* as last stored (``None``: none given)."""
    lang = _language(code)
    with session_scope(study.engine) as s:
        return _stored(s, study, lang)


def text_languages(study: Study) -> list[str]:
    """The languages the study has texts in."""
    with session_scope(study.engine) as s:
        return store.text_languages(s, study.id)


def shown_in(study: Study, lang: str | None) -> tuple[Scale, str]:
    """The scale and the guideline in force as doctors working in *lang* see them: each
    field in *lang* where the admin gave it, else the study's own (one short read)."""
    own_guideline = study.guideline or study.scale.guideline
    if not lang:
        return study.scale, own_guideline
    with session_scope(study.engine) as s:
        stored = _stored(s, study, lang)
    if stored is None:
        return study.scale, own_guideline
    texts = stored.texts
    if not stored.guideline_current:  # none given, or written for an older guideline
        texts = texts.model_copy(update={"guideline": ""})
    return texts.apply(study.scale, own_guideline)


def scale_in(study: Study, lang: str | None) -> Scale:
    """The study's scale with its question, option labels and descriptions in *lang*
    (each falling back to the study's own)."""
    return shown_in(study, lang)[0]


def guideline_in(study: Study, lang: str | None) -> str:
    """The study's guideline in *lang* when one was given for the version in force, else
    the study's own."""
    return shown_in(study, lang)[1]


def widget_setup_in(setup: WidgetSetup, study: Study, lang: str | None) -> WidgetSetup:
    """The Annotate widget's *setup* with the question, option labels, descriptions and
    guideline in *lang* (values, keys and everything else unchanged)."""
    scale, guideline = shown_in(study, lang)
    by_value = {str(Scale.display(o.value)): o for o in scale.options}
    options = []
    for option in setup.scale.get("options", []):
        shown = by_value.get(str(option.get("value")))
        if shown is not None:
            option = {**option, "label": shown.label, "description": shown.description}
        options.append(option)
    return dataclasses.replace(
        setup,
        scale={**setup.scale, "options": options, "question": scale.asks},
        guideline=guideline,
    )
