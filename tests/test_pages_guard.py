"""The role guard (issue 32, bug 3): a study admin removed with ``medsim admin remove`` (or
given a new password) can change nothing from a page that was already open.

Widget callbacks run before ``app.py`` checks the session, and a fragment's own reruns skip
``app.py`` altogether, so each callback and fragment goes through ``pages._ui.requires``.
These tests open every admin page signed in (through ``app.py``, as a browser does), end
the admin, then fire each callback and re-run each fragment on its own (as the live refresh
and a form inside a fragment do): no setting changes, no event is recorded under the admin
after the end, and the start page says the session ended.
"""

from __future__ import annotations

import ast
import functools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import streamlit.testing.v1.local_script_runner as local_runner
from streamlit.testing.v1 import AppTest

from medsim_annot.services import activity
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import quality as quality_svc
from medsim_annot.services import stopping as stopping_svc
from medsim_annot.services.people import adjudicators as adjudication
from medsim_annot.services.people import admins, signin, sso
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from pages import _registry as registry
from pages import _ui
from tests.conftest import ROOT
from tests.test_stopping import _create, _rate_all

TIMEOUT = 120
PASSWORD = "alice's long password"
STUDY = "seq"  # a study with a sequential audit: the Dashboard shows its stopping switch
ENDED = "admin session has ended"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    """The store each test starts from, built once for the module (a designed study with
    twelve ratings and the admin alice, whose password hash alone takes a noticeable part
    of a second): a SQLite file that :func:`db` copies for every test."""
    path = tmp_path_factory.mktemp("pages_guard") / "seed.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEDSIM_DATABASE_URL", f"sqlite:///{path}")
        mp.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
        dispose_all()
        ids = _create(STUDY)
        _rate_all(ids, limit=12)
        admins.add_admin("alice", password=PASSWORD)
        dispose_all()
    return path


@pytest.fixture
def db(seeded, db_url, monkeypatch):
    """A store of the test's own (MEDSIM_DATABASE_URL), a copy of :func:`seeded`."""
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    dispose_all()
    dsvc.clear_cache()
    target = Path(db_url.removeprefix("sqlite:///"))
    for suffix in ("", "-wal"):  # a -wal file only if SQLite left one beside it
        if Path(f"{seeded}{suffix}").exists():
            shutil.copyfile(f"{seeded}{suffix}", f"{target}{suffix}")
    yield db_url
    dispose_all()


def _open(page: registry.Page) -> AppTest:
    """app.py in a session signed in as alice, showing *page*."""
    alice = signin.sign_in_admin("alice", PASSWORD, client="test")
    assert alice is not None
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = alice
    at.run()
    if page.title != at.title[0].value:
        at.switch_page(page.path).run()
    assert not at.exception, at.exception
    heading = page.heading or page.title
    assert [t.value for t in at.title] == [heading], [t.value for t in at.title]
    return at


def _fragment_ids(at: AppTest) -> list[str]:
    return list(at._fragment_storage._fragments)


def _run_fragments(at: AppTest, ids: list[str]) -> AppTest:
    """Re-run only the fragments *ids* (what the browser asks for at a fragment's
    ``run_every`` tick or on a widget inside it), with the widget values the test set."""
    plain = local_runner.RerunData
    local_runner.RerunData = functools.partial(  # type: ignore[misc]
        plain, fragment_id_queue=list(ids), is_fragment_scoped_rerun=True, is_auto_rerun=True
    )
    try:
        return at.run()
    finally:
        local_runner.RerunData = plain  # type: ignore[misc]


def _settings() -> dict:
    """Everything a callback or fragment of the admin pages can change."""
    return {
        "annotator_sso": sso.annotator_sso_enabled(open_study(STUDY)),
        "stopping": stopping_svc.audit_status(open_study(STUDY)).enabled,
        "quality": quality_svc.study_settings(open_study(STUDY)),
    }


def _events_after_the_end() -> list[tuple[str, str]]:
    """(actor, action) of every event recorded after the admin was removed or got a new
    password (newest first)."""
    log = activity.activity()
    rows = list(zip(log["actor"], log["action"]))
    end = next(i for i, (_, action) in enumerate(rows) if action in ENDS)
    return rows[:end]


ENDS = ("admin_removed", "admin_password_set")


def _end_remove() -> None:
    admins.remove_admin("alice")


def _end_new_password() -> None:
    admins.set_password("alice", "a completely new password")


def _toggle(key: str) -> Callable[[AppTest], None]:
    def fire(at: AppTest) -> None:
        widget = at.toggle(key=key)
        widget.set_value(not widget.value).run()

    return fire


def _save_check_settings(at: AppTest) -> None:
    """Submit the Dashboard's rater-check settings form inside its fragment, re-running only
    the fragment (as the browser does for a form in a fragment)."""
    at.number_input(key="dashboard_rushed_ms").set_value(400)
    at.slider(key="dashboard_check_min_accuracy").set_value(0.5)
    next(b for b in at.button if b.label == "Save settings").click()
    _run_fragments(at, _fragment_ids(at))


def _live_refresh(at: AppTest) -> None:
    """A ``run_every`` tick: every fragment of the page re-run on its own."""
    _run_fragments(at, _fragment_ids(at))


# Every callback and fragment of every admin page (pages without one are still opened and
# re-run: their body must refuse too). A new page of the registry without an entry fails.
TRIGGERS: dict[str, list[Callable[[AppTest], None]]] = {
    "setup.py": [_toggle(f"setup_sso_enabled:{STUDY}")],
    "dashboard.py": [_toggle(f"dashboard_stopping:{STUDY}"), _save_check_settings, _live_refresh],
    "activity.py": [],
    "export.py": [],
    "scoring.py": [],
}


def test_every_admin_page_has_its_triggers_listed():
    assert set(TRIGGERS) == {p.file for p in registry.admin_pages()}


#: The callbacks and fragments each admin page has, each fired by a trigger above (issue 34
#: item 3: every callback and fragment of every admin page is attacked after the admin's
#: end). A new callback or fragment fails the test below until a trigger fires it.
ATTACKED = {
    "setup.py": {"_switch_sso"},
    "dashboard.py": {"_switch", "fragment:_dashboard"},
    "activity.py": set(),
    "export.py": set(),
    "scoring.py": set(),
}


def _callbacks_and_fragments(page: registry.Page) -> set[str]:
    tree = ast.parse((ROOT / page.path).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in ("on_change", "on_click", "on_submit") and isinstance(kw.value, ast.Name):
                found.add(kw.value.id)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "fragment" and node.args:
            inner = node.args[0]
            name = inner.args[0] if isinstance(inner, ast.Call) and inner.args else inner
            found.add(f"fragment:{ast.unparse(name)}")
    return found


@pytest.mark.parametrize("page", registry.admin_pages(), ids=lambda p: p.file)
def test_every_callback_and_fragment_is_attacked(page):
    assert _callbacks_and_fragments(page) == ATTACKED[page.file]


def _signed_out_with_notice(at: AppTest) -> None:
    assert "auth_role" not in at.session_state, "the ended session is still signed in"
    shown = [w.value for w in at.warning] + [e.value for e in at.error]
    assert any(ENDED in text for text in shown), shown


@pytest.mark.parametrize("end", [_end_remove, _end_new_password], ids=["removed", "new-password"])
@pytest.mark.parametrize("page", registry.admin_pages(), ids=lambda p: p.file)
def test_an_ended_admin_changes_nothing_from_an_open_page(db, page, end):
    triggers = TRIGGERS[page.file]
    for i in range(max(len(triggers), 1)):
        at = _open(page)
        if page.file == "dashboard.py":
            assert _fragment_ids(at), "the Dashboard has no fragment (no live refresh)"
        before = _settings()
        end()
        if triggers:
            triggers[i](at)
        else:
            at.run()
        assert not at.exception, at.exception
        assert _settings() == before
        late = [(actor, action) for actor, action in _events_after_the_end() if "alice" in actor]
        assert late == [], f"recorded under the ended admin: {late}"
        _signed_out_with_notice(at)
        admins.set_password("alice", PASSWORD)  # alice again, for the next trigger


def test_a_signed_in_admin_still_changes_settings(db):
    """The guard lets the admin who is still valid through (the same triggers act)."""
    at = _open(registry.page("Study setup"))
    _toggle(f"setup_sso_enabled:{STUDY}")(at)
    assert sso.annotator_sso_enabled(open_study(STUDY))
    at = _open(registry.page("Dashboard"))
    _toggle(f"dashboard_stopping:{STUDY}")(at)
    assert not stopping_svc.audit_status(open_study(STUDY)).enabled
    at = _open(registry.page("Dashboard"))
    _save_check_settings(at)
    assert quality_svc.study_settings(open_study(STUDY)).rushed_ms == 400
    log = activity.activity()
    assert set(log["actor"].head(3)) == {"admin:alice"}


# ------------------------------------------------------------------ every callback is guarded
def _guarded(decorators: list[ast.expr]) -> bool:
    for d in decorators:
        if isinstance(d, ast.Call):
            f = d.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == "requires":
                return True
    return False


@pytest.mark.parametrize("page", [p for p in registry.PAGES if p.role != "annotator"])
def test_every_callback_and_fragment_goes_through_the_guard(page):
    """Statically, for the admin pages and Adjudicate: every ``on_change`` / ``on_click``
    callback is a function decorated with ``requires(...)``; every fragment is applied where
    it is called, around ``requires(...)(...)`` (no ``@st.fragment`` decorator, which can
    drift onto the wrong function); the page body is decorated with ``requires(...)``."""
    tree = ast.parse((ROOT / page.path).read_text(encoding="utf-8"))
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                assert not (isinstance(target, ast.Attribute) and target.attr == "fragment"), (
                    f"{page.file}: @st.fragment on {node.name}: apply fragments where called"
                )
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in ("on_change", "on_click") and not (
                isinstance(kw.value, ast.Constant) and kw.value.value == "ignore"
            ):
                assert isinstance(kw.value, ast.Name), f"{page.file}: {kw.arg} is not a function"
                fn = functions[kw.value.id]
                assert _guarded(fn.decorator_list), f"{page.file}: {fn.name} is not guarded"
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "download_button" and len(node.args) > 1:
            assert not isinstance(node.args[1], ast.Lambda | ast.Name), (
                f"{page.file}: deferred download data not wrapped in admin_download(...)"
            )
        if isinstance(f, ast.Attribute) and f.attr == "fragment":
            wrapped = node.args[0]
            assert (
                isinstance(wrapped, ast.Call)
                and isinstance(wrapped.func, ast.Call)
                and _guarded([wrapped.func])
            ), f"{page.file}: a fragment not wrapped in requires(...)"
    body = functions[f"{page.url_path}_ui"]
    assert _guarded(body.decorator_list), f"{page.file}: the page body is not guarded"


def test_a_revoked_adjudicator_is_signed_out_with_the_reason(db):
    """The Adjudicate page goes through the same guard: an adjudicator revoked since the page
    was drawn is signed out, and the start page says why."""
    out = adjudication.add_adjudicator(open_study(STUDY), "judy")
    judy = signin.sign_in_with_code(out.access_code, client="test")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["auth_role"] = "adjudicator"
    at.session_state["auth_identity"] = judy
    at.run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Adjudicate"]
    adjudication.revoke_adjudicator(open_study(STUDY), "judy")
    at.run()
    assert not at.exception, at.exception
    assert "auth_role" not in at.session_state
    assert any("adjudicator access was changed" in w.value for w in at.warning), at.warning


def test_a_deferred_download_builds_nothing_for_an_ended_admin(db):
    """A deferred download (the Dashboard's HTML report) is built when its button is clicked,
    outside any script run: it builds only while the admin who drew it still holds."""
    alice = signin.sign_in_admin("alice", PASSWORD, client="test")
    data = _ui._while_admin_holds(lambda: b"report", alice, get_engine())
    assert data() == b"report"
    admins.remove_admin("alice")
    with pytest.raises(PermissionError, match="admin session has ended"):
        data()
