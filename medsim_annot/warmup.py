"""Import the admin pages' heavy stacks when the server starts, not on an admin's first visit.

The first admin to open the Dashboard or Embedding scoring after a start would otherwise wait
for these imports (pingouin alone pulls matplotlib and seaborn; crowd-kit, scipy.stats and
the embedding evaluation follow): seconds on a small server. ``serve.py`` calls :func:`warm`
on :data:`BEFORE_SERVING` and :func:`warm_in_background` on :data:`AFTER_SERVING`, before any
session starts (the background thread first warms the studies' dashboards:
:mod:`medsim_annot.services.dashboard.warm`); a page that needs a module while
it is still being imported waits for that import only (Python's per-module import lock), and
a module that fails to import here fails again, with its message, where it is used.
"""

from __future__ import annotations

import importlib
import threading
from threading import Event as Signal  # (the name Event is the event log's)

import plotly.graph_objects as go
import plotly.io as pio

from medsim_annot.services.dashboard import warm as dashboard_warm

BEFORE_SERVING = (
    "medsim_annot.services.dashboard",  # scipy.stats, the agreement statistics
    "pingouin",  # ICC (medsim_annot.stats.icc imports it on first use): matplotlib, seaborn
    "medsim_annot.services.plots",  # plotly; then a first figure (:func:`_first_figure`)
)
"""Imported before the server answers (``serve.py``: :func:`warm`), about 2 s on a quiet
2-core machine: the Dashboard's first load after a start otherwise waited for them. In a
background thread they were still being imported when an admin signed in and opened the
Dashboard a few seconds after a start, and the import competed with the page for the
interpreter (first load 2.7–3.1 s against 0.5 s once warm, ``make bench`` admin_pages)."""

AFTER_SERVING = (
    "medsim_annot.services.scoring",  # the embedding evaluation
    "medsim_annot.services.gold.export",
    "crowdkit.aggregation",  # the dashboard's model of the doctors (on request, with a spinner)
)
"""Imported in a background thread once the server is up: the rarer pages and sections."""

MODULES = BEFORE_SERVING + AFTER_SERVING

#: Set once :func:`warm` has imported :data:`BEFORE_SERVING`: the background thread, started
#: before those imports (to warm the dashboards meanwhile), imports :data:`AFTER_SERVING`
#: only after them, so that two threads never import the same packages at once.
BEFORE_SERVING_DONE = Signal()


def _first_figure() -> None:
    """Build and serialise one small plotly figure: plotly loads its default template and its
    property validators on the first figure of the process (0.2–0.6 s)."""
    fig = go.Figure(go.Bar(x=["a"], y=[1.0], error_y={"type": "data", "array": [0.1]}))
    fig.add_trace(go.Heatmap(z=[[1.0]], x=["a"], y=["b"], text=[["1"]]))
    fig.update_layout(title="warm", xaxis_title="x", yaxis_title="y", legend={"x": 0}, height=300)
    pio.to_json(fig, validate=False)


def warm(modules: tuple[str, ...]) -> None:
    """Import *modules* now, in order (one that fails is skipped: it fails again, with its
    message, where it is used)."""
    for name in modules:
        try:
            importlib.import_module(name)
            if name == "medsim_annot.services.plots":
                _first_figure()
        except Exception:
            continue  # reported where the module is used
    if modules == BEFORE_SERVING:
        BEFORE_SERVING_DONE.set()


def warm_in_background(
    modules: tuple[str, ...] = MODULES, *, dashboards: bool = False
) -> threading.Thread:
    """Start importing *modules* in a daemon thread (it never holds the server up at exit);
    with *dashboards*, the same thread first computes the studies' first Dashboard figures
    (:mod:`medsim_annot.services.dashboard.warm`: the Dashboard is the first admin page
    after signing in, the imports serve rarer pages)."""
    thread = threading.Thread(
        target=_warm_all, args=(modules, dashboards), name="medsim-warm-imports", daemon=True
    )
    thread.start()
    return thread


def _warm_all(modules: tuple[str, ...], dashboards: bool) -> None:
    if dashboards:
        dashboard_warm.warm_store()
        BEFORE_SERVING_DONE.wait(120)  # serve.py started this thread before those imports
    warm(modules)
