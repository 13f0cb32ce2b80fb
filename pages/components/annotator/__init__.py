"""The annotation widget: a Streamlit Components-v2 component (inline HTML, CSS and vanilla
JS from the files beside this module; no iframe, no build step).

``annotator(data=..., key=...)`` mounts it with its boot data
(:class:`data_schemas.widget.WidgetBoot`). The widget sends its ratings to the ratings
endpoint itself; its state back to Python is ``token_wanted`` — the serial of a token
that stopped working, so that the page mints a new one — and, after the doctor asked to sign
out, ``signed_out`` (pending ratings sent or discarded, the browser's kept data deleted) or
``sign_out_cancelled`` (the doctor kept unsaved ratings and stays). See ``annotator.js`` and
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


def annotator(
    *,
    data: dict,
    key: str,
    on_token_wanted_change,
    on_signed_out_change=None,
    on_sign_out_cancelled_change=None,
):
    """Mount the widget with *data*; *on_token_wanted_change* runs when it asks for a token,
    *on_signed_out_change* when it finished a sign-out, *on_sign_out_cancelled_change* when
    the doctor chose to stay."""
    return _mount(
        key=key,
        data=data,
        default={"token_wanted": None, "signed_out": None, "sign_out_cancelled": None},
        on_token_wanted_change=on_token_wanted_change,
        on_signed_out_change=on_signed_out_change or (lambda: None),
        on_sign_out_cancelled_change=on_sign_out_cancelled_change or (lambda: None),
    )
