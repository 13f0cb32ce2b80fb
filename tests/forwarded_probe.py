"""A served app that answers ``GET /probe`` with the client address the app server gives it,
started by ``streamlit run`` exactly like ``serve.py`` and pinned the same way
(``tests/test_client_address.py``)."""

import streamlit as st
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from medsim_annot import forwarded

forwarded.pin_app_server()


async def probe(request):
    return PlainTextResponse(request.client.host if request.client else "")


app = st.App("../app.py", routes=[Route("/probe", probe)])
