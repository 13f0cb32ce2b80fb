"""The event log: the only module that writes events, and the one detail serialiser.

Every change worth auditing (a study created, an annotator renamed, a group stopped, an
export) appends one :class:`~medsim_annot.storage.models.Event` here, inside the caller's
transaction (:func:`add_event`) or in its own (:func:`record_event`), so the change and its
record commit together. The *actor* of an event (who did it) comes from :func:`acting_as`,
set once per request by the app (the signed-in admin) or the CLI (the operating-system
user), so no service passes it through every signature.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from sqlalchemy import event as sa_event
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from .db import get_engine, session_scope
from .models import Annotator, Event, Study, utcnow

_ACTOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("medsim_actor", default=None)
_PROVIDER: list[Callable[[], str | None]] = []


@contextlib.contextmanager
def acting_as(actor: str | None) -> Iterator[None]:
    """Events recorded inside this block name *actor* (e.g. ``admin:alice``)."""
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def set_actor(actor: str | None) -> None:
    """Set the actor for the rest of this thread's context (one Streamlit script run)."""
    _ACTOR.set(actor)


def set_actor_provider(provider: Callable[[], str | None] | None) -> None:
    """Ask *provider* for the actor when :func:`acting_as` set none: the app registers one
    that reads the signed-in admin of the current Streamlit session (widget callbacks run
    before the page script, so a per-run setting would miss them)."""
    _PROVIDER[:] = [provider] if provider is not None else []


def current_actor() -> str | None:
    actor = _ACTOR.get()
    if actor is None and _PROVIDER:
        actor = _PROVIDER[0]()
    return actor


@sa_event.listens_for(Event, "before_insert")
def _fill_actor(_mapper, _connection, target: Event) -> None:
    if target.actor is None:
        target.actor = current_actor()


def detail_json(detail: Mapping[str, Any] | None) -> str:
    """The stored form of an event's (or a group stop's) detail: JSON with sorted keys, so
    equal details are equal text, and anything JSON has no type for (dates, paths, numpy
    scalars) written as its ``str``.

    >>> detail_json({"to": "b", "from": "a", "at": dt.date(2024, 1, 2)})
    '{"at": "2024-01-02", "from": "a", "to": "b"}'
    >>> detail_json(None)
    '{}'
    """
    return json.dumps(dict(detail or {}), sort_keys=True, default=str)


def add_event(
    s: Session,
    kind: str,
    *,
    study_id: int | None = None,
    annotator_id: int | None = None,
    detail: Mapping[str, Any] | None = None,
    at: dt.datetime | None = None,
    actor: str | None = None,
) -> None:
    """Append one event inside the caller's transaction (*actor* ``None``: the current one)."""
    s.add(
        Event(
            study_id=study_id,
            annotator_id=annotator_id,
            kind=kind,
            at=at or utcnow(),
            detail_json=detail_json(detail),
            actor=actor,
        )
    )


def add_event_id(
    s: Session,
    kind: str,
    *,
    study_id: int | None = None,
    detail: Mapping[str, Any] | None = None,
    at: dt.datetime | None = None,
    actor: str | None = None,
) -> int:
    """Append one event inside the caller's transaction and return its id (a row that names
    the event recording it, such as an adjudication, needs the id before it is inserted)."""
    ev = Event(
        study_id=study_id,
        kind=kind,
        at=at or utcnow(),
        detail_json=detail_json(detail),
        actor=actor,
    )
    s.add(ev)
    s.flush()
    return int(ev.id)


def record_event(
    kind: str,
    *,
    study_id: int | None = None,
    annotator_id: int | None = None,
    detail: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
) -> None:
    """Append one event (e.g. an export) in a transaction of its own."""
    with session_scope(engine or get_engine()) as s:
        add_event(s, kind, study_id=study_id, annotator_id=annotator_id, detail=detail)


def activity(
    s: Session,
    *,
    study_id: int | None = None,
    actor: str | None = None,
    limit: int = 500,
) -> list[dict]:
    """The newest *limit* events (optionally of one study or one actor), newest first."""
    q = (
        select(
            Event.at,
            Event.actor,
            Event.kind,
            Study.name,
            Annotator.name,
            Event.detail_json,
        )
        .outerjoin(Study, Study.id == Event.study_id)
        .outerjoin(Annotator, Annotator.id == Event.annotator_id)
        .order_by(Event.id.desc())
        .limit(limit)
    )
    if study_id is not None:
        q = q.where(Event.study_id == study_id)
    if actor is not None:
        q = q.where(Event.actor == actor)
    return [
        {
            "at": at,
            "actor": who or "",
            "action": kind,
            "study": study or "",
            "annotator": ann or "",
            "detail": detail or "{}",
        }
        for at, who, kind, study, ann, detail in s.execute(q).all()
    ]
