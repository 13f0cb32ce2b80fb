"""The study store: SQLAlchemy models, engine/session helpers, Alembic migrations and the
queries (:mod:`.studies`). The only package that speaks SQL; services call its functions."""

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from . import admins as admins_store  # registers the event-actor hook
from .db import database_url, dispose_all, get_engine, migrate, session_scope, with_retry
from .models import (
    ORDER_GAP,
    Admin,
    Annotator,
    Assignment,
    Base,
    Event,
    Item,
    Rating,
    Setting,
    Study,
    Tiebreak,
    utcnow,
)

__all__ = [
    "ORDER_GAP",
    "Admin",
    "Annotator",
    "Assignment",
    "Base",
    "Engine",
    "Event",
    "Item",
    "Rating",
    "Session",
    "Setting",
    "Study",
    "Tiebreak",
    "admins_store",
    "database_url",
    "dispose_all",
    "get_engine",
    "migrate",
    "session_scope",
    "utcnow",
    "with_retry",
]
