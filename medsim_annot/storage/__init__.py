"""The study store: SQLAlchemy models, engine/session helpers and Alembic migrations."""

from . import admins as admins_store  # registers the event-actor hook
from .db import database_url, dispose_all, get_engine, migrate, session_scope
from .models import Admin, Annotator, Assignment, Base, Event, Item, Rating, Setting, Study

__all__ = [
    "Admin",
    "Annotator",
    "Assignment",
    "Base",
    "Event",
    "Item",
    "Rating",
    "Setting",
    "Study",
    "admins_store",
    "database_url",
    "dispose_all",
    "get_engine",
    "migrate",
    "session_scope",
]
