"""Page and message icons are Streamlit Material icons (``:material/name:``), which render
everywhere; emoji render as empty boxes on machines without an emoji font."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py"))]
MATERIAL = re.compile(r"^:material/[a-z0-9_]+:$")


def _icons(path: Path):
    """Every string given as ``icon=``/``page_icon=`` and every string in a tuple that a
    loop unpacks into a name ending in ``icon`` (app.py's page table)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in ("icon", "page_icon"):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                yield node.lineno, node.value.value
        if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple):
            names = [getattr(t, "id", "") for t in node.target.elts]
            slots = [i for i, n in enumerate(names) if n.endswith("icon")]
            if slots and isinstance(node.iter, (ast.Tuple, ast.List)):
                for row in node.iter.elts:
                    if isinstance(row, ast.Tuple):
                        for i in slots:
                            v = row.elts[i]
                            if isinstance(v, ast.Constant):
                                yield v.lineno, v.value


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_icons_are_material(path):
    bad = [(line, icon) for line, icon in _icons(path) if not MATERIAL.match(icon)]
    assert not bad, f"{path.name}: use :material/name: icons, not {bad}"


def test_app_has_material_page_icons():
    icons = [icon for _, icon in _icons(ROOT / "app.py")]
    assert len(icons) >= 6 and all(MATERIAL.match(i) for i in icons)
