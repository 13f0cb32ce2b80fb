"""The annotation widget's screens (pages/components/annotator/annotator.js) are one state
machine: the screens and the moves between them are declared once (the frozen ``SCREENS``
table), and ``go()`` alone changes the screen, checking each move against the table. These
checks read the JavaScript, so the shape cannot drift back to a string set anywhere."""

from __future__ import annotations

import re

import pytest

from pages.components.annotator import HERE

JS = (HERE / "annotator.js").read_text(encoding="utf-8")


def _table() -> dict[str, list[str]]:
    block = re.search(r"\nconst SCREENS = Object\.freeze\(\{\n(.*?)\n\}\);\n", JS, flags=re.S)
    assert block, "annotator.js declares its screens in one frozen SCREENS table"
    table = {}
    for line in block.group(1).splitlines():
        m = re.fullmatch(r"\s*(\w+): Object\.freeze\(\[(.*?)\]\),(\s*//.*)?", line)
        assert m, f"a SCREENS line is 'name: Object.freeze([...]),': {line!r}"
        table[m.group(1)] = re.findall(r'"(\w+)"', m.group(2))
    return table


SCREENS = _table()
FIRST = re.search(r'\nconst FIRST_SCREEN = "(\w+)";\n', JS)


def _method(name: str) -> str:
    """The body of the Annotator method *name* (from its line to its closing brace)."""
    widget = JS[JS.index("\nclass Annotator {") :]
    m = re.search(rf"\n  {name}\((.*?)\) \{{\n(.*?)\n  \}}\n", widget, flags=re.S)
    assert m, f"annotator.js has a method {name}()"
    return m.group(2)


def test_the_table_is_closed_and_starts_somewhere():
    assert FIRST and FIRST.group(1) in SCREENS
    for screen, targets in SCREENS.items():
        assert targets, f"screen {screen!r} lists where it may go"
        assert set(targets) <= set(SCREENS), f"{screen!r} goes to an undeclared screen"
        # The access code can be revoked on any screen.
        assert "ended" in targets, screen


def test_every_screen_is_reachable_from_the_first():
    seen, todo = set(), [FIRST.group(1)]
    while todo:
        s = todo.pop()
        if s not in seen:
            seen.add(s)
            todo.extend(SCREENS[s])
    assert seen == set(SCREENS)


@pytest.mark.parametrize("field", ["screen", "pos", "waitFor"])
def test_only_go_sets_the_screen(field):
    assigned = re.findall(rf"this\.{field}\s*(?:=(?!=)|\+=|-=)", JS)
    in_go = re.findall(rf"this\.{field}\s*=(?!=)", _method("go"))
    assert len(in_go) == 1, f"go() sets this.{field}"
    assert len(assigned) == 1, f"this.{field} is set outside go()"
    assert "SCREENS[this.screen]" in _method("go"), "go() checks the move against the table"


def test_every_screen_named_in_the_code_is_declared_and_every_one_is_used():
    targets = set(re.findall(r'this\.go\("(\w+)"', JS))
    compared = set(re.findall(r'this\.screen [!=]==? "(\w+)"', JS))
    assert targets <= set(SCREENS), targets - set(SCREENS)
    assert compared <= set(SCREENS), compared - set(SCREENS)
    # Every declared screen but the first is entered somewhere, and the constructor enters
    # the first one through go() too.
    assert targets | {FIRST.group(1)} == set(SCREENS)
    assert "this.go(FIRST_SCREEN)" in _method("constructor")
    # No other way of naming a screen: no string assigned to anything called screen.
    assert not re.search(r'screen\s*=\s*"', JS)
