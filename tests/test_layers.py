"""Layering: the core never imports streamlit; pages hold no SQL."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_core_never_imports_streamlit():
    offenders = [
        str(p.relative_to(ROOT))
        for d in ("medsim_annot", "data_schemas")
        for p in (ROOT / d).rglob("*.py")
        if "streamlit" in _imports(p)
    ]
    assert offenders == []


def test_data_schemas_imports_nothing_of_ours():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "data_schemas").rglob("*.py")
        if "medsim_annot" in _imports(p)
    ]
    assert offenders == []


def test_pages_hold_no_sql():
    files = [ROOT / "app.py", *(ROOT / "pages").glob("*.py")]
    offenders = [
        str(p.relative_to(ROOT))
        for p in files
        if p.exists() and ({"sqlalchemy", "sqlite3", "psycopg"} & _imports(p))
    ]
    assert offenders == []
