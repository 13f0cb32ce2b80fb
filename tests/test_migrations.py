"""The migrations and the models describe one schema: every table the migrations create at
head is a model's table and the other way round (a table no code maps, like the old
``settings``, cannot linger), and 0012 drops ``settings`` and gives it back on downgrade."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from medsim_annot.storage.db import MIGRATIONS
from medsim_annot.storage.models import Base


def _cfg() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def _tables(conn) -> set[str]:
    return set(sa.inspect(conn).get_table_names()) - {"alembic_version"}


def test_head_schema_has_exactly_the_models_tables(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'head.db'}")
    cfg = _cfg()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        assert _tables(conn) == set(Base.metadata.tables)
        assert "settings" not in _tables(conn)
    engine.dispose()


def test_migration_0012_drops_settings_and_goes_back(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    cfg = _cfg()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0011")
        assert "settings" in _tables(conn)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0012")
        assert "settings" not in _tables(conn)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0011")
        cols = {c["name"] for c in sa.inspect(conn).get_columns("settings")}
        assert cols == {"key", "value"}
    engine.dispose()


def test_migration_0016_served_slots_and_back_keeps_ratings_append_only(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'served.db'}")
    cfg = _cfg()

    def columns(conn, table: str) -> set[str]:
        return {c["name"] for c in sa.inspect(conn).get_columns(table)}

    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0016")
        assert "served_slots" in _tables(conn)
        assert "browser_ms" in columns(conn, "ratings")
        assert "session_key" in columns(conn, "rating_tokens")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0012")
        assert "served_slots" not in _tables(conn)
        assert "browser_ms" not in columns(conn, "ratings")
        assert "session_key" not in columns(conn, "rating_tokens")
        triggers = set(
            conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'").scalars()
        )
        assert {"ratings_append_only_update", "ratings_append_only_delete"} <= triggers
    engine.dispose()


def test_migration_0018_person_language_and_study_texts_up_and_down(backend_url):
    """0018 adds a nullable ``language`` to annotators, adjudicators and admins and the
    append-only ``study_texts``, and takes them away again, on SQLite and PostgreSQL."""
    url = backend_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = sa.create_engine(url)
    cfg = _cfg()
    people = ("annotators", "adjudicators", "admins")

    def columns(conn, table: str) -> dict[str, dict]:
        return {c["name"]: c for c in sa.inspect(conn).get_columns(table)}

    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0017")
        assert all("language" not in columns(conn, t) for t in people)
        conn.execute(
            sa.text(
                "INSERT INTO studies (name, scale_json, guideline, config_json,"
                " created_at, ready, annotator_sso) VALUES ('s', '{}', '', '{}',"
                " '2026-11-27 10:00:00', true, false)"
            )
        )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0018")
        for table in people:
            column = columns(conn, table)["language"]
            assert column["nullable"] and isinstance(column["type"], sa.String)
        assert "study_texts" in _tables(conn)
        conn.execute(
            sa.text(
                "INSERT INTO study_texts (study_id, language, texts_json, created_at)"
                " SELECT id, 'de', '{}', '2026-11-27 10:00:00' FROM studies"
            )
        )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0017")
        assert all("language" not in columns(conn, t) for t in people)
        assert "study_texts" not in _tables(conn)
        assert conn.execute(sa.text("SELECT count(*) FROM studies")).scalar_one() == 1
    engine.dispose()
