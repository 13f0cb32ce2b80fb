"""Alembic environment: run against the connection handed over by medsim_annot.storage.db,
or against MEDSIM_DATABASE_URL when run with the alembic command line."""

from alembic import context
from sqlalchemy import create_engine

from medsim_annot.storage.db import database_url
from medsim_annot.storage.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or database_url())
    with engine.connect() as conn:
        _run(conn)
