"""The annotation widget as it was before the REST endpoint (benchmark baseline only): a
Streamlit Components-v2 component whose ratings come back as component state, i.e. a rerun.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_annotator_rerun_baseline",
    html=(HERE / "annotator.html").read_text(encoding="utf-8"),
    css=(HERE / "annotator.css").read_text(encoding="utf-8"),
    js=(HERE / "annotator.js").read_text(encoding="utf-8"),
)


def annotator(*, data: dict, key: str, on_outbox_change):
    """Mount the widget with *data*; *on_outbox_change* runs when the browser sends ratings."""
    return _mount(key=key, data=data, default={"outbox": None}, on_outbox_change=on_outbox_change)
