"""Entry point of the rerun baseline with the widget (benchmarks only): an access-code form,
then the Annotate page as it was before the REST endpoint (``widget_page.py``)."""

from __future__ import annotations

import streamlit as st

from medsim_annot.services.people.annotators import authenticate_annotator
from pages import _ui

st.set_page_config(page_title="medsim-annot baseline", layout="centered")
st.session_state[_ui.ROUTED] = True


def sign_in() -> None:
    with st.form("login_annotator", clear_on_submit=True):
        code = st.text_input("Access code")
        go = st.form_submit_button("Sign in", type="primary")
    if go:
        ident = authenticate_annotator(code, engine=_ui.engine())
        if ident is None:
            st.error("This access code is not valid.")
        else:
            _ui.sign_in_annotator(ident)
            st.rerun()


page = (
    st.Page("widget_page.py", title="Annotate", default=True)
    if _ui.role() == "annotator"
    else st.Page(sign_in, title="Sign in", default=True)
)
st.navigation([page], position="hidden").run()
