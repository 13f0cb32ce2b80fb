"""Shared fixtures: ../shared data, a temporary database, the CLI runner, hypothesis profiles."""

from __future__ import annotations

import functools
import os
import re
import shutil
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


def examples(n: int) -> int:
    """A property test's own example count *n*, capped at the "fast" profile's in ``make
    test-fast`` (``HYPOTHESIS_PROFILE=fast``): ``@settings(max_examples=examples(40))``. A
    plain ``max_examples=40`` would override the profile and run 40 in the quick loop too."""
    fast = settings.get_profile("fast").max_examples
    return min(n, fast) if os.environ.get("HYPOTHESIS_PROFILE") == "fast" else n


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


#: scrypt's cost in this process's tests: 2^10 instead of the product's 2^17 (0.4 s a hash
#: on this machine, ~0.002 s at 2^10). A stored hash carries its own parameters, so hashes
#: made here verify anywhere (an app server started by a test re-hashes them to 2^17 at the
#: first sign-in, as it does for any older hash). Tests about the parameters themselves are
#: marked ``real_scrypt``.
TEST_SCRYPT_N = 2**10


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashes_in_the_run():
    """Hash at :data:`TEST_SCRYPT_N` from the run's start, so that module- and session-scoped
    fixtures (set up before any test's own fixtures) store cheap hashes too: a hash stored
    at the product's cost there made every later sign-in of its tests verify at 2^17
    (0.2-0.4 s each). Yields the product's values for :func:`_cheap_password_hashes`."""
    from medsim_annot.services.people import admins, passwords

    real = {"SCRYPT_N": passwords.SCRYPT_N, "DUMMY_HASH": passwords.DUMMY_HASH}
    dummy = passwords.DUMMY_HASH.replace(
        f"scrypt${passwords.SCRYPT_N}$", f"scrypt${TEST_SCRYPT_N}$"
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(passwords, "SCRYPT_N", TEST_SCRYPT_N)
        mp.setattr(passwords, "DUMMY_HASH", dummy)
        mp.setattr(admins, "DUMMY_HASH", dummy)
        yield real


@pytest.fixture(autouse=True)
def _cheap_password_hashes(request, monkeypatch, _cheap_password_hashes_in_the_run):
    """A test marked ``real_scrypt`` hashes at the product's cost."""
    from medsim_annot.services.people import admins, passwords

    if request.node.get_closest_marker("real_scrypt"):
        real = _cheap_password_hashes_in_the_run
        monkeypatch.setattr(passwords, "SCRYPT_N", real["SCRYPT_N"])
        monkeypatch.setattr(passwords, "DUMMY_HASH", real["DUMMY_HASH"])
        monkeypatch.setattr(admins, "DUMMY_HASH", real["DUMMY_HASH"])


@pytest.fixture(scope="session", autouse=True)
def _component_manifests_scanned_once():
    """Each new ``AppTest`` scans every installed distribution's metadata for Streamlit
    component manifests (``BidiComponentManager.discover_and_register_components``: 0.12 s
    of CPU here, hundreds of times a run); the installed packages do not change during a
    run, so this process scans once and hands each AppTest a copy of the same list."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    found: list = []

    def scanned_once(max_workers: int | None = None) -> list:
        if not found:
            found.append(scan(max_workers))
        return list(found[0])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(manifest_scanner, "scan_component_manifests", scanned_once)
        yield


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Streamlit's AppTest runs a page as ``__main__`` and leaves it there; a later test
    that starts processes with "spawn" would then re-run that page in every child. Each
    test ends with the ``__main__`` it started with."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


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


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory) -> Path:
    """A SQLite store holding ``medsim demo``'s studies, seeded once per test process (0.4 s
    a seeding) and copied by :func:`demo_db_url` for each test. Seeded as :func:`db_url`'s
    tests seed it: no admin password configured (the demo stores one, hashed at the tests'
    cheap scrypt cost: :func:`_cheap_password_hashes_in_the_run`, autouse, is set up first)."""
    from medsim_annot.services.demo import seed_demo
    from medsim_annot.storage import dispose_all, get_engine

    path = tmp_path_factory.mktemp("demo_template") / "medsim.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
        engine = get_engine(f"sqlite:///{path}")
        assert seed_demo(engine=engine)["seeded"]
        engine.dispose()
    dispose_all()
    # the last connection's close folded the write-ahead log into the file: one file to copy
    assert not path.with_name(path.name + "-wal").exists()
    return path


@pytest.fixture
def demo_db_url(_demo_template, tmp_path, monkeypatch) -> str:
    """A fresh SQLite store with the demo studies (a copy of :func:`_demo_template`), also set
    as MEDSIM_DATABASE_URL: what ``db_url`` and ``seed_demo()`` give, without seeding again."""
    path = tmp_path / "medsim.db"
    shutil.copyfile(_demo_template, path)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("MEDSIM_DATABASE_URL", url)
    return url


class _PostgresStore:
    """This test process's PostgreSQL database, created and migrated once, emptied for each
    test (a CREATE DATABASE and the migrations cost ~0.7 s a test; emptying ~0.05 s).

    Emptying: every other connection to it ends, then every table but ``alembic_version``
    is truncated with its sequences restarted (the migrations store no rows besides the
    version). Should a test have changed the schema (a restore, a migration test), the
    database is dropped and made again, so each test starts from the migrated schema.
    """

    _SCHEMA = (
        "SELECT md5(string_agg(x, ',' ORDER BY x)) FROM ("
        " SELECT table_name || '.' || column_name || ':' || data_type AS x"
        " FROM information_schema.columns WHERE table_schema = 'public'"
        " UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'"
        " UNION ALL SELECT 'v:' || version_num FROM alembic_version) s"
    )

    def __init__(self, base: str):
        import uuid

        import sqlalchemy as sa

        self.base = base
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.name = f"medsim_t_{worker}_{uuid.uuid4().hex[:8]}"
        self.url = base.rsplit("/", 1)[0] + "/" + self.name
        driver = "postgresql+psycopg://"
        self.admin = sa.create_engine(
            base.replace("postgresql://", driver, 1), isolation_level="AUTOCOMMIT"
        )
        self.own = sa.create_engine(
            self.url.replace("postgresql://", driver, 1),
            isolation_level="AUTOCOMMIT",
            poolclass=sa.pool.NullPool,
        )
        self.schema: str | None = None
        self.tables: list[str] = []

    def _make(self) -> None:
        from medsim_annot.storage import dispose_all, get_engine

        self.drop()
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{self.name}"')
        get_engine(self.url)  # migrated to head
        dispose_all()
        with self.own.connect() as conn:
            self.schema = conn.exec_driver_sql(self._SCHEMA).scalar()
            self.tables = [
                r[0]
                for r in conn.exec_driver_sql(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                    " AND tablename <> 'alembic_version' ORDER BY tablename"
                )
            ]

    def fresh(self) -> str:
        """The database's URL, as a newly migrated store."""
        if self.schema is None:
            self._make()
            return self.url
        with self.admin.connect() as conn:
            conn.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.name,),
            )
        with self.own.connect() as conn:
            same = conn.exec_driver_sql(self._SCHEMA).scalar() == self.schema
            if same:
                listed = ", ".join(f'"{t}"' for t in self.tables)
                conn.exec_driver_sql(f"TRUNCATE {listed} RESTART IDENTITY CASCADE")
        if not same:
            self._make()
        return self.url

    def drop(self) -> None:
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def _postgres_store():
    """This process's :class:`_PostgresStore` (None without MEDSIM_TEST_POSTGRES_URL)."""
    base = os.environ.get("MEDSIM_TEST_POSTGRES_URL", "")
    if not base:
        yield None
        return
    store = _PostgresStore(base)
    yield store
    from medsim_annot.storage import dispose_all

    dispose_all()
    store.drop()
    store.admin.dispose()


def _store_url(kind: str, tmp_path, monkeypatch, pg: _PostgresStore | None, migrated: bool):
    """Yield a store URL of *kind* (set as MEDSIM_DATABASE_URL): a new SQLite file; on
    PostgreSQL this process's test database emptied (*migrated*) or a new, empty database
    dropped afterwards."""
    import contextlib
    import uuid

    from medsim_annot.storage import dispose_all

    dispose_all()
    with contextlib.ExitStack() as after:
        after.callback(dispose_all)
        if kind == "sqlite":
            url = f"sqlite:///{tmp_path / 'store.db'}"
        else:
            need(
                pg is not None,
                "MEDSIM_TEST_POSTGRES_URL is not set: PostgreSQL store tests skipped",
                "MEDSIM_REQUIRE_POSTGRES",
            )
            assert pg is not None
            if migrated:
                url = pg.fresh()
            else:
                name = "medsim_e_" + uuid.uuid4().hex[:10]
                with pg.admin.connect() as conn:
                    conn.exec_driver_sql(f'CREATE DATABASE "{name}"')

                def drop(name: str = name) -> None:
                    with pg.admin.connect() as conn:
                        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

                after.callback(drop)
                url = pg.base.rsplit("/", 1)[0] + "/" + name
        monkeypatch.setenv("MEDSIM_DATABASE_URL", url)
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend_url(request, tmp_path, monkeypatch, _postgres_store) -> str:
    """A fresh store on each backend: a SQLite file, and on the PostgreSQL server of
    MEDSIM_TEST_POSTGRES_URL (skipped when unset unless MEDSIM_REQUIRE_POSTGRES=1) this
    process's test database emptied to its migrated schema (:class:`_PostgresStore`).
    Also set as MEDSIM_DATABASE_URL."""
    yield from _store_url(request.param, tmp_path, monkeypatch, _postgres_store, True)


@pytest.fixture(params=["sqlite", "postgres"])
def unmigrated_backend_url(request, tmp_path, monkeypatch, _postgres_store) -> str:
    """An empty store on each backend, not migrated (a migration test's start): a SQLite
    file, or a new PostgreSQL database dropped afterwards. Also MEDSIM_DATABASE_URL."""
    yield from _store_url(request.param, tmp_path, monkeypatch, _postgres_store, False)


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


# ---- one served app for the browser modules that need no server of their own -------------------
#: The admin password of :func:`served_app`.
SERVED_APP_PASSWORD = "served-app-admin-password"


@pytest.fixture(scope="session")
def served_app(tmp_path_factory):
    """One ``streamlit run serve.py`` for the whole run (per xdist worker; the modules using
    it are one xdist work unit, so one in all), shared by browser test modules that each
    create their studies under their own names in its store: ``base`` (URL), ``url`` (the
    SQLite store, migrated before the start), ``env`` (the server's environment, for CLI
    calls), ``tmp`` and ``password`` (the admin password). Tests that restart, kill or
    break a server, change its settings or count its sign-ins keep servers of their own.

    The server runs as a fresh install would, whatever the shell running the tests has
    set: no public URL (the sign-in address is ``base``), no word embeddings
    (``MEDSIM_EMBEDDINGS_DIR`` unset) and an empty Hugging Face cache (``HF_HOME``), so the
    Embedding scoring page offers no model."""
    from medsim_annot.storage import dispose_all, get_engine
    from tests.streamlit_harness import require_chromium, streamlit_server

    require_chromium()
    tmp = tmp_path_factory.mktemp("served_app")
    url = f"sqlite:///{tmp / 'medsim.db'}"
    get_engine(url)  # migrated before the server starts
    dispose_all()
    hf_home = tmp / "hf-home"
    hf_home.mkdir()
    unset = ("MEDSIM_PUBLIC_URL", "MEDSIM_EMBEDDINGS_DIR")
    env = {
        **{k: v for k, v in os.environ.items() if k not in unset},
        "MEDSIM_DATABASE_URL": url,
        "MEDSIM_ADMIN_PASSWORD": SERVED_APP_PASSWORD,
        "HF_HOME": str(hf_home),
        "PYTHONPATH": str(ROOT),
    }
    with streamlit_server(env, tmp / "streamlit.log") as base:
        yield {"base": base, "url": url, "env": env, "tmp": tmp, "password": SERVED_APP_PASSWORD}


# ---- scheduling under pytest-xdist ------------------------------------------------------------
_MODULE_SCOPED = ('scope="module"', "scope='module'")


@functools.cache
def _work_unit(path: str) -> str | None:
    """The xdist work unit of the tests in the file *path* (relative to the root): the
    shared served app's modules are one unit, a module with module-scoped fixtures (a
    served app, a browser, a Spark session) is one, any other test is a unit of its own
    (``None``)."""
    file = ROOT / path
    if not (path.endswith(".py") and file.is_file()):
        return None
    text = file.read_text(encoding="utf-8")
    # the fixture's name as a word (a test named test_a_served_app_... does not use it)
    if re.search(r"\bserved_app\b", text) and file.name != "conftest.py":
        return "served_app"
    return path if any(s in text for s in _MODULE_SCOPED) else None


def pytest_xdist_make_scheduler(config, log):
    """Under ``-n N`` (``--dist load``, the default): tests are sent one by one, except
    that every test of a module with module-scoped fixtures goes to one worker (and the
    modules sharing :func:`served_app` to one worker together), so each served app,
    browser or Spark session starts once per run, not once per worker that happens to get
    one of its tests. (``xdist_group`` marks would say the same, but pytest-xdist 3.8's
    ``loadgroup`` does not group under pytest 9.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid.split("::", 1)[0]) or nodeid

    return ModuleUnits(config, log) if config.getvalue("dist") == "load" else None


#: Tests left out of ``make test-fast`` (``-m "not slow and not browser"``) besides the
#: browser modules: each starts servers or processes, a Spark or model session, or takes
#: several seconds of a 2-core machine (``--durations``). Node id prefixes.
SLOW = (
    "tests/test_adjudication.py::test_board_is_kept_and_a_decision_updates_it",
    "tests/test_adjudication.py::test_queue_decisions_and_provenance",
    "tests/test_dashboard_fast_paths.py::test_dashboard_equals_the_plain_computation",
    "tests/test_cooccurrence_spark.py::",
    "tests/test_stopping.py::test_withdrawal_never_takes_a_rated_slot",
    "tests/test_smoke_app.py::test_streamlit_serves",
    "tests/test_store.py::test_round_trip_loses_nothing",
    "tests/test_admins.py::test_named_admins_add_list_remove_and_password_rules",
    "tests/test_cli_study.py::test_entry_point_exit_code_2",
    "tests/test_tcp_nodelay.py::test_serve_py_installs_it_before_the_app_is_made",
    "tests/test_warmup.py::test_serve_py_imports_the_dashboard_stack",
    "tests/test_embeddings_contextual.py::",
    "tests/test_load.py::",
    "tests/test_signin_throttle_store.py::test_failures_of_another_process_lock_out_here",
    "tests/test_faults.py::test_kill9",
    "tests/test_ports.py::",
    "tests/test_deploy_nginx.py::",
    "tests/test_snomed_cli.py::test_progress_bars_go_to_stderr",
    "tests/test_annotation_concurrency.py::test_processes_racing",
    "tests/test_study_create_batches.py::test_doctors_keep_rating_while_a_big_study_is_created",
    "tests/test_embeddings_installed.py::test_packaged_model_and_cached_copy_score_alike",
    "tests/test_adaptive.py::test_simulation_small_run_meets_the_design_claims",
    # Monte Carlo coverage runs (7-13 s and 4 s here); the statistics they cover keep exact
    # checks in the quick loop: the floored interval by hand (test_floor_bound_by_hand) and in
    # the stopping rule (test_ppi_group_stopping_reports_the_floored_interval); the active
    # estimator against ppi_py and by hand (test_equal_probabilities_give_ppi_py,
    # test_hand_computation_with_unequal_weights).
    "tests/test_ppi_sequential_cover.py::test_sequential_rule_covers_in_the_strong_binary_setting",
    "tests/test_active.py::test_small_simulation_coverage_and_savings",
    # ten forked processes opening one new store at an instant set 1.5 s ahead (~3 s)
    "tests/test_store_faults.py::test_parallel_first_use_of_a_fresh_database",
    # 12 random histories, both figures computed after every step (6-8 s on SQLite); the
    # quick loop keeps the same comparison after a rating on a warmed study
    # (test_the_warm_up_keeps_what_the_page_asks_for, ..._speaks_the_admins_languages)
    "tests/test_dashboard_warm.py::test_a_shown_figure_always_equals_the_plain_computation",
)


def _real_browser_test(item) -> bool:
    return item is not None and item.path.name.startswith("test_browser_")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop the test process's chromium (tests/streamlit_harness.py ``chromium``) once its
    fixtures are torn down, unless the next test is a real-browser test too."""
    try:
        return (yield)
    finally:
        harness = sys.modules.get("tests.streamlit_harness")
        if harness is not None and not _real_browser_test(nextitem):
            harness.close_browser()


def pytest_collection_modifyitems(config, items):
    """Mark the real-browser modules and :data:`SLOW` ``slow`` (``make test-fast`` leaves
    them out)."""
    for item in items:
        if item.path.name.startswith("test_browser_"):  # every real-browser module
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)
        elif item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
