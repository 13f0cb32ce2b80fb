"""Failed sign-ins, shared by every app process (the counts of
:mod:`medsim_annot.services.people.throttle`). Rows are only inserted and deleted, so two
processes counting at once lose nothing."""

from __future__ import annotations

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Engine

from .db import session_scope
from .models import SigninFailure

#: At most this many of one client's recent failures are read (a client is refused while it
#: waits, so it cannot pile up more within the window).
MAX_CLIENT_ROWS = 200


def client_failure_times(engine: Engine, kind: str, client: str, since: float) -> list[float]:
    """Times of *client*'s failures of *kind* at or after *since*, oldest first."""
    with session_scope(engine) as s:
        rows = s.scalars(
            select(SigninFailure.at)
            .where(
                SigninFailure.kind == kind,
                SigninFailure.client == client,
                SigninFailure.at >= since,
            )
            .order_by(SigninFailure.at.desc())
            .limit(MAX_CLIENT_ROWS)
        ).all()
    return sorted(float(t) for t in rows)


def overall_failures(engine: Engine, kind: str, since: float) -> tuple[int, float | None]:
    """How many failures of *kind* every client together had since *since*, and the last."""
    with session_scope(engine) as s:
        n, last = s.execute(
            select(func.count(SigninFailure.id), func.max(SigninFailure.at)).where(
                SigninFailure.kind == kind, SigninFailure.at >= since
            )
        ).one()
    return int(n or 0), (float(last) if last is not None else None)


def add_failure(engine: Engine, kind: str, client: str, at: float, *, forget_before: float) -> None:
    """Record a failure; delete the failures of *kind* older than *forget_before*."""
    with session_scope(engine) as s:
        s.execute(
            delete(SigninFailure).where(
                SigninFailure.kind == kind, SigninFailure.at < forget_before
            )
        )
        s.add(SigninFailure(kind=kind, client=client[:100], at=at))


def clear_client(engine: Engine, kind: str, client: str) -> None:
    """Forget *client*'s failures of *kind* (a correct secret); they keep counting overall
    (under the empty client, which no real client has)."""
    with session_scope(engine) as s:
        s.execute(
            update(SigninFailure)
            .where(SigninFailure.kind == kind, SigninFailure.client == client)
            .values(client="")
        )


def clear_kind(engine: Engine, kind: str) -> None:
    with session_scope(engine) as s:
        s.execute(delete(SigninFailure).where(SigninFailure.kind == kind))


def clear_targets(engine: Engine, prefix: str) -> None:
    """Forget every per-target count whose kind starts with *prefix*."""
    with session_scope(engine) as s:
        s.execute(delete(SigninFailure).where(SigninFailure.kind.startswith(prefix)))
