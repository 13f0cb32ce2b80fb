"""The annotation widget: a Streamlit Components-v2 component (inline HTML, CSS and vanilla
JS from the files beside this module; no iframe, no build step, no network fetch).

``annotator(data=..., key=...)`` mounts it and returns its state: ``outbox`` — the ordered
list of ratings the browser has not seen acknowledged, the position it wants a window from
and a send counter. See ``annotator.js`` for the data it expects and docs/annotation.md.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_annotator",
    html=(HERE / "annotator.html").read_text(encoding="utf-8"),
    css=(HERE / "annotator.css").read_text(encoding="utf-8"),
    js=(HERE / "annotator.js").read_text(encoding="utf-8"),
)


def annotator(*, data: dict, key: str, on_outbox_change):
    """Mount the widget with *data*; *on_outbox_change* runs when the browser sends ratings."""
    return _mount(key=key, data=data, default={"outbox": None}, on_outbox_change=on_outbox_change)
