"""medsim-annot served as one ASGI app: Streamlit (``app.py``) plus the ratings endpoint.

``streamlit run serve.py`` (what ``make run`` does) finds ``app`` below and serves it with
uvicorn: the pages as usual, and ``POST /api/annotate/ratings``, the JSON endpoint the
annotation widget sends its ratings to (see docs/annotation.md, "How ratings travel").
The endpoint keeps no state in the process, so several processes behind a reverse proxy
can share one PostgreSQL store (docs/deploy.md).

Before any session starts, two things only a served app does: Streamlit's legacy multipage
mode is turned off (it would list every file of ``pages/`` in the first visitor's sidebar
until ``app.py``'s ``st.navigation`` replaces it; ``st.navigation`` turns it off too, but only
once the first run reaches it), and the admin pages' heavy imports are done: the Dashboard's
before the server answers; in the background, from before those imports, the studies' first
Dashboard figures, then the rarer pages' imports (:mod:`medsim_annot.warmup`,
:mod:`medsim_annot.services.dashboard.warm`).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from medsim_annot import forwarded, tcp, warmup
from medsim_annot.ratings_api import routes

# uvicorn would take X-Forwarded-For from any loopback client (its FORWARDED_ALLOW_IPS
# default): it trusts none; the app reads the header only from MEDSIM_TRUST_FORWARDED's
# proxies (medsim_annot/forwarded.py). A bad MEDSIM_TRUST_FORWARDED stops the start here.
forwarded.pin_app_server()
forwarded.trusted_proxies()

# Nagle off on every accepted connection (a 40 ms stall per kept-alive request otherwise).
tcp.install()
PagesManager.uses_pages_directory = False
# In the background from now: the studies' first Dashboard figures (their reads and NumPy
# work overlap the imports below, which hold one core), then the rarer pages' imports.
warmup.warm_in_background(warmup.AFTER_SERVING, dashboards=True)
warmup.warm(warmup.BEFORE_SERVING)  # before the server answers: the Dashboard's stack
app = st.App("app.py", routes=routes())
