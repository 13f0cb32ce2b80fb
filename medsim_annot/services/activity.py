"""The event log as people read it: who did what, when, to which study.

Events are appended by :mod:`medsim_annot.storage.events` (the only writer), which names the
actor of each: :func:`acting_as` / :func:`set_actor` / :func:`set_actor_provider` set who
that is (an admin of the pages, ``cli:USER`` at the command line: :func:`cli_actor`).
:func:`record_event` appends a lone event (an export), :func:`activity` reads the log and
:func:`readable_detail` turns an event's JSON detail into a line.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from typing import TypeVar

import pandas as pd

from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, get_engine, session_scope
from medsim_annot.storage import events as events_store

_T = TypeVar("_T")


def _tx(engine: Engine | None, query: Callable[..., _T], *args, **kwargs) -> _T:
    """Run one storage *query* in a transaction of its own."""
    with session_scope(engine or get_engine()) as s:
        return query(s, *args, **kwargs)


acting_as = events_store.acting_as
set_actor = events_store.set_actor
set_actor_provider = events_store.set_actor_provider


def cli_actor() -> str:
    """How the event log names a command-line user."""
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli"


def record_event(
    kind: str,
    *,
    study: Study | None = None,
    detail: dict | None = None,
    engine: Engine | None = None,
) -> None:
    """Append *kind* (e.g. ``exported``) for *study* to the event log, naming the actor;
    an event of no study goes to *engine* (the configured database when not given)."""
    if study is not None:
        engine = study.engine
    study_id = study.id if study is not None else None
    _tx(engine, events_store.add_event, kind, study_id=study_id, detail=detail)


def readable_detail(detail: object) -> str:
    """An event's JSON detail as a line people read: ``key: value · key: value`` (lists
    joined with commas); text that is not a JSON object is returned as it is.

    >>> readable_detail('{"name": "bob", "annotators": ["a", "b"], "items": 4}')
    'name: bob · annotators: a, b · items: 4'
    """
    text = "" if detail is None else str(detail)
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text

    def show(value: object) -> str:
        if isinstance(value, list):
            return ", ".join(show(v) for v in value)
        if isinstance(value, dict):
            return ", ".join(f"{k}={show(v)}" for k, v in value.items())
        return "—" if value is None else str(value)

    return " · ".join(f"{k}: {show(v)}" for k, v in data.items())


def activity(
    *,
    study: Study | None = None,
    actor: str | None = None,
    limit: int = 500,
    engine: Engine | None = None,
) -> pd.DataFrame:
    """The event log, newest first, as a frame (at, actor, action, study, annotator, detail):
    *study*'s events (read from its database), or every event of *engine* (the configured
    database when not given)."""
    if study is not None:
        engine = study.engine
    study_id = study.id if study is not None else None
    rows = _tx(engine, events_store.activity, study_id=study_id, actor=actor, limit=limit)
    return pd.DataFrame(rows, columns=["at", "actor", "action", "study", "annotator", "detail"])
