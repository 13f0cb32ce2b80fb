"""The suite's PostgreSQL test database (tests/conftest.py ``_PostgresStore``): each test
starts from a migrated, empty store, whatever the test before it wrote or changed."""

from __future__ import annotations

import os

import pandas as pd
import pytest
import sqlalchemy as sa

from data_schemas.scales import BINARY
from medsim_annot.services import studies as svc
from medsim_annot.storage import dispose_all, get_engine
from tests.conftest import _PostgresStore, need

pytestmark = pytest.mark.postgres


@pytest.fixture
def store():
    base = os.environ.get("MEDSIM_TEST_POSTGRES_URL", "")
    need(bool(base), "MEDSIM_TEST_POSTGRES_URL is not set", "MEDSIM_REQUIRE_POSTGRES")
    made = _PostgresStore(base)
    yield made
    dispose_all()
    made.drop()
    made.admin.dispose()


def _count(url: str, sql: str) -> int:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        n = int(conn.exec_driver_sql(sql).scalar() or 0)
    engine.dispose()
    return n


def _study(url: str, name: str) -> int:
    frame = pd.DataFrame({"pair_id": ["p"], "term_1": ["a"], "term_2": ["b"]})
    svc.create_study(name, frame, BINARY, ["x"], engine=get_engine(url))
    n = _count(url, f"SELECT id FROM studies WHERE name = '{name}'")
    dispose_all()
    return n


def test_a_written_store_is_empty_again_with_ids_from_one(store):
    url = store.fresh()
    assert _study(url, "first") == 1
    # a connection left open by the test before (a server it started) does not block it
    stray = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1)).connect()
    stray.exec_driver_sql("SELECT 1")
    assert store.fresh() == url
    assert _count(url, "SELECT count(*) FROM studies") == 0
    assert _count(url, "SELECT count(*) FROM alembic_version") == 1
    assert _study(url, "second") == 1  # sequences restarted


def test_a_changed_schema_is_made_again(store):
    url = store.fresh()
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE studies ADD COLUMN stray integer")
        conn.exec_driver_sql("CREATE TABLE leftover (x integer)")
    engine.dispose()
    store.fresh()
    sql = (
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public'"
        " AND (column_name = 'stray' OR table_name = 'leftover')"
    )
    assert _count(url, sql) == 0
    assert _study(url, "again") == 1
