"""Throttled sign-in: an admin's name and password, or an access code (an annotator's,
else an adjudicator's). Each failure slows the next attempt from the same client
(:mod:`.throttle`)."""

from __future__ import annotations

import os

from medsim_annot.services.people.adjudicators import AdjudicatorIdentity, authenticate_adjudicator
from medsim_annot.services.people.admins import (
    ENV_ADMIN,
    AdminIdentity,
    check_admin_password,
    in_transaction,
    named_identity,
)
from medsim_annot.services.people.annotators import AnnotatorIdentity, authenticate_annotator
from medsim_annot.services.people.throttle import ADMIN_SIGNINS, CODE_SIGNINS
from medsim_annot.storage import Engine, get_engine
from medsim_annot.storage import admins as store


def sign_in_admin(
    name: str, password: str, *, client: str, engine: Engine | None = None
) -> AdminIdentity | None:
    """ThrottledError admin sign-in from *client*: the admin, ``None`` (wrong), or raises
    :class:`~medsim_annot.services.people.throttle.ThrottledError` (wait first)."""
    engine = engine or get_engine()
    name = (name or "").strip() or ENV_ADMIN
    ADMIN_SIGNINS.check(client, target=name, engine=engine)
    if check_admin_password(name, password, engine=engine):
        ident = named_identity(name, engine=engine)
        if ident is not None:  # (removed between the check and now: a failure)
            ADMIN_SIGNINS.success(client, engine=engine)
            return ident
    known = (name == ENV_ADMIN and bool(os.environ.get("MEDSIM_ADMIN_PASSWORD"))) or (
        in_transaction(engine, store.get_admin, name) is not None
    )
    # Only a known admin's name is logged: a password typed into the name field is not.
    ADMIN_SIGNINS.failure(
        client,
        target=name,
        detail=f"admin={name!r}" if known else "admin=<unknown>",
        engine=engine,
    )
    return None


def sign_in_with_code(
    code: str, *, client: str, engine: Engine | None = None
) -> AnnotatorIdentity | AdjudicatorIdentity | None:
    """Throttled access-code sign-in from *client* (see :func:`sign_in_admin`): an
    annotator's code, else an adjudicator's (the caller routes by the identity's type)."""
    engine = engine or get_engine()
    CODE_SIGNINS.check(client, engine=engine)
    ident: AnnotatorIdentity | AdjudicatorIdentity | None = authenticate_annotator(
        code, engine=engine
    )
    if ident is None:
        ident = authenticate_adjudicator(code, engine=engine)
    if ident is not None:
        CODE_SIGNINS.success(client, engine=engine)
        return ident
    CODE_SIGNINS.failure(client, engine=engine)
    return None
