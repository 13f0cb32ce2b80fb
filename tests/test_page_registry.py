"""The one page registry (``pages/_registry.py``): every page file of ``pages/`` is in it, every
entry has its file, and app.py, the browser tests and the benchmark read it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pages import _registry as registry
from tests.conftest import ROOT

PAGES_DIR = ROOT / "pages"


def page_files(folder: Path) -> set[str]:
    """The page files of *folder*: every ``*.py`` but the helpers (``_``-prefixed, e.g.
    ``_ui.py`` and ``_registry.py``); components live in a sub-folder."""
    return {p.name for p in folder.glob("*.py") if not p.name.startswith("_")}


def unregistered(folder: Path) -> set[str]:
    return page_files(folder) - {p.file for p in registry.PAGES}


def test_every_page_file_is_registered_and_every_entry_has_its_file():
    assert page_files(PAGES_DIR), "no page files found"
    assert unregistered(PAGES_DIR) == set(), "a page file of pages/ is not in pages/_registry.py"
    missing = {p.file for p in registry.PAGES} - page_files(PAGES_DIR)
    assert missing == set(), "pages/_registry.py names a page file that does not exist"


def test_the_check_fails_for_a_page_file_left_out(tmp_path):
    """The check is not blind: a new page file that nobody registered is reported."""
    for name in page_files(PAGES_DIR):
        (tmp_path / name).write_text("")
    (tmp_path / "_helper.py").write_text("")  # a helper is no page
    assert unregistered(tmp_path) == set()
    (tmp_path / "audit_trail.py").write_text("import streamlit as st\n")
    assert unregistered(tmp_path) == {"audit_trail.py"}


def test_entries_are_unique_and_each_role_lands_somewhere():
    assert len({p.file for p in registry.PAGES}) == len(registry.PAGES)
    assert len({p.title for p in registry.PAGES}) == len(registry.PAGES)
    for role in registry.ROLES:
        assert registry.pages_for(role), role
    assert {p.role for p in registry.PAGES} == set(registry.ROLES)
    assert registry.admin_pages()[0].title == "Study setup"
    with pytest.raises(ValueError):
        registry.pages_for("visitor")


def test_internal_names_cover_titles_and_file_names():
    names = registry.internal_names()
    for p in registry.PAGES:
        assert p.title.lower() in names and p.file.removesuffix(".py") in names


def test_each_page_calls_its_ui_function_once_at_the_bottom():
    """Pages are small functions: the last statement of each page file is one call of its
    ``<name>_ui()``, and nothing else runs at the top level (imports, constants, functions)."""
    for p in registry.PAGES:
        tree = ast.parse((PAGES_DIR / p.file).read_text(encoding="utf-8"))
        last = tree.body[-1]
        want = f"{p.url_path}_ui"
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), p.file
        assert getattr(last.value.func, "id", None) == want, p.file
        calls = [
            n
            for n in tree.body[:-1]
            if isinstance(n, ast.Expr) and not isinstance(n.value, ast.Constant)
        ]
        assert calls == [], f"{p.file}: statements run at the top level besides {want}()"
        assert not [
            n for n in tree.body if isinstance(n, ast.If | ast.For | ast.While | ast.With | ast.Try)
        ], p.file


def test_app_and_the_tests_read_the_registry():
    """The page list is written once: app.py and the tests and benchmark that list pages
    import the registry and name no page file of their own."""
    for path in (
        "app.py",
        "tests/test_browser_admin_pages.py",
        "tests/test_browser_a11y.py",
        "benchmarks/bench_admin_pages.py",
    ):
        text = (ROOT / path).read_text(encoding="utf-8")
        assert "_registry" in text, path
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    for p in registry.PAGES:
        assert f"pages/{p.file}" not in app, p.file
