"""Rules of the browser harness the suite relies on, checked on the test sources (no browser).

The test process's one chromium (tests/streamlit_harness.py ``chromium``) is stopped before
every test outside a ``test_browser_*.py`` module (tests/conftest.py): only such modules may
drive it, or a later ``asyncio.run`` in the process would meet Playwright's loop still
marked running, and the next module's browser would stop under a test using it."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

HARNESS = "tests.streamlit_harness"


def _drivers() -> set[str]:
    """Test modules (file names) that import ``chromium`` from the harness."""
    found = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == HARNESS
                and any(alias.name == "chromium" for alias in node.names)
            ):
                found.add(path.name)
    return found


def test_only_real_browser_modules_drive_chromium():
    drivers = _drivers()
    assert "test_browser_widget.py" in drivers  # the scan finds the harness's users
    assert {name for name in drivers if not name.startswith("test_browser_")} == set()
