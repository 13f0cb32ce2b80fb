"""The study store: SQLAlchemy models, engine/session helpers, Alembic migrations and the
queries (:mod:`.studies`). The only package that speaks SQL; services call its functions."""

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from .db import database_url, dispose_all, get_engine, migrate, session_scope
from .models import Annotator, Assignment, Base, Event, Item, Rating, Setting, Study, utcnow

__all__ = [
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
    "database_url",
    "dispose_all",
    "get_engine",
    "migrate",
    "session_scope",
    "utcnow",
]
