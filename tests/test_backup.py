"""``medsim backup`` / ``medsim restore``: a backup taken while annotators are
saving holds every rating acknowledged before it started, restores into a sound store, and
PostgreSQL stores are pointed to pg_dump."""

from __future__ import annotations

import os
import stat
import threading
import time

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services import studies as svc
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from medsim_annot.storage.backup import integrity_problems
from tests.conftest import need


def _study(n_pairs=120, annotators=("a", "b", "c")):
    frame = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n_pairs)],
            "term_1": [f"x{i}" for i in range(n_pairs)],
            "term_2": [f"y{i}" for i in range(n_pairs)],
        }
    )
    res = svc.create_study("s", frame, BINARY, list(annotators))
    return [authenticate_annotator(a["access_code"]) for a in res["annotators"]]


def _ratings() -> set[tuple[str, str, str]]:
    out = svc.export_ratings(open_study("s"))
    return set(zip(out["annotator"], out["pair_id"], out["rating"].astype(str)))


def test_backup_during_writes_restores_every_committed_rating(db_url, tmp_path, cli, monkeypatch):
    idents = _study()
    acked: list[tuple[str, str, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def write(ident):
        try:
            for pos in range(120):
                if stop.is_set():
                    return
                value = ("same", "not_same")[pos % 2]
                A.submit_rating(ident.annotator_id, pos, value, credential=ident.credential_version)
                with lock:
                    acked.append((ident.name, f"p{pos}", value))
        except BaseException as exc:  # a writer's failure fails the test, not just a warning
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in idents]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while len(acked) < 60:
        assert not errors, errors
        assert time.monotonic() < deadline, f"only {len(acked)} ratings saved in 120 s"
        time.sleep(0.01)
    with lock:
        before = set(acked)  # acknowledged before the backup started
    out = tmp_path / "backups" / "medsim-backup.db"
    res = cli("backup", "--out", out, "--json")
    assert res.exit_code == 0, res.stderr
    stop.set()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a writer thread did not finish within 120 s"
    assert not errors, errors
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert integrity_problems(out) == []
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".partial")]

    target = tmp_path / "restored" / "medsim.db"
    dispose_all()
    monkeypatch.setenv("MEDSIM_DATABASE_URL", f"sqlite:///{target}")
    res = cli("restore", out)
    assert res.exit_code == 0, res.stderr
    restored = _ratings()
    assert before <= restored  # every rating acknowledged before the backup started
    assert restored <= set(acked)  # and nothing that was never acknowledged
    assert len(svc.export_ratings(open_study("s"))) == len(restored)  # one current rating per slot
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with get_engine().connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    # The restored store is live: annotators resume at the first slot they had not saved.
    for ident in idents:
        done = {p for who, p, _ in restored if who == ident.name}
        state = A.queue_state(ident.annotator_id)
        assert state.done == len(done)
        expected = min((i for i in range(120) if f"p{i}" not in done), default=None)
        assert state.first_unrated == expected


def test_restore_refuses_what_it_should(db_url, tmp_path, cli):
    _study(n_pairs=4, annotators=("a",))
    out = tmp_path / "b.db"
    assert cli("backup", "--out", out).exit_code == 0
    again = cli("backup", "--out", out)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert cli("backup", "--out", out, "--force").exit_code == 0
    busy = cli("restore", out)  # the store has studies
    assert busy.exit_code == 2 and "--force" in busy.stderr
    assert cli("restore", out, "--force").exit_code == 0
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    bad = cli("restore", junk, "--force")
    assert bad.exit_code == 2 and "not a SQLite backup" in bad.stderr
    missing = cli("restore", tmp_path / "nope.db")
    assert missing.exit_code == 2 and "no such backup file" in missing.stderr


def test_postgresql_without_pg_tools_prints_a_command_that_works(cli, monkeypatch, tmp_path):
    """Without pg_dump on PATH the printed command has no masked password (libpq asks for
    it) and writes the --out file."""
    import shlex

    monkeypatch.setenv("MEDSIM_DATABASE_URL", "postgresql://medsim:s3cret@db.example.org/medsim")
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump here
    out = tmp_path / "nightly.dump"
    res = cli("backup", "--out", out)
    assert res.exit_code == 2
    assert "s3cret" not in res.stderr and "***" not in res.stderr
    cmd = res.stderr.split("~/.pgpass): ", 1)[1].rsplit(" (see", 1)[0]
    assert shlex.split(cmd) == [
        "pg_dump",
        "--format=custom",
        "--file",
        str(out),
        "--dbname",
        "postgresql://medsim@db.example.org/medsim",
    ]
    res = cli("restore", out)
    assert res.exit_code == 2 and "pg_restore --clean" in res.stderr and str(out) in res.stderr
    assert "s3cret" not in res.stderr
    assert not out.exists()


def _pg_url(name: str) -> str:
    base = os.environ.get("MEDSIM_TEST_POSTGRES_URL", "")
    return base.rsplit("/", 1)[0] + "/" + name


@pytest.mark.parametrize("backend_url", ["postgres"], indirect=True)
def test_postgresql_backup_and_restore_run_pg_dump(backend_url, cli, tmp_path, monkeypatch):
    """With pg_dump on PATH: the archive is written to --out, 0600, readable by
    pg_restore --list, and the password is on no command line; restore puts it back."""
    import shutil
    import subprocess

    need(
        shutil.which("pg_dump") is not None,
        "pg_dump is not installed (apt-get install postgresql-client)",
        "MEDSIM_REQUIRE_POSTGRES",
    )
    _study(n_pairs=4, annotators=("a",))
    before = _ratings()
    seen: list[list[str]] = []
    real_run = subprocess.run

    def spy(args, *a, **kw):
        seen.append([str(x) for x in args])
        return real_run(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", spy)
    out = tmp_path / "nested" / "nightly.dump"
    res = cli("backup", "--out", out)
    assert res.exit_code == 0, res.stderr
    assert out.is_file() and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.stat().st_size > 1000 and "1 studies" in res.stdout
    listing = real_run(["pg_restore", "--list", str(out)], capture_output=True, text=True)
    assert listing.returncode == 0 and "TABLE DATA public ratings" in listing.stdout
    password = backend_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert seen and all(password not in " ".join(args) for args in seen)
    assert password not in res.stdout + res.stderr
    assert not list(out.parent.glob("*.partial"))
    frame = pd.DataFrame({"pair_id": ["q"], "term_1": ["u"], "term_2": ["v"]})
    svc.create_study("after-the-backup", frame, BINARY, ["z"])  # gone once restored
    busy = cli("restore", out)
    assert busy.exit_code == 2 and "--force" in busy.stderr
    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"not an archive" * 100)
    bad = cli("restore", junk, "--force")
    assert bad.exit_code == 2 and "not a pg_dump archive" in bad.stderr
    dispose_all()
    res = cli("restore", out, "--force")
    assert res.exit_code == 0, res.stderr
    dispose_all()
    assert _ratings() == before
    assert [s.study for s in svc.list_studies()] == ["s"]


def test_restore_refuses_while_served_and_keeps_the_replaced_store(db_url, tmp_path, cli):
    """A process holding the store (the app) makes restore refuse and change nothing; once
    it has stopped, the replaced store is kept as *.before-restore."""
    import subprocess
    import sys

    from medsim_annot.storage.backup import inspect_sqlite, sqlite_path

    _study(n_pairs=4, annotators=("a",))
    out = tmp_path / "b.db"
    assert cli("backup", "--out", out).exit_code == 0
    frame = pd.DataFrame({"pair_id": ["q"], "term_1": ["u"], "term_2": ["v"]})
    svc.create_study("after-the-backup", frame, BINARY, ["z"])
    db = sqlite_path(db_url)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sqlite3,time; c=sqlite3.connect({str(db)!r}); "
            "c.execute('select 1').fetchall(); print('open', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        busy = cli("restore", out, "--force")
        assert busy.exit_code == 2 and "stop the app first" in busy.stderr
        assert str(holder.pid) in busy.stderr
        assert len(svc.list_studies()) == 2  # nothing changed
    finally:
        holder.kill()
        holder.wait(10)
    dispose_all()
    done = cli("restore", out, "--force")
    assert done.exit_code == 0, done.stderr
    kept = db.with_name(db.name + ".before-restore")
    assert f"kept as {kept}" in done.stdout
    assert inspect_sqlite(kept).studies == 2 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    dispose_all()
    assert [s.study for s in svc.list_studies()] == ["s"]
