"""Named admins, passwords, the event log's actor, SSO role mapping and throttled sign-ins."""

from __future__ import annotations

import hashlib
import logging
import threading
import time

import pandas as pd
import pytest
import sqlalchemy as sa

from medsim_annot.errors import UsageProblem
from medsim_annot.services import activity
from medsim_annot.services import studies as svc
from medsim_annot.services.people import admins, passwords, signin, sso
from medsim_annot.services.people import annotators as ann_svc
from medsim_annot.services.people.throttle import CODE_SIGNINS, Policy, Throttle, ThrottledError
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine, session_scope

BINARY = "binary"


@pytest.fixture
def engine(backend_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("MEDSIM_SSO_ADMINS", raising=False)
    return get_engine(backend_url)


def _study(engine, name="s", annotators=("a", "b")):
    from data_schemas.scales import BINARY as SCALE

    pairs = pd.DataFrame({"pair_id": ["p1", "p2"], "term_1": ["x", "y"], "term_2": ["u", "v"]})
    return svc.create_study(name, pairs, SCALE, list(annotators), engine=engine)


# ------------------------------------------------------------------------- passwords
@pytest.mark.real_scrypt
def test_hash_uses_strong_scrypt_with_maxmem(monkeypatch):
    seen = {}
    real = hashlib.scrypt

    def spy(password, **kw):
        seen.update(kw)
        return real(password, **kw)

    monkeypatch.setattr(hashlib, "scrypt", spy)
    stored = passwords.hash_password("a long enough secret")
    tag, n, r, p, salt, digest = stored.split("$")
    assert (tag, int(n), int(r), int(p)) == ("scrypt", 2**17, 8, 1)
    assert seen["n"] > 2**14 and seen["maxmem"] >= 128 * seen["n"] * seen["r"]
    assert len(bytes.fromhex(salt)) == 16 and len(bytes.fromhex(digest)) == 32
    assert passwords.verify_password("a long enough secret", stored)
    assert not passwords.verify_password("a long enough secreT", stored)
    assert not passwords.verify_password("x", "not-a-hash")


def test_named_admins_add_list_remove_and_password_rules(engine):
    assert not admins.admin_password_configured(engine=engine)
    with pytest.raises(UsageProblem, match="at least 12 characters"):
        admins.add_admin("alice", password="eleven char", engine=engine)
    admins.add_admin("alice", password="alice's long password", engine=engine)
    admins.add_admin("bob", sso_identity="Bob@Hospital.example", engine=engine)
    with pytest.raises(UsageProblem, match="exists"):
        admins.add_admin("carol", sso_identity="bob@hospital.example", engine=engine)
    with pytest.raises(UsageProblem, match="password or an SSO identity"):
        admins.add_admin("dave", engine=engine)
    assert [
        (r["name"], r["password"], r["sso_identity"]) for r in admins.list_admins(engine=engine)
    ] == [
        ("alice", True, ""),
        ("bob", False, "bob@hospital.example"),
    ]
    assert admins.admin_password_configured(engine=engine)
    assert admins.check_admin_password("alice", "alice's long password", engine=engine)
    assert not admins.check_admin_password("alice", "wrong password!!", engine=engine)
    assert not admins.check_admin_password("bob", "anything at all", engine=engine)
    assert not admins.check_admin_password("nobody", "alice's long password", engine=engine)
    admins.set_password("alice", "a brand new password", engine=engine)
    assert not admins.check_admin_password("alice", "alice's long password", engine=engine)
    assert admins.check_admin_password("alice", "a brand new password", engine=engine)
    admins.remove_admin("alice", engine=engine)
    assert not admins.check_admin_password("alice", "a brand new password", engine=engine)
    with pytest.raises(UsageProblem, match="no admin named"):
        admins.remove_admin("alice", engine=engine)


def test_env_password_needs_12_characters(engine, monkeypatch):
    monkeypatch.setenv("MEDSIM_ADMIN_PASSWORD", "short-pw")
    assert "fewer than 12" in passwords.env_password_problem()
    assert not admins.admin_password_configured(engine=engine)
    assert not admins.check_admin_password("admin", "short-pw", engine=engine)
    monkeypatch.setenv("MEDSIM_ADMIN_PASSWORD", "exactly-12ch")
    assert passwords.env_password_problem() is None
    assert admins.check_admin_password("admin", "exactly-12ch", engine=engine)
    assert admins.check_admin_password("", "exactly-12ch", engine=engine)  # name defaults
    assert not admins.check_admin_password("admin", "exactly-12cH", engine=engine)


@pytest.mark.real_scrypt
def test_migration_moves_the_old_admin_password_and_rehashes_it(tmp_path, monkeypatch):
    """A database with the single scrypt-2^14 admin password of 0002 keeps working."""
    from alembic import command
    from alembic.config import Config

    from medsim_annot.storage.db import MIGRATIONS

    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    url = f"sqlite:///{tmp_path / 'old.db'}"
    raw = sa.create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    salt = b"0123456789abcdef"
    old = hashlib.scrypt(b"the old admin password", salt=salt, n=2**14, r=8, p=1, dklen=32)
    with raw.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
        conn.execute(
            sa.text("INSERT INTO settings (key, value) VALUES ('admin_password_scrypt', :v)"),
            {"v": salt.hex() + "$" + old.hex()},
        )
    raw.dispose()
    dispose_all()
    engine = get_engine(url)
    with session_scope(engine) as s:
        rows = admins.store.list_admins(s)
    assert [r.name for r in rows] == ["admin"] and rows[0].password_hash.startswith("scrypt$16384$")
    assert admins.check_admin_password("admin", "the old admin password", engine=engine)
    with session_scope(engine) as s:
        rehashed = admins.store.get_admin(s, "admin")
    assert rehashed is not None and rehashed.password_hash.startswith(f"scrypt${2**17}$8$1$")
    assert admins.check_admin_password("admin", "the old admin password", engine=engine)
    dispose_all()


# ------------------------------------------------------------------------- event log
def test_events_name_their_actor(engine, tmp_path):
    with activity.acting_as("admin:alice"):
        _study(engine)
        ann_svc.add_annotator(open_study("s", engine=engine), "c")
        ann_svc.issue_code(open_study("s", engine=engine), "a")
    with activity.acting_as("sso:bob@hospital.example"):
        ann_svc.revoke_code(open_study("s", engine=engine), "b")
        ann_svc.rename_annotator(open_study("s", engine=engine), "c", "cee")
        svc.export_ratings(open_study("s", engine=engine), tmp_path / "r.csv")
        ann_svc.link_annotator_sso(open_study("s", engine=engine), "a", "A@Hospital.example")
        sso.set_annotator_sso(open_study("s", engine=engine), True)
    log = activity.activity(engine=engine)
    got = list(zip(log["actor"], log["action"], log["annotator"], strict=True))[::-1]
    assert got == [
        ("admin:alice", "study_created", ""),
        ("admin:alice", "annotator_added", "cee"),
        ("admin:alice", "code_issued", "a"),
        ("sso:bob@hospital.example", "code_revoked", "b"),
        ("sso:bob@hospital.example", "annotator_renamed", "cee"),
        ("sso:bob@hospital.example", "ratings_exported", ""),
        ("sso:bob@hospital.example", "sso_linked", "a"),
        ("sso:bob@hospital.example", "annotator_sso_enabled", ""),
    ]
    assert set(log["study"]) == {"s"}
    assert activity.activity(study=open_study("s", engine=engine), limit=2)["action"].tolist() == [
        "annotator_sso_enabled",
        "sso_linked",
    ]


def test_gold_export_is_logged(engine, tmp_path):
    from medsim_annot.services.gold.export import export_gold

    _study(engine)
    with activity.acting_as("admin:alice"):
        export_gold(open_study("s", engine=engine), tmp_path / "gold.csv")
    top = activity.activity(engine=engine).iloc[0]
    assert (top["actor"], top["action"]) == ("admin:alice", "gold_exported")
    assert '"file": "gold.csv"' in top["detail"]


def test_cli_admin_commands_and_actor(db_url, cli, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    r = cli("admin", "set-password", "alice", "--password", "too short")
    assert r.exit_code == 2 and "at least 12 characters" in r.stderr
    r = cli("admin", "set-password", "alice", "--password", "alice's long password")
    assert r.exit_code == 0, r.stderr
    r = cli("admin", "add", "bob", "--sso", "bob@hospital.example")
    assert r.exit_code == 0, r.stderr
    r = cli("admin", "add", "bob", "--sso", "other@hospital.example")
    assert r.exit_code == 2 and "exists" in r.stderr
    r = cli("admin", "list", "--json")
    assert [x["name"] for x in __import__("json").loads(r.stdout)] == ["alice", "bob"]
    assert "hash" not in r.stdout and "scrypt" not in r.stdout
    r = cli("admin", "remove", "bob")
    assert r.exit_code == 0
    r = cli("admin", "activity", "--json")
    acts = __import__("json").loads(r.stdout)
    assert [a["action"] for a in acts] == ["admin_removed", "admin_added", "admin_added"]
    assert all(a["actor"].startswith("cli") for a in acts)


def test_cli_link_sso_and_study_switch(db_url, cli, monkeypatch):
    engine = get_engine(db_url)
    _study(engine)
    r = cli("annotator", "link-sso", "s", "a", "Dr.A@Hospital.example")
    assert r.exit_code == 0 and "dr.a@hospital.example" in r.stdout
    r = cli("annotator", "link-sso", "s", "b", "dr.a@hospital.example")
    assert r.exit_code == 2 and "another annotator" in r.stderr
    r = cli("annotator", "link-sso", "s", "zed", "z@hospital.example")
    assert r.exit_code == 2 and "no annotator named 'zed'" in r.stderr
    claims = {"sub": "x1", "email": "dr.a@hospital.example", "email_verified": True}
    assert sso.sso_role(claims, engine=engine).role == "refused"  # study not enabled
    r = cli("study", "sso", "s", "--enable")
    assert r.exit_code == 0
    assert sso.sso_role(claims, engine=engine).role == "annotator"
    r = cli("annotator", "link-sso", "s", "a", "")
    assert r.exit_code == 0 and "removed" in r.stdout
    assert sso.sso_role(claims, engine=engine).role == "refused"


# ----------------------------------------------------------------------------- SSO roles
def test_sso_role_mapping(engine, monkeypatch):
    _study(engine)
    _study(engine, "t", ("a",))
    admins.add_admin("bob", sso_identity="bob@hospital.example", engine=engine)
    for study in ("s", "t"):
        ann_svc.link_annotator_sso(open_study(study, engine=engine), "a", "sub-annie")
        sso.set_annotator_sso(open_study(study, engine=engine), True)
    listed = sso.sso_role(
        {"sub": "z", "email": "Chief@Hospital.example", "email_verified": True},
        admins=["chief@hospital.example"],
    )
    assert listed.role == "admin" and listed.admin.actor == "sso:chief@hospital.example"
    by_sub = sso.sso_role({"sub": "admin-sub-7"}, admins=["admin-sub-7"], engine=engine)
    assert by_sub.role == "admin"
    bob = {"sub": "q", "email": "BOB@hospital.example", "email_verified": "true"}
    named = sso.sso_role(bob, engine=engine)
    assert named.role == "admin" and named.admin.actor == "admin:bob"
    unverified = {"sub": "q", "email": "bob@hospital.example", "email_verified": False}
    assert sso.sso_role(unverified, engine=engine).role == "refused"
    annie = sso.sso_role({"sub": "sub-annie", "email": "annie@x.example"}, engine=engine)
    assert annie.role == "annotator"
    assert sorted(a.study_name for a in annie.annotators) == ["s", "t"]
    ann_svc.revoke_code(
        open_study("t", engine=engine), "a"
    )  # a revoked annotator cannot use SSO either
    annie = sso.sso_role({"sub": "sub-annie"}, engine=engine)
    assert [a.study_name for a in annie.annotators] == ["s"]
    monkeypatch.setenv("MEDSIM_SSO_ADMINS", "ops@hospital.example")
    assert (
        sso.sso_role({"sub": "o", "email": "ops@hospital.example", "email_verified": True}).role
        == "admin"
    )
    eve = {"sub": "who", "email": "eve@evil.example", "email_verified": True}
    stranger = sso.sso_role(eve, engine=engine)
    assert (stranger.role, stranger.identity) == ("refused", "eve@evil.example")


# ------------------------------------------------------------------------ throttling
class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_throttle_delays_grow_then_lock_out_and_success_clears():
    clock = Clock()
    th = Throttle("admin", Policy(lockout_after=6, lockout_s=600), clock=clock)
    waits = []
    for _ in range(5):
        th.check("10.0.0.1")
        waits.append(th.failure("10.0.0.1"))
        clock.t += waits[-1]
    assert waits == [0.0, 0.0, 1.0, 2.0, 4.0]
    th.failure("10.0.0.1")  # too early: counted all the same
    with pytest.raises(ThrottledError) as exc:
        th.check("10.0.0.1")
    assert exc.value.locked and 599 <= exc.value.retry_after <= 600
    th.check("10.0.0.2")  # another client is not affected
    clock.t += 601
    th.check("10.0.0.1")  # lockout over
    assert th.failures("10.0.0.1") == 6
    th.success("10.0.0.1")
    assert th.failures("10.0.0.1") == 0 and th.failures() == 6


def test_throttle_waits_and_forgets_after_the_window():
    clock = Clock()
    th = Throttle("access-code", Policy(free_per_client=1, window_s=100), clock=clock)
    th.failure("c")
    with pytest.raises(ThrottledError, match="try again in 1 second"):
        th.check("c")
    clock.t += 1
    th.check("c")
    clock.t += 101
    assert th.failures("c") == 0 and th.failures() == 0


def test_throttle_counts_overall_across_clients():
    clock = Clock()
    th = Throttle("access-code", Policy(free_overall=5, max_overall_delay_s=8), clock=clock)
    for i in range(6):
        th.failure(f"10.0.0.{i}")  # each client once: no per-client delay
    th.check("10.9.9.9")  # a client without failures of its own is never held up
    with pytest.raises(ThrottledError):
        th.check("10.0.0.1")  # one that failed too waits for the overall delay
    assert th.failures() == 6


def test_failed_sign_ins_are_throttled_and_logged_without_secrets(engine, caplog):
    admins.add_admin("alice", password="alice's long password", engine=engine)
    caplog.set_level(logging.WARNING, logger="medsim_annot.signin")
    for _ in range(3):
        assert (
            signin.sign_in_admin("alice", "guess-guess-1", client="1.2.3.4", engine=engine) is None
        )
    with pytest.raises(ThrottledError):
        signin.sign_in_admin("alice", "alice's long password", client="1.2.3.4", engine=engine)
    ok = signin.sign_in_admin("alice", "alice's long password", client="5.6.7.8", engine=engine)
    assert ok is not None and ok.actor == "admin:alice"
    res = _study(engine)
    code = res["annotators"][0]["access_code"]
    for _ in range(3):
        bad = "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZ"
        assert signin.sign_in_with_code(bad, client="1.2.3.4", engine=engine) is None
    with pytest.raises(ThrottledError):
        signin.sign_in_with_code(code, client="1.2.3.4", engine=engine)
    assert signin.sign_in_with_code(code, client="9.9.9.9", engine=engine).name == "a"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 6
    assert sum("failed admin sign-in" in x for x in lines) == 3
    assert sum("failed access-code sign-in" in x for x in lines) == 3
    assert all("client=1.2.3.4" in x for x in lines)
    assert not any("guess" in x or "ZZZZ" in x or "long password" in x for x in lines)
    # a password typed into the name field is not logged either
    assert signin.sign_in_admin("my secret pw!", "x", client="7.7.7.7", engine=engine) is None
    assert "admin=<unknown>" in caplog.records[-1].getMessage()
    assert "secret" not in caplog.records[-1].getMessage()
    assert CODE_SIGNINS.failures("1.2.3.4", engine=engine) == 3


def test_concurrent_password_hashes_are_capped(monkeypatch):
    active, peak, lock = [0], [0], threading.Lock()

    def slow(password, **kw):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return b"\0" * 32

    monkeypatch.setattr(hashlib, "scrypt", slow)
    threads = [threading.Thread(target=passwords.hash_password, args=("x" * 12,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == passwords.MAX_CONCURRENT_HASHES < 8


def test_admin_list_on_an_empty_store_says_so(db_url, cli, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    r = cli("admin", "list")
    assert r.exit_code == 0 and "no admins yet" in r.stdout and "medsim admin add" in r.stdout
