"""A person's own language on the pages, and the study's own texts per language.

- :func:`use_stored_language`: at every sign-in (code, password, SSO; called from
  ``pages/_ui.py``), the language kept in the store for this person becomes the session's
  (:data:`pages._i18n.LANGUAGE_KEY`); without one the page follows the browser, then English.
- :func:`language_selector`: the language choice in the sidebar of every signed-in role
  (called from ``app.py``): stored for the person and in effect at once.
- :func:`setup_section`: on Study setup, each annotator's and adjudicator's language and the
  study's own texts (guideline, question, option labels and descriptions) per language.
- :func:`scale_in`, :func:`widget_setup_in`: the scale and the Annotate widget's setup in the
  page's language, for the Adjudicate and Annotate pages.

This module imports no other page helper but :mod:`pages._i18n` (``pages/_ui.py`` calls it):
callers hand over the engine and who is signed in.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

from data_schemas.errors import InputError
from data_schemas.scales import Scale
from data_schemas.texts import OptionText, StudyTexts
from medsim_annot import i18n
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services import study_texts as texts_svc
from medsim_annot.services.people import language as language_svc
from medsim_annot.services.people.adjudicators import AdjudicatorIdentity
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import AnnotatorIdentity
from medsim_annot.services.rating_queue import STORE_ERRORS, WidgetSetup
from medsim_annot.services.study_handle import Study, open_study
from pages import _i18n

#: The sidebar's language choice (a widget key) and the note shown under it once.
SELECTOR = "person_language_choice"
SELECTOR_NOTE = "person_language_note"
#: Set by a sign-in whose language arrived after ``<html lang>`` was set in the same run.
RERUN = "person_language_rerun"
#: The choice "no language of my own": the browser's, then English.
BROWSER = ""

Person = AnnotatorIdentity | AdjudicatorIdentity | AdminIdentity
_MD_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")


def _plain(text: str) -> str:
    """*text* shown as typed in a markdown element (as ``pages._ui.plain_markdown``, which
    this module cannot import: ``_ui`` calls it at sign-in)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def _own_name(code: str) -> str:
    """A language by its own name ("Deutsch"); a test language by its code."""
    return i18n.LANGUAGES.get(code, code)


def _choice_label(code: str) -> str:
    if code == BROWSER:
        return t(
            "The browser's language ({language})",
            language=_own_name(_i18n.browser_language() or i18n.SOURCE),
        )
    return _own_name(code)


def _choices(current: str | None) -> list[str]:
    """The languages offered: the browser's, then each language of the app (a test
    language only when it is the one in use, never offered)."""
    options = [BROWSER, *i18n.LANGUAGES]
    if current and current not in options:
        options.append(current)
    return options


# ------------------------------------------------------------------------------ sign-in
def use_stored_language(person: Person | None, engine: Any) -> None:
    """Make the language stored for *person*, who just signed in, this session's (none:
    the browser's). A store that cannot be reached leaves the browser's language. A
    sign-in in a form's callback comes before ``app.py`` sets ``<html lang>``; one by
    single sign-on comes after it, so the app is run again (:func:`language_selector`)."""
    lang = None
    if person is not None:
        try:
            lang = language_svc.signed_in_language(person, engine=engine)
        except STORE_ERRORS:
            lang = None
    applied = _i18n.applied_language()
    _i18n.set_person_language(lang)
    if applied is not None and applied != _i18n.page_language():
        # Signed in by the script itself (single sign-on), after app.py gave <html lang>
        # the language before: the sidebar's selector runs the app again.
        st.session_state[RERUN] = True


# ----------------------------------------------------------------------- the sidebar choice
def _chosen(person: Person | None, engine: Any) -> None:
    """The selector's callback: keep the choice in the store and use it from now on."""
    code = st.session_state.get(SELECTOR) or None
    note = None
    if person is not None:
        try:
            if not language_svc.choose_own_language(person, code, engine=engine):
                note = "session"
        except STORE_ERRORS:
            note = "unreachable"
        except UsageProblem:
            code = None
    _i18n.set_person_language(code)
    if note:
        st.session_state[SELECTOR_NOTE] = note


def language_selector(person: Person | None, engine: Any) -> None:
    """The language choice of the signed-in *person* (in the sidebar): their own language,
    stored for them and in effect at once, or the browser's.

    After a sign-in in this run that brought another language than ``<html lang>`` got
    (:func:`use_stored_language`), the app runs again, so the page and ``<html lang>`` are
    in the person's language."""
    if st.session_state.pop(RERUN, False):
        st.rerun()
    current = st.session_state.get(_i18n.LANGUAGE_KEY)
    options = _choices(current)
    st.selectbox(
        t("Language"),
        options,
        index=options.index(current) if current in options else 0,
        format_func=_choice_label,
        key=SELECTOR,
        on_change=_chosen,
        args=(person, engine),
        help=t("The language of your pages. Kept for your next sign-in."),
        placeholder=t("Choose a language"),
    )
    note = st.session_state.pop(SELECTOR_NOTE, None)
    if note == "session":
        st.caption(t("Kept for this session only: your admin account has no entry of its own."))
    elif note == "unreachable":
        st.caption(t("The store could not be reached: the language holds for this session."))


# ------------------------------------------------------------------ the study's own texts
def scale_in(study: Study) -> Scale:
    """The study's scale with its question, labels and descriptions in the page's language."""
    return texts_svc.scale_in(study, _i18n.page_language())


def widget_setup_in(setup: WidgetSetup, person: AnnotatorIdentity, engine: Any) -> WidgetSetup:
    """The Annotate widget's *setup* with the study's texts in the page's language."""
    lang = _i18n.page_language()
    study = open_study(person.study_name, engine=engine)
    return texts_svc.widget_setup_in(setup, study, lang)


# ------------------------------------------------------------------------------ Study setup
_ROLE_NAMES = {"annotator": i18n.N_("Annotator"), "adjudicator": i18n.N_("Adjudicator")}


def _their_label(code: str | None) -> str:
    """A person's language as an admin sees it: its own name, or their browser's."""
    return _own_name(code) if code else t("Their browser's language")


def _people_languages(study: Study) -> None:
    """Each annotator's and adjudicator's language, and a form to set one (the table is
    drawn after the form is handled, so it shows the language just set)."""
    people = language_svc.people_languages(study)
    rows = [(kind, name, lang) for kind, names in people.items() for name, lang in names.items()]
    if not rows:
        st.caption(t("The study has no annotators or adjudicators yet."))
        return
    table = st.container()
    with st.form(f"setup_lang_form_{study.id}"):
        c1, c2 = st.columns(2)
        pick = c1.selectbox(
            t("Person"),
            range(len(rows)),
            format_func=lambda i: f"{rows[i][1]} ({t(_ROLE_NAMES[rows[i][0]])})",
            key="setup_lang_person",
            placeholder=t("Choose a person"),
        )
        code = c2.selectbox(
            t("Language"),
            _choices(None),
            format_func=_their_label,
            key="setup_lang_code",
            placeholder=t("Choose a language"),
        )
        if st.form_submit_button(t("Set the language")) and pick is not None:
            kind, name, _lang = rows[pick]
            setter = (
                language_svc.set_annotator_language
                if kind == "annotator"
                else language_svc.set_adjudicator_language
            )
            try:
                setter(study, name, code or None)
            except UsageProblem as exc:
                st.error(_plain(str(exc)))
            else:
                rows[pick] = (kind, name, code or None)
                st.success(
                    t(
                        "Language of {name} set to {language}.",
                        name=_plain(name),
                        language=_own_name(code),
                    )
                    if code
                    else t("{name} now follows their browser's language.", name=_plain(name))
                )
    table.dataframe(
        pd.DataFrame(
            {
                t("Person"): [name for _k, name, _l in rows],
                t("Role"): [t(_ROLE_NAMES[kind]) for kind, _n, _l in rows],
                t("Language"): [_their_label(lang) for _k, _n, lang in rows],
            }
        ),
        hide_index=True,
        key="setup_lang_table",
    )


def _texts_form(study: Study, lang: str) -> None:
    """The study's texts in *lang*: one field per text, empty fields fall back."""
    stored = texts_svc.stored_texts(study, lang)
    texts = stored.texts if stored is not None else StudyTexts()
    if stored is not None and stored.texts.guideline and not stored.guideline_current:
        st.warning(
            t(
                "The translated guideline ({language}) was written for guideline version {old}; "
                "version {now} is in force, so doctors see the study's own guideline until you "
                "give its translation here.",
                language=_own_name(lang),
                old=i18n.fmt_int(stored.guideline_version or 1),
                now=i18n.fmt_int(stored.version_in_force),
            )
        )
    scale = study.scale
    key = f"setup_texts_{study.id}_{lang}"
    with st.form(key):
        question = st.text_input(
            t("Question above every pair"),
            value=texts.question,
            placeholder=scale.asks,
            key=f"{key}_question",
        )
        fields: dict[str, tuple[str, str]] = {}
        for option in scale.options:
            value = str(Scale.display(option.value))
            given = texts.option_text(option.value)
            c1, c2 = st.columns([1, 2])
            label = c1.text_input(
                t("Label of {value}", value=value),
                value=given.label,
                placeholder=option.label,
                key=f"{key}_label_{value}",
            )
            description = c2.text_input(
                t("Description of {value}", value=value),
                value=given.description,
                placeholder=option.description,
                key=f"{key}_description_{value}",
            )
            fields[value] = (label, description)
        guideline = st.text_area(
            t("Guideline (Markdown)"),
            value=texts.guideline if stored is None or stored.guideline_current else "",
            placeholder=study.guideline or scale.guideline,
            height=200,
            key=f"{key}_guideline",
        )
        if st.form_submit_button(t("Save the texts ({language})", language=_own_name(lang))):
            new = StudyTexts(
                question=question,
                guideline=guideline,
                options={
                    v: OptionText(label=lab, description=desc)
                    for v, (lab, desc) in fields.items()
                    if lab.strip() or desc.strip()
                },
            )
            try:
                texts_svc.set_texts(study, lang, new)
            except (UsageProblem, InputError) as exc:
                st.error(t("Not stored: {problem}", problem=_plain(str(exc))))
            else:
                st.success(
                    t(
                        "Stored the texts ({language}). Empty fields show the study's own text.",
                        language=_own_name(lang),
                    )
                )


def setup_section(study: Study) -> None:
    """Study setup's languages section: each person's language and the study's own texts
    in each language (term pairs are data and are never translated)."""
    st.subheader(t("Languages"))
    st.caption(
        t(
            "Each person's pages are in their own language: set here, chosen by them in the "
            "sidebar, or else their browser's. The study's question, option labels, "
            "descriptions and guideline can be given per language; the term pairs are never "
            "translated."
        )
    )
    _people_languages(study)
    with st.expander(t("The study's texts in other languages")):
        lang = st.selectbox(
            t("Language of the texts"),
            # The study's own texts are usually English: the other languages first.
            [*(c for c in i18n.LANGUAGES if c != i18n.SOURCE), i18n.SOURCE],
            format_func=_own_name,
            key=f"setup_texts_language_{study.id}",
            placeholder=t("Choose a language"),
        )
        if lang:
            _texts_form(study, lang)
