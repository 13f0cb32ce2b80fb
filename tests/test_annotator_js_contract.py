"""The annotation widget's JavaScript names only what its contract (data_schemas/widget.py)
declares: the boot data and limits it reads, the request it posts, the answers and errors it
reads back, and the states it hands back to the page. A field renamed on one side fails
here instead of in a browser."""

from __future__ import annotations

import re
from typing import get_args

from data_schemas.widget import (
    ApiError,
    CurrentAnswer,
    ErrorCode,
    PracticeAnswer,
    PracticeFeedback,
    PracticeState,
    PracticeText,
    RatingEntry,
    RatingsRequest,
    RatingsResponse,
    Refusal,
    ScaleOptionView,
    ScaleView,
    WidgetBoot,
    WidgetLimits,
    WidgetPair,
    WindowInfo,
)
from pages.components.annotator import HERE

JS = (HERE / "annotator.js").read_text(encoding="utf-8")


def _read(obj: str) -> set[str]:
    """The fields read as ``<obj>.<field>`` (``obj`` a dotted name)."""
    return set(re.findall(rf"(?<![\w.]){re.escape(obj)}\.(\w+)", JS))


def _literal(call: str) -> set[str]:
    """The keys of the object literal passed to *call* (one level, ``key: value`` lines)."""
    m = re.search(rf"{re.escape(call)}\(\{{(.*?)\}}\)", JS, flags=re.S)
    assert m, call
    return set(re.findall(r"(?:^|[{,])\s*(\w+):", m.group(1), flags=re.M))


def _fields(model) -> set[str]:
    return set(model.model_fields)


def test_boot_data_and_limits():
    assert "data_schemas/widget.py" in JS
    assert _read("boot") and _read("boot") <= _fields(WidgetBoot)
    assert _read("this.limits") and _read("this.limits") <= _fields(WidgetLimits)
    assert _read("this.scale") and _read("this.scale") <= _fields(ScaleView)
    assert _read("o") <= _fields(ScaleOptionView)


def test_what_it_posts():
    body = _literal("const body = JSON.stringify")
    assert body == _fields(RatingsRequest)
    entry = _literal("this.queue.push") | {"seq"}  # the queue numbers each entry
    assert entry == _fields(RatingEntry)


def test_what_it_reads_back():
    assert _read("reply") and _read("reply") <= _fields(RatingsResponse)
    assert _read("r") <= _fields(Refusal)
    assert _read("r.current") <= _fields(CurrentAnswer)
    assert _read("info") <= _fields(WindowInfo)
    assert _read("p") <= _fields(WidgetPair)
    assert _read("error") <= _fields(ApiError)
    codes = set(re.findall(r'error\.error === "(\w+)"', JS)) | set(
        re.findall(r'error: "(\w+)"', JS)
    )
    assert codes and codes <= set(get_args(ErrorCode))


def test_practice_round_fields():
    # The practice answer it posts, the state and feedback it reads, the strings it shows.
    m = re.search(r"this\.practiceAnswer = \{(.*?)\};", JS, flags=re.S)
    assert m
    assert set(re.findall(r"(\w+):", m.group(1))) == _fields(PracticeAnswer)
    assert _read("state") and _read("state") <= _fields(PracticeState)
    assert _read("fb") and _read("fb") <= _fields(PracticeFeedback)
    shown = _read("T") | _read("this.text")
    assert shown and shown <= _fields(PracticeText)


def test_the_states_it_hands_back():
    names = set(re.findall(r'setStateValue\("(\w+)"', JS))
    mount = (HERE / "__init__.py").read_text(encoding="utf-8")
    assert names == {"token_wanted", "signed_out", "sign_out_cancelled"}
    assert all(f'"{n}": None' in mount and f"on_{n}_change" in mount for n in names)


def test_the_tests_know_when_a_closed_tabs_list_is_offered():
    """tests/widget_drive.py waits, after closing a tab, for the widget's own rule of a gone
    tab's list (marked closed, or untouched for ORPHAN_AFTER_MS): the same number."""
    from tests.widget_drive import ORPHAN_AFTER_MS

    m = re.search(r"^const ORPHAN_AFTER_MS = (\d+);", JS, flags=re.M)
    assert m and int(m.group(1)) == ORPHAN_AFTER_MS
    assert "saved.closed" in JS
