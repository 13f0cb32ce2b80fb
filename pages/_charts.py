"""Charts that never hold up the text of a page.

A page that draws a plotly chart makes the browser load and run Streamlit's plotly code (a
4.7 MB chunk, 0.5-1 s of the browser's main thread on a busy machine, then 0.3-0.5 s for
the first figure). When that work starts while the page's figures and tables are still to be
painted, they wait for it: on a first load the Dashboard's headline figures appeared 2-3 s
after the click although the server had sent them within 0.5 s (issue 38; docs/performance.md).

:func:`plotly_chart` draws a chart in two steps, in a fragment of its own: first a slot of
fixed height (so nothing moves when the chart arrives) with an invisible
:mod:`~pages.components.afterpaint` component, which reports once the browser has painted
the page's text; that report reruns the fragment alone, which draws the figure in the slot.
Later runs of the page view (a widget, the live refresh), and every later page view of the
session (the browser has run the chart code by then), draw the figure at once. The figure
is drawn at the slot's height (:data:`HEIGHT` pixels unless the page says otherwise).

:func:`after_paint` does the same for a whole section below the charts (the Dashboard's
quality over time, disagreement explorer, ...): its page run would otherwise hold up every
chart, since Streamlit reruns a fragment only once the page's script run has finished. Such a
section is placed below the charts, where nothing drawn before it moves when it arrives; the
reports go in page order, so the charts come first.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from pages.components.afterpaint import painted

#: Set in the session once a chart was drawn after the paint: the browser has run the chart
#: code, so the next page views of this session draw their charts (and the sections of
#: :func:`after_paint`) at once, in page order (waiting for the page's whole run and a round
#: trip cost 0.6 s warm at 1,200 items, 4.4 s at 100,000).
CODE_RUN = "charts_code_run"

#: Plotly's own default height, which the figures of the pages used before this module.
HEIGHT = 450

#: True while a section of :func:`after_paint` is drawn: the page's text is painted by then,
#: so a chart inside it is drawn at once, with no paint report of its own (a late report
#: is one more fragment rerun for the admin's next click to meet).
_AFTER_PAINT: ContextVar[bool] = ContextVar("after_paint", default=False)


def plotly_chart(
    figure: go.Figure | Callable[[], go.Figure], *, key: str, height: int = HEIGHT
) -> None:
    """*figure* (or the function making it, called only when the chart is drawn) in a slot of
    *height* pixels, drawn after the page's text is painted; *key* is the chart's key."""
    st.fragment(_slot)(figure, key, height)


def _slot(figure: go.Figure | Callable[[], go.Figure], key: str, height: int) -> None:
    """The fragment's body: the component that reports the paint, then the slot of fixed
    height, with the chart in it once the page is painted."""
    ready = painted(
        f"{key}_painted", known=bool(st.session_state.get(CODE_RUN)) or _AFTER_PAINT.get()
    )
    if ready:
        st.session_state[CODE_RUN] = True
    with st.container(height=height, border=False, key=f"{key}_slot"):
        if ready:
            fig = figure if isinstance(figure, go.Figure) else figure()
            st.plotly_chart(go.Figure(fig).update_layout(height=height), key=key)


def after_paint(draw: Callable[..., None], *args: Any, key: str) -> None:
    """``draw(*args)`` in a fragment of its own, run once the browser has painted the page's
    text (at once when the session's browser has run the chart code: :data:`CODE_RUN`); *key*
    names the fragment's paint report. *draw* is guarded by the caller (``_ui.requires``), as
    every fragment of the admin pages is. Place it below every chart and text drawn at once:
    what it draws comes later and must move nothing."""
    st.fragment(_later)(draw, key, args)


def _later(draw: Callable[..., None], key: str, args: tuple[Any, ...]) -> None:
    """The fragment's body: the component that reports the paint, then the section once the
    page is painted (the section never sets :data:`CODE_RUN`: it runs no chart code)."""
    if painted(f"{key}_painted", known=bool(st.session_state.get(CODE_RUN))):
        token = _AFTER_PAINT.set(True)
        try:
            draw(*args)
        finally:
            _AFTER_PAINT.reset(token)
