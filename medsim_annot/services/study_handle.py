"""The :class:`Study` handle: a study resolved once, where a page, a command or the endpoint
comes in, and handed to the services.

:func:`open_study` is the only place that turns a study's name into a study: one short read
(the study's row, its scale parsed once). Services that work on an existing study take the
handle (``study: Study``) and use its id, scale, config and engine; they never look a name up
again nor fall back to the default engine.

The handle is a snapshot of the study as it was read. A service that changes the study's
config or scale returns a fresh handle; whoever holds an older one (a page across reruns, a
long-lived command) calls :meth:`Study.reloaded` when it needs the current values. The id,
name and engine never change for a study.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.storage import Engine, Transaction, get_engine, session_scope
from medsim_annot.storage import studies as store


@dataclass(frozen=True)
class Study:
    """One study of one database, as read by :func:`open_study` (a snapshot: see the module
    docstring). ``config`` is the study's stored config; treat it as read-only."""

    id: int
    name: str
    scale: Scale
    guideline: str
    config: dict[str, Any]
    created_at: dt.datetime | None
    engine: Engine = field(repr=False, compare=False)

    def __hash__(self) -> int:
        # Hashable (a cache key) although the scale and the config are not: equal handles
        # have the same id and name.
        return hash((self.id, self.name))

    def reloaded(self, *, tx: Transaction | None = None) -> Study:
        """The study as stored now (after a change of its config or scale); *tx*: as read
        in this transaction (:func:`medsim_annot.storage.read_snapshot`)."""
        if tx is not None:
            return _read(tx, self.name, self.engine)
        return open_study(self.name, engine=self.engine)


def open_study(name: str, *, engine: Engine | None = None) -> Study:
    """Study *name* of *engine* (the configured database when not given); raises
    :class:`~medsim_annot.errors.UsageProblem` naming the known studies when there is none."""
    engine = engine or get_engine()
    with session_scope(engine) as s:
        return _read(s, name, engine)


def _read(s: Transaction, name: str, engine: Engine) -> Study:
    row = store.study_row(s, name)
    if row is None:
        known = store.study_names(s)
        hint = f" (known studies: {', '.join(known)})" if known else " (there are no studies yet)"
        raise UsageProblem(f"there is no study named '{name}'{hint}")
    return Study(
        id=row.id,
        name=row.name,
        scale=Scale.from_json(row.scale_json),
        guideline=row.guideline,
        config=json.loads(row.config_json or "{}"),
        created_at=row.created_at,
        engine=engine,
    )
