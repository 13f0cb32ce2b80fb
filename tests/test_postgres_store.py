"""A PostgreSQL store: the pg_dump / pg_restore round trip docs/deploy.md prescribes, and
the migrations over a store that already holds data.

Each test gets its own database on the server of MEDSIM_TEST_POSTGRES_URL (skipped when unset,
unless MEDSIM_REQUIRE_POSTGRES=1); pg_dump and pg_restore must be on PATH there too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid

import pandas as pd
import pytest
import sqlalchemy as sa

from medsim_annot.services.study_handle import open_study
from tests.conftest import need

pytestmark = pytest.mark.postgres


@contextlib.contextmanager
def _another_database():
    """A second, empty database on the same server (dropped afterwards)."""
    base = os.environ["MEDSIM_TEST_POSTGRES_URL"]
    name = "medsim_r_" + uuid.uuid4().hex[:10]
    admin = sa.create_engine(
        base.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield base.rsplit("/", 1)[0] + "/" + name
    finally:
        from medsim_annot.storage import dispose_all

        dispose_all()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def _tool(name: str) -> str:
    path = shutil.which(name)
    need(path is not None, f"{name} not on PATH", "MEDSIM_REQUIRE_POSTGRES")
    assert path is not None
    return path


@pytest.mark.parametrize("backend_url", ["postgres"], indirect=True)
def test_pg_dump_and_pg_restore_round_trip(backend_url, monkeypatch, tmp_path):
    """A study with changed ratings, dumped with ``pg_dump --format=custom`` and restored
    with ``pg_restore`` into an empty database as docs/deploy.md says, holds the same ratings,
    history and codes, is at the same migration, and takes new ratings (its sequences came
    along: a new rating does not collide with a restored id)."""
    from data_schemas.scales import BINARY
    from medsim_annot.services import annotation as A
    from medsim_annot.services import studies as svc
    from medsim_annot.services.people.annotators import authenticate_annotator
    from medsim_annot.storage import dispose_all

    pg_dump, pg_restore = _tool("pg_dump"), _tool("pg_restore")
    frame = pd.DataFrame(
        {"pair_id": [f"p{i}" for i in range(6)], "term_1": list("abcdef"), "term_2": list("uvwxyz")}
    )
    res = svc.create_study("s", frame, BINARY, ["a", "b"])
    codes = [a["access_code"] for a in res["annotators"]]
    idents = [authenticate_annotator(c) for c in codes]
    for ident in idents:
        for pos in range(4):
            A.submit_rating(
                ident.annotator_id,
                pos,
                ("same", "not_same")[pos % 2],
                credential=ident.credential_version,
            )
    A.submit_rating(idents[0].annotator_id, 1, "same", credential=idents[0].credential_version)
    ratings = svc.export_ratings(open_study("s"))
    history = svc.rating_history(open_study("s"))
    with sa.create_engine(
        backend_url.replace("postgresql://", "postgresql+psycopg://", 1)
    ).connect() as c:
        head = c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    dispose_all()

    dump = tmp_path / "medsim.dump"
    subprocess.run(
        [pg_dump, "--format=custom", "--file", str(dump), backend_url],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with _another_database() as restored_url:
        r = subprocess.run(
            [
                pg_restore,
                "--clean",
                "--if-exists",
                "--no-owner",
                "--dbname",
                restored_url,
                str(dump),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        monkeypatch.setenv("MEDSIM_DATABASE_URL", restored_url)
        pd.testing.assert_frame_equal(svc.export_ratings(open_study("s")), ratings)
        pd.testing.assert_frame_equal(svc.rating_history(open_study("s")), history)
        assert [authenticate_annotator(c).name for c in codes] == ["a", "b"]
        url = restored_url.replace("postgresql://", "postgresql+psycopg://", 1)
        with sa.create_engine(url).connect() as c:
            assert c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == head
        again = authenticate_annotator(codes[1])
        A.submit_rating(again.annotator_id, 4, "same", credential=again.credential_version)
        after = svc.export_ratings(open_study("s"))
        assert len(after) == len(ratings) + 1
        assert len(svc.rating_history(open_study("s"))) == len(history) + 1


def _alembic(engine, revision: str, before=None):
    from alembic import command
    from alembic.config import Config

    from medsim_annot.storage.db import MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        if before is not None:
            before(conn)


def _pg_engine(url: str):
    return sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


@pytest.mark.parametrize("unmigrated_backend_url", ["postgres"], indirect=True)
def test_migrations_number_existing_ratings_on_postgresql(unmigrated_backend_url):
    """A PostgreSQL store with ratings from before 0003 is migrated to head: revisions 1, 2, …
    per slot in id order, every annotator at credential version 1, and the new constraints
    hold on the migrated rows."""
    engine = _pg_engine(unmigrated_backend_url)

    def old_data(conn):
        x = conn.execute
        x(
            sa.text(
                "INSERT INTO studies (id, name, scale_json, created_at) "
                "VALUES (1, 's', '{}', '2026-01-01')"
            )
        )
        x(
            sa.text(
                "INSERT INTO items (id, study_id, pair_id, position, term_1, term_2) "
                "VALUES (1, 1, 'p', 0, 'a', 'b')"
            )
        )
        x(
            sa.text(
                "INSERT INTO annotators (id, study_id, name, created_at) "
                "VALUES (1, 1, 'x', '2026-01-01')"
            )
        )
        for slot in (1, 2):
            x(
                sa.text(
                    "INSERT INTO assignments (id, study_id, annotator_id, item_id, position) "
                    f"VALUES ({slot}, 1, 1, 1, {slot})"
                )
            )
        for rid, slot in ((1, 1), (2, 2), (3, 1), (4, 1), (5, 2)):
            x(
                sa.text(
                    "INSERT INTO ratings (id, study_id, annotator_id, item_id, assignment_id, "
                    f"value, rated_at) VALUES ({rid}, 1, 1, 1, {slot}, 'v', '2026-01-01')"
                )
            )

    _alembic(engine, "0002", old_data)
    _alembic(engine, "head")
    with engine.connect() as conn:
        got = conn.exec_driver_sql("SELECT id, revision FROM ratings ORDER BY id").all()
        assert [tuple(r) for r in got] == [(1, 1), (2, 1), (3, 2), (4, 3), (5, 2)]
        assert conn.exec_driver_sql("SELECT credential_version FROM annotators").scalar() == 1
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.exec_driver_sql(  # a second row for one revision of a slot is refused
            "INSERT INTO ratings (id, study_id, annotator_id, item_id, assignment_id, value, "
            "rated_at, revision) VALUES (6, 1, 1, 1, 1, 'v', '2026-01-02', 3)"
        )
    engine.dispose()


@pytest.mark.parametrize("unmigrated_backend_url", ["postgres"], indirect=True)
def test_migration_orders_existing_slots_on_postgresql(unmigrated_backend_url):
    """A PostgreSQL store at 0005 with a queue gets ``order_key = position * ORDER_GAP`` and an
    empty tiebreaks table."""
    from medsim_annot.storage import ORDER_GAP

    engine = _pg_engine(unmigrated_backend_url)

    def old_data(conn):
        x = conn.execute
        x(
            sa.text(
                "INSERT INTO studies (id, name, scale_json, guideline, config_json, "
                "created_at, ready) VALUES (1, 's', '{}', '', '{}', '2026-01-01', TRUE)"
            )
        )
        x(
            sa.text(
                "INSERT INTO items (id, study_id, pair_id, position, term_1, term_2, dataset, "
                "difficulty, negative_strategy, concept_id_1, concept_id_2, meta_json) "
                "VALUES (1, 1, 'p', 0, 'a', 'b', '', '', '', '', '', '{}')"
            )
        )
        x(
            sa.text(
                "INSERT INTO annotators (id, study_id, name, active, created_at) "
                "VALUES (1, 1, 'x', TRUE, '2026-01-01')"
            )
        )
        for pos in (0, 1, 2):
            x(
                sa.text(
                    "INSERT INTO assignments (study_id, annotator_id, item_id, position, kind, "
                    f"swapped) VALUES (1, 1, 1, {pos}, 'main', FALSE)"
                )
            )

    _alembic(engine, "0005", old_data)
    _alembic(engine, "head")
    with engine.connect() as conn:
        keys = conn.exec_driver_sql(
            "SELECT position, order_key FROM assignments ORDER BY position"
        ).all()
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM tiebreaks").scalar() == 0
    assert [tuple(k) for k in keys] == [(p, p * ORDER_GAP) for p in (0, 1, 2)]
    engine.dispose()
