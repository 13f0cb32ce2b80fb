"""Charts that never hold up the text of a page.

A page that draws a plotly chart makes the browser load and run Streamlit's plotly code (a
4.7 MB chunk, 0.5-1 s of the browser's main thread on a busy machine, then 0.3-0.5 s for
the first figure). When that work starts while the page's figures and tables are still to be
painted, they wait for it: on a first load the Dashboard's headline figures appeared 2-3 s
after the click although the server had sent them within 0.5 s (issue 38; docs/perf.md).

So a page view's first run draws no chart: :func:`plotly_chart` draws an empty slot of fixed
height (nothing moves when the chart arrives), :func:`after_paint` skips its section, and
:func:`report_paint`, called last on the page, mounts an invisible
:mod:`~pages.components.afterpaint` component that reports once the browser has painted that
run. The report is a rerun of the *whole page*, with every widget's value of the moment, which
draws the charts in their slots and the sections. From then on (:data:`CODE_RUN`, set by the
report's callback before that rerun starts) every run of the session draws its charts at once.

Why a whole-page rerun and not a fragment's: Streamlit (1.67) drops what is left to send of a
run when a fragment's rerun request reaches the server just as that run ends (it starts a new
script runner and ignores the old one's queued messages: ``AppSession.request_rerun``). With a
paint report per chart fragment, an admin's study choice made just after the Dashboard loaded
showed the picker on the new study and the headline on the old one. A whole-page rerun carries
the browser's current widget values (the study just picked included) and replaces whatever run
it stops, like any widget change of the page: the last run is always complete and consistent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from pages.components.afterpaint import report_painted

#: Set in the session once a page of it was reported painted: from the report's rerun on,
#: every run draws its charts (and the sections of :func:`after_paint`) at once, in page
#: order; by then the browser runs the chart code after the page's text is on screen.
CODE_RUN = "charts_code_run"

#: The key of the paint report's component (one per page view: the last element of the page).
REPORT = "charts_painted"

#: Plotly's own default height, which the figures of the pages used before this module.
HEIGHT = 450


def ready() -> bool:
    """Whether this run draws charts and the sections after them (the page was painted)."""
    return bool(st.session_state.get(CODE_RUN))


def plotly_chart(
    figure: go.Figure | Callable[[], go.Figure], *, key: str, height: int = HEIGHT
) -> None:
    """*figure* (or the function making it, called only when the chart is drawn) in a slot of
    *height* pixels; the slot stays empty until the page was painted (:func:`ready`); *key*
    is the chart's key."""
    with st.container(height=height, border=False, key=f"{key}_slot"):
        if ready():
            fig = figure if isinstance(figure, go.Figure) else figure()
            st.plotly_chart(go.Figure(fig).update_layout(height=height), key=key)


def after_paint(draw: Callable[..., None], *args: Any) -> None:
    """``draw(*args)`` once the page was painted (:func:`ready`), nothing before. Place it
    below every chart and text drawn at once: what it draws comes later and must move
    nothing above it."""
    if ready():
        draw(*args)


def report_paint() -> None:
    """Mount the paint report; call it last on a page using :func:`plotly_chart` or
    :func:`after_paint` (its component reports once the page's text is painted, so it must
    come after that text). Asks for nothing once :func:`ready`."""
    report_painted(REPORT, known=ready(), on_painted=_painted)


def _painted() -> None:
    """The report's callback, run before the rerun it asks for: that run draws the charts."""
    st.session_state[CODE_RUN] = True
