"""medsim-annot served as one ASGI app: Streamlit (``app.py``) plus the ratings endpoint.

``streamlit run serve.py`` (what ``make run`` does) finds ``app`` below and serves it with
uvicorn: the pages as usual, and ``POST /api/annotate/ratings``, the JSON endpoint the
annotation widget sends its ratings to (see docs/annotation.md, "How ratings travel").
The endpoint keeps no state in the process, so several processes behind a reverse proxy
can share one PostgreSQL store (docs/deploy.md).
"""

from __future__ import annotations

import streamlit as st

from medsim_annot import tcp
from medsim_annot.ratings_api import routes

# Nagle off on every accepted connection (a 40 ms stall per kept-alive request otherwise).
tcp.install()
app = st.App("app.py", routes=routes())
