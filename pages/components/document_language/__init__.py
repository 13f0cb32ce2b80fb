"""``<html lang>`` and ``dir`` of the page, set to the person's language (an invisible
component in the sidebar, mounted by ``app.py`` on every run), and Streamlit's own few texts
in that language (:mod:`.chrome`)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.components.document_language.chrome import chrome_texts

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_document_language",
    html="<span hidden></span>",
    js=(HERE / "document_language.js").read_text(encoding="utf-8"),
    # No shadow root: it works on the document itself, and the page's own widgets stay the
    # only isolated components (tests find the annotation widget as the first of them).
    isolate_styles=False,
)


def document_language(lang: str, direction: str) -> None:
    """Mount the component with *lang* and *direction* (``ltr``/``rtl``)."""
    with st.sidebar:
        _mount(
            key="medsim_document_language",
            data={"lang": lang, "dir": direction, "chrome": chrome_texts()},
        )
