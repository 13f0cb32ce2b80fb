"""Preload Streamlit's chart code in a signed-in admin's browser while it is idle.

Streamlit fetches the code of a chart type the first time a page draws one: for plotly a
4.7 MB chunk, which a fresh browser on a busy machine takes seconds to fetch, parse and run,
so the Dashboard's first chart came long after its figures. Study setup (where every admin
lands after signing in) mounts this invisible component; it loads that chunk when the
browser is idle (``preload.js``: fetched and compiled at once, run a few idle seconds later).
The start page mounts it too, once the "Study admin" form is open, with a short wait: the
chunk then runs while the admin types the password, so no admin page load meets that run
(an annotator's browser, which never opens that form, never loads it).
The chunk's file name is looked up once per process in the installed Streamlit's static
files; nothing is mounted when it is not found.
"""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
CHUNKS = ("PlotlyChart.*.js",)

_mount = st.components.v2.component(
    "medsim_preload",
    html="<span hidden></span>",
    js=(HERE / "preload.js").read_text(encoding="utf-8"),
)


@functools.cache
def chart_chunks() -> tuple[str, ...]:
    """The file names of Streamlit's chart chunks (``CHUNKS`` patterns) in its static/js."""
    js = Path(st.__file__).resolve().parent / "static" / "static" / "js"
    return tuple(sorted(p.name for pattern in CHUNKS for p in js.glob(pattern)))


def preload_chart_code(
    key: str = "medsim_preload", *, in_sidebar: bool = True, run_after_ms: int = 3000
) -> None:
    """Mount the preloader when the chunks are known: in the sidebar (no gap in the page) or,
    where a page has no sidebar, where it is called (put it last: nothing below it moves);
    the chunk runs *run_after_ms* after it is fetched, when the browser is idle."""
    chunks = chart_chunks()
    if not chunks:
        return
    data = {"chunks": list(chunks), "run_after_ms": run_after_ms}
    if in_sidebar:
        with st.sidebar:
            _mount(key=key, data=data)
    else:
        _mount(key=key, data=data)
