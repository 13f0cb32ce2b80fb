"""The annotation widget: a Streamlit Components-v2 component (inline HTML, CSS and vanilla
JS from the files beside this module; no iframe, no build step).

``annotator(data=..., key=...)`` mounts it with its boot data
(:class:`data_schemas.widget.WidgetBoot`). The widget sends its ratings to the ratings
endpoint itself; its only state back to Python is ``token_wanted`` — the serial of a token
that stopped working, so that the page mints a new one. See ``annotator.js`` and
docs/annotation.md.
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


def annotator(*, data: dict, key: str, on_token_wanted_change):
    """Mount the widget with *data*; *on_token_wanted_change* runs when it asks for a token."""
    return _mount(
        key=key,
        data=data,
        default={"token_wanted": None},
        on_token_wanted_change=on_token_wanted_change,
    )
