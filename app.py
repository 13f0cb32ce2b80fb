"""medsim-annot: sign-in and navigation. Run with ``streamlit run app.py``.

Annotators sign in with their access code and get only the Annotate page; the study admin
signs in with the admin password and gets Study setup, Dashboard, Export and Embedding
scoring (each of the last three only once its page file exists).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from medsim_annot.services.auth import (
    admin_password_configured,
    authenticate_annotator,
    check_admin_password,
)
from pages import _ui

HERE = Path(__file__).resolve().parent
st.set_page_config(page_title="medsim-annot", page_icon=":material/stethoscope:", layout="centered")


def landing() -> None:
    st.title("medsim-annot")
    st.markdown(
        "Doctors rate how similar or related two medical terms are, one pair at a time and "
        "one key press per pair; study admins set up studies, follow agreement and export "
        "the verified data.\n\n"
        "**Annotators:** type the access code you were given and press *Sign in*. Your "
        "progress is saved with every key press; sign in again any time to continue."
    )
    with st.form("login_annotator", clear_on_submit=True):
        code = st.text_input("Access code", key="login_code", placeholder="XXXX-XXXX-…")
        go = st.form_submit_button("Sign in", type="primary")
    if go:
        ident = authenticate_annotator(code, engine=_ui.engine())
        if ident is None:
            st.error(
                "This access code is not valid (or was revoked). Check it, or ask the "
                "study admin for a new one."
            )
        else:
            _ui.sign_in_annotator(ident)
            st.rerun()
    with st.expander("Study admin"):
        if not admin_password_configured(engine=_ui.engine()):
            st.info(
                "No admin password is set yet: run `medsim admin set-password` or set "
                "MEDSIM_ADMIN_PASSWORD."
            )
        with st.form("login_admin", clear_on_submit=True):
            pw = st.text_input("Admin password", type="password", key="login_password")
            go_admin = st.form_submit_button("Sign in as admin")
        if go_admin:
            if check_admin_password(pw, engine=_ui.engine()):
                _ui.sign_in_admin()
                st.rerun()
            else:
                st.error("Wrong admin password.")


role = _ui.role()
if role == "annotator":
    pages = [
        st.Page("pages/annotate.py", title="Annotate", icon=":material/edit_note:", default=True)
    ]
elif role == "admin":
    pages = [st.Page("pages/setup.py", title="Study setup", icon=":material/tune:", default=True)]
    for file, title, icon in (
        ("dashboard.py", "Dashboard", ":material/monitoring:"),
        ("export.py", "Export", ":material/download:"),
        ("scoring.py", "Embedding scoring", ":material/calculate:"),
    ):
        if (HERE / "pages" / file).exists():
            pages.append(st.Page(f"pages/{file}", title=title, icon=icon))
else:
    pages = [st.Page(landing, title="Sign in", icon=":material/login:", default=True)]

nav = st.navigation(pages, position="sidebar" if role == "admin" else "hidden")
if role:
    with st.sidebar:
        ident = st.session_state.get(_ui.IDENTITY)
        st.caption(
            f"Signed in as {ident.name}"
            if role == "annotator" and ident
            else "Signed in as study admin"
        )
        st.button("Sign out", key="signout", on_click=_ui.sign_out)
nav.run()
