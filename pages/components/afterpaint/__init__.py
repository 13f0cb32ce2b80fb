"""After paint: an invisible component whose state ``painted`` turns true once the browser
has painted the page's text (see ``afterpaint.js``). :mod:`pages._charts` mounts one in each
chart's fragment, so the chart is drawn, by a rerun of that fragment alone, after the
figures and tables around it are on screen."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_afterpaint",
    html="<span hidden></span>",
    js=(HERE / "afterpaint.js").read_text(encoding="utf-8"),
)


def painted(key: str, known: bool = False) -> bool:
    """Mount the component under *key*; whether the browser has reported the page painted
    (false on the first run of a page view, true from the rerun it asks for on; a test
    without a browser sets ``st.session_state[key] = {"painted": True}`` first); *known*: the
    caller knows it already (the component then asks for nothing)."""
    state = st.session_state.get(key)
    done = known or (bool(state.get("painted")) if isinstance(state, Mapping) else False)
    result = _mount(
        key=key, data={"painted": done}, default={"painted": False}, on_painted_change=_noop
    )
    return done or bool(getattr(result, "painted", False))


def _noop() -> None:
    """The state's change callback (required by Streamlit; the rerun is what matters)."""
