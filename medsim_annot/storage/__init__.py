"""The study store: SQLAlchemy models, engine/session helpers and Alembic migrations."""

from .db import database_url, dispose_all, get_engine, migrate, session_scope
from .models import Annotator, Assignment, Base, Event, Item, Rating, Setting, Study

__all__ = [
    "Annotator",
    "Assignment",
    "Base",
    "Event",
    "Item",
    "Rating",
    "Setting",
    "Study",
    "database_url",
    "dispose_all",
    "get_engine",
    "migrate",
    "session_scope",
]
