"""A person's own language: the language their pages are in, kept in the store.

An admin sets it for an annotator or an adjudicator (Study setup, ``medsim annotator add …
--lang de``, ``medsim annotator language NAME de``), or the person chooses it on their own
pages; admins choose theirs the same way. Without one, a page follows the browser's
language, then English (``pages/_i18n.py``). The sign-in puts the stored language in the
session (:func:`signed_in_language`).

Every change is one transaction with a ``language_set`` event in the activity log. A code
that is not a language of the app is refused with a clear message and nothing is stored;
the pseudo languages of the tests (``qps-ploc``, ``qps-plocm``) are accepted.
"""

from __future__ import annotations

from medsim_annot import i18n
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.people import members
from medsim_annot.services.people.adjudicators import ADJUDICATORS, AdjudicatorIdentity
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import ANNOTATORS, AnnotatorIdentity
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, Transaction, get_engine, session_scope
from medsim_annot.storage import events as events_store
from medsim_annot.storage import languages as store

EVENT = "language_set"
#: Words that clear a person's language (their pages then follow the browser).
NONE_WORDS = ("", "none", "browser")
_ROLES: dict[store.Kind, members.Role] = {"annotator": ANNOTATORS, "adjudicator": ADJUDICATORS}


def check_language(code: str | None) -> str | None:
    """The language *code* stands for (``de-AT`` → ``de``), or ``None`` for no language of
    their own (empty, ``none`` or ``browser``); :class:`UsageProblem` for any other code."""
    if code is None or str(code).strip().lower() in NONE_WORDS:
        return None
    lang = i18n.normalise(code)
    if lang is None:
        raise UsageProblem(
            t(
                "'{code}' is not a language of the app: use one of {languages}, or 'none' "
                "for the browser's language. Nothing was changed.",
                code=str(code).strip(),
                languages=", ".join(i18n.LANGUAGES),
            )
        )
    return lang


def _log(
    s: Transaction,
    kind: str,
    name: str,
    lang: str | None,
    *,
    study_id: int | None,
    member: int,
    own: bool = False,
) -> None:
    """The ``language_set`` event: whose (role, name), the language (``None``: the
    browser's) and whether the person chose it themselves."""
    events_store.add_event(
        s,
        EVENT,
        study_id=study_id,
        annotator_id=member if kind == "annotator" else None,
        detail={"role": kind, "name": name, "language": lang, "own_choice": own},
    )


def _set_member(study: Study, kind: store.Kind, name: str, code: str | None) -> str | None:
    lang = check_language(code)
    with session_scope(study.engine) as s:
        member = members.member_id(_ROLES[kind], s, study.id, study.name, name)
        store.set_member_language(s, kind, member, lang)
        _log(s, kind, name, lang, study_id=study.id, member=member)
    return lang


def set_annotator_language(study: Study, name: str, code: str | None) -> str | None:
    """Set annotator *name*'s language (``None``/"none": the browser's); returns it."""
    return _set_member(study, "annotator", name, code)


def set_adjudicator_language(study: Study, name: str, code: str | None) -> str | None:
    """Set adjudicator *name*'s language (``None``/"none": the browser's); returns it."""
    return _set_member(study, "adjudicator", name, code)


def annotator_language(study: Study, name: str) -> str | None:
    """The stored language of annotator *name* of *study* (``None``: none)."""
    with session_scope(study.engine) as s:
        member = members.member_id(ANNOTATORS, s, study.id, study.name, name)
        return store.member_language(s, "annotator", member)


def adjudicator_language(study: Study, name: str) -> str | None:
    """The stored language of adjudicator *name* of *study* (``None``: none)."""
    with session_scope(study.engine) as s:
        member = members.member_id(ADJUDICATORS, s, study.id, study.name, name)
        return store.member_language(s, "adjudicator", member)


def people_languages(study: Study) -> dict[str, dict[str, str | None]]:
    """``{"annotator": {name: language}, "adjudicator": {name: language}}`` of *study*."""
    with session_scope(study.engine) as s:
        return {kind: store.member_languages(s, kind, study.id) for kind in _ROLES}


def set_admin_language(name: str, code: str | None, *, engine: Engine | None = None) -> str | None:
    """Set named admin *name*'s language (``None``/"none": the browser's); returns it.
    Refused for an admin without a row of their own (the admin of ``MEDSIM_ADMIN_PASSWORD``
    before ``medsim admin add``, an identity of the SSO ``admins`` list)."""
    lang = check_language(code)
    with session_scope(engine or get_engine()) as s:
        if not store.set_admin_language(s, name, lang):
            raise UsageProblem(
                t(
                    "There is no named admin '{name}' to keep a language for "
                    "(add one with medsim admin add). Nothing was changed.",
                    name=name,
                )
            )
        _log(s, "admin", name, lang, study_id=None, member=0)
    return lang


def admin_language(name: str, *, engine: Engine | None = None) -> str | None:
    """The stored language of admin *name* (``None``: none, or no such admin)."""
    with session_scope(engine or get_engine()) as s:
        return store.admin_language(s, name)


def annotator_language_by_id(annotator_id: int, *, engine: Engine | None = None) -> str | None:
    """The stored language of annotator *annotator_id* (``None``: none): for the ratings
    endpoint, which knows the annotator by its token (then ``Accept-Language``)."""
    with session_scope(engine or get_engine()) as s:
        return i18n.normalise(store.member_language(s, "annotator", annotator_id))


Identity = AnnotatorIdentity | AdjudicatorIdentity | AdminIdentity


def _member(ident: Identity) -> tuple[store.Kind, int, int | None]:
    if isinstance(ident, AnnotatorIdentity):
        return "annotator", ident.annotator_id, ident.study_id
    if isinstance(ident, AdjudicatorIdentity):
        return "adjudicator", ident.adjudicator_id, ident.study_id
    return "admin", ident.admin_id or 0, None


def signed_in_language(ident: Identity, *, engine: Engine | None = None) -> str | None:
    """The stored language of the person who just signed in as *ident* (``None``: none,
    or an admin without a row of their own)."""
    kind, member, _study = _member(ident)
    with session_scope(engine or get_engine()) as s:
        if kind == "admin":
            assert isinstance(ident, AdminIdentity)
            lang = store.admin_language(s, ident.name) if ident.admin_id is not None else None
        else:
            lang = store.member_language(s, kind, member)
    return i18n.normalise(lang)


def choose_own_language(ident: Identity, code: str | None, *, engine: Engine | None = None) -> bool:
    """The signed-in person *ident* chooses their own language (``None``: the browser's):
    stored with an event. ``False`` when there is no row to keep it in (an admin without a
    row of their own): the choice then holds for the session only."""
    lang = check_language(code)
    kind, member, study_id = _member(ident)
    with session_scope(engine or get_engine()) as s:
        if kind == "admin":
            assert isinstance(ident, AdminIdentity)
            if ident.admin_id is None or not store.set_admin_language(s, ident.name, lang):
                return False
        else:
            store.set_member_language(s, kind, member, lang)
        _log(s, kind, ident.name, lang, study_id=study_id, member=member, own=True)
    return True
