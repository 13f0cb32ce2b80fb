"""After paint: an invisible component whose state ``painted`` turns true once the browser
has painted the page's text (see ``afterpaint.js``). :mod:`pages._charts` mounts one, last,
on a page with charts: the state's change reruns the whole page, which then draws its charts
after the figures and tables around them are on screen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_afterpaint",
    html="<span hidden></span>",
    js=(HERE / "afterpaint.js").read_text(encoding="utf-8"),
)


def report_painted(key: str, *, known: bool, on_painted: Callable[[], None]) -> None:
    """Mount the component under *key*. Unless *known* (the caller knows the page was painted
    already: the component then asks for nothing), the browser reports once the page is
    painted: *on_painted* runs, then the whole page reruns (the component is in no
    fragment)."""
    _mount(
        key=key, data={"painted": known}, default={"painted": False}, on_painted_change=on_painted
    )
