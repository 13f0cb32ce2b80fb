"""Preload Streamlit's chart and element code in an admin's browser while it is idle.

Streamlit fetches the code of an element type the first time a page draws one: for plotly a
4.7 MB chunk, which a fresh browser on a busy machine takes seconds to fetch, parse and run,
so the Dashboard's first chart came long after its figures. The admin pages' smaller element
chunks (metric, table, controls) are loaded with it. Study setup (where every admin
lands after signing in) mounts this invisible component; it loads that chunk when the
browser is idle (``preload.js``: fetched and compiled at once, run a few idle seconds later).
The start page mounts it too, once the "Study admin" form is open, with a short wait: the
chunk then runs while the admin types the password, so no admin page load meets that run
(an annotator's browser, which never opens that form, never loads it).
The chunks' file names are looked up once per process in the installed Streamlit's static
files; nothing is mounted when none is found. Loading code is not enough for the headline
metrics: React holds back an element type's first draw (:func:`_draw_hidden`).
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
#: The chunks of Streamlit's element code (loaded lazily, on an element type's first draw) that
#: the admin pages draw and the start page does not: plotly (4.7 MB, the Dashboard's charts);
#: the Dashboard's metric, segmented control, download button and multiselect; Study setup's
#: table, select box, buttons, file uploader, radio, number input, slider and text area.
#: Found by listing the scripts a browser fetched on each page (``performance`` resource
#: entries); each must exist in the installed Streamlit (tests/test_preload.py).
CHUNKS = (
    "PlotlyChart.*.js",
    "Metric.*.js",
    "ButtonGroup.*.js",
    "DownloadButton.*.js",
    "Multiselect.*.js",
    "DataFrame.*.js",
    "Selectbox.*.js",
    "Button.*.js",
    "FileUploader.*.js",
    "Radio.*.js",
    "NumberInput.*.js",
    "Slider.*.js",
    "TextArea.*.js",
)

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


#: The key of the hidden container in which :func:`preload_chart_code` draws a metric.
HIDDEN_KEY = "medsim_element_warmup"


def preload_chart_code(
    key: str = "medsim_preload", *, in_sidebar: bool = True, run_after_ms: int = 3000
) -> None:
    """Mount the preloader when the chunks are known: in the sidebar (no gap in the page) or,
    where a page has no sidebar, where it is called (put it last: nothing below it moves);
    the chunks run *run_after_ms* after they are fetched, when the browser is idle. Then
    draw, hidden, the element the Dashboard's headline is made of (:func:`_draw_hidden`)."""
    chunks = chart_chunks()
    data = {"chunks": list(chunks), "run_after_ms": run_after_ms}
    with st.sidebar if in_sidebar else contextlib.nullcontext():
        if chunks:
            _mount(key=key, data=data)
        _draw_hidden()


def _draw_hidden() -> None:
    """One ``st.metric`` in a container the page's style hides (``display: none``: no box, no
    gap, not in the accessibility tree). Streamlit draws each element type through React's
    ``lazy``: the first time a browser draws a type, React suspends it and reveals it with its
    next batch of revealed content (up to 300 ms later), even when its code is loaded. The
    Dashboard's headline metrics then painted after the chart below them: 1.0-1.3 s after
    the click on the first load after a start, against 0.36-0.38 s with a metric drawn here
    before (100,000 pairs x 3, SQLite; issue 38). Drawn once, the type is resolved for the
    rest of the browser's session (page switches do not reload it). A style-only
    ``st.html`` takes no room (Streamlit sends it to the event container)."""
    st.html(f"<style>.st-key-{HIDDEN_KEY}{{display:none}}</style>")
    with st.container(key=HIDDEN_KEY):
        st.metric("0", "0", label_visibility="collapsed")
