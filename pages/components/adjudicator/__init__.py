"""The adjudication widget: a Streamlit Components-v2 component (inline HTML, CSS and vanilla
JS from the files beside this module), keyboard-first like the annotation widget.

``adjudicator(data=..., key=...)`` mounts it and returns its state: ``decision`` (the label,
reason, text, guideline flag and the decision version the adjudicator saw, with a counter)
and ``nav`` (``next`` / ``prev`` with a counter). See ``adjudicator.js`` for the keys and
the data it expects. It is mounted only on the Adjudicate page, which only adjudicators
reach: annotators' browsers never receive it or its data.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_adjudicator",
    html=(HERE / "adjudicator.html").read_text(encoding="utf-8"),
    css=(HERE / "adjudicator.css").read_text(encoding="utf-8"),
    js=(HERE / "adjudicator.js").read_text(encoding="utf-8"),
)


def adjudicator(*, data: dict, key: str):
    """Mount the widget with *data*; returns its state (``decision``, ``nav``)."""
    return _mount(
        key=key,
        data=data,
        default={"decision": None, "nav": None},
        on_decision_change=lambda: None,
        on_nav_change=lambda: None,
    )
