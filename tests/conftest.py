"""Shared fixtures: ../shared data, a temporary database, the CLI runner, hypothesis profiles."""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEDSIM_SHARED_DIR", ROOT.parent / "shared"))

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fast", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _required(flag: str) -> bool:
    return os.environ.get(flag, "") not in ("", "0", "false", "no")


def need(condition: bool, reason: str, flag: str) -> None:
    """Skip with *reason* unless *condition*; where *flag* is set (CI) fail instead."""
    if condition:
        return
    if _required(flag):
        pytest.fail(f"{reason} (and {flag}=1 requires it)")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _fresh_signin_throttles():
    """Failed sign-ins are counted per process: each test starts with none counted."""
    from medsim_annot.services.people.throttle import ADMIN_SIGNINS, CODE_SIGNINS

    ADMIN_SIGNINS.reset()
    CODE_SIGNINS.reset()
    yield


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    need(
        (SHARED / "data" / "ehr-rel" / "EHR-RelA.tsv").exists(),
        f"../shared not found at {SHARED}",
        "MEDSIM_REQUIRE_SHARED",
    )
    return SHARED


@pytest.fixture(scope="session")
def ehr_rel_a(shared_dir) -> Path:
    return shared_dir / "data" / "ehr-rel" / "EHR-RelA.tsv"


@pytest.fixture
def db_url(tmp_path, monkeypatch) -> str:
    """A fresh SQLite database in a temporary folder, also set as MEDSIM_DATABASE_URL."""
    url = f"sqlite:///{tmp_path / 'medsim.db'}"
    monkeypatch.setenv("MEDSIM_DATABASE_URL", url)
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def backend_url(request, tmp_path, monkeypatch) -> str:
    """A fresh database on each store: a SQLite file, and a new PostgreSQL database on the
    server of MEDSIM_TEST_POSTGRES_URL (skipped when unset unless MEDSIM_REQUIRE_POSTGRES=1),
    dropped afterwards. Also set as MEDSIM_DATABASE_URL."""
    import uuid

    import sqlalchemy as sa

    from medsim_annot.storage import dispose_all

    dispose_all()
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
        monkeypatch.setenv("MEDSIM_DATABASE_URL", url)
        yield url
        dispose_all()
        return
    base = os.environ.get("MEDSIM_TEST_POSTGRES_URL", "")
    need(
        bool(base),
        "MEDSIM_TEST_POSTGRES_URL is not set: PostgreSQL store tests skipped",
        "MEDSIM_REQUIRE_POSTGRES",
    )
    name = "medsim_t_" + uuid.uuid4().hex[:10]
    admin = sa.create_engine(
        base.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = base.rsplit("/", 1)[0] + "/" + name
    monkeypatch.setenv("MEDSIM_DATABASE_URL", url)
    try:
        yield url
    finally:
        dispose_all()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli():
    """Run ``medsim ARGS`` in-process through the real entry point, ``medsim_annot.cli.main``,
    as a user would see it: (exit_code, stdout, stderr). The exit code is the one ``main``
    exits with (its own error handling turns input and usage errors into 2); an exception
    ``main`` lets through propagates to the test."""
    import contextlib
    import io

    from medsim_annot.cli import main

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        code: int = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                if exc.code is None:
                    code = 0
                elif isinstance(exc.code, int):
                    code = exc.code
                else:  # sys.exit("message"): printed to stderr, status 1
                    print(exc.code, file=sys.stderr)
                    code = 1
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture(scope="session")
def python() -> str:
    return sys.executable


# ---- scheduling under pytest-xdist ------------------------------------------------------------
_MODULE_SCOPED = ('scope="module"', "scope='module'")


@functools.cache
def _has_module_fixture(path: str) -> bool:
    """Does the test file at *path* define a module-scoped fixture (a served app, a browser,
    a Spark session)?"""
    text = Path(path).read_text(encoding="utf-8")
    return any(s in text for s in _MODULE_SCOPED)


def pytest_collection_modifyitems(config, items):
    """Keep every test of a module with module-scoped fixtures on one xdist worker
    (``xdist_group`` by module; the Makefile runs ``-n 2 --dist loadgroup``), so its served
    app, browser or Spark session starts once per run, not once per worker that happens to
    get one of its tests. Other tests are spread one by one, as with ``--dist load``."""
    for item in items:
        path = str(item.path)
        if path.endswith(".py") and _has_module_fixture(path):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
