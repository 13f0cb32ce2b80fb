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
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from pages.components.afterpaint import painted

#: Set in the session once a chart was drawn after the paint: the browser has run the chart
#: code, so the next page views of this session draw their charts at once (waiting for the
#: page's whole run and a round trip cost 0.6 s warm at 1,200 items, 4.4 s at 100,000).
CODE_RUN = "charts_code_run"

#: Plotly's own default height, which the figures of the pages used before this module.
HEIGHT = 450


def plotly_chart(
    figure: go.Figure | Callable[[], go.Figure], *, key: str, height: int = HEIGHT
) -> None:
    """*figure* (or the function making it, called only when the chart is drawn) in a slot of
    *height* pixels, drawn after the page's text is painted; *key* is the chart's key."""
    st.fragment(_slot)(figure, key, height)


def _slot(figure: go.Figure | Callable[[], go.Figure], key: str, height: int) -> None:
    """The fragment's body: the component that reports the paint, then the slot of fixed
    height, with the chart in it once the page is painted."""
    ready = painted(f"{key}_painted", known=bool(st.session_state.get(CODE_RUN)))
    if ready:
        st.session_state[CODE_RUN] = True
    with st.container(height=height, border=False, key=f"{key}_slot"):
        if ready:
            fig = figure if isinstance(figure, go.Figure) else figure()
            st.plotly_chart(go.Figure(fig).update_layout(height=height), key=key)
