"""Helpers shared by the pages: the cached engine, role guards, sign-out.

Every admin page calls :func:`require_admin` first, so opening its URL without the admin
role shows a refusal and stops the script before anything else is rendered or sent.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from medsim_annot.io import table_bytes
from medsim_annot.services.auth import AnnotatorIdentity
from medsim_annot.services.store import open_store, store_url

ROLE = "auth_role"
IDENTITY = "auth_identity"
#: Set by app.py on every run before it hands over to a page.
ROUTED = "auth_routed"


@st.cache_resource(show_spinner=False)
def _engine(url: str):
    return open_store(url)


def engine():
    """The database engine for MEDSIM_DATABASE_URL (one per process and URL)."""
    return _engine(store_url())


def role() -> str | None:
    return st.session_state.get(ROLE)


def _to_sign_in() -> None:
    """A page file run on its own goes to the sign-in page instead.

    The first run in a fresh server process resolves the URL against the ``pages/`` folder
    before app.py's ``st.navigation`` exists (Streamlit's legacy multipage mode): after a
    server restart, a browser still showing ``/annotate`` would run this file directly, with
    a raw list of page files in the sidebar. Switching to app.py gives a clean sign-in page.
    (Streamlit flags that legacy mode on its PagesManager until st.navigation first runs.)
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and not st.session_state.get(ROUTED):
        st.switch_page("app.py")


def require_admin() -> None:
    """Refuse (and stop) unless the session signed in with the admin password."""
    if role() != "admin":
        _to_sign_in()
        st.error(
            "This page is for the study admin. Sign in with the admin password on the start page.",
            icon=":material/lock:",
        )
        st.stop()


def require_annotator() -> AnnotatorIdentity:
    """The signed-in annotator; refuse (and stop) for anyone else."""
    ident = st.session_state.get(IDENTITY)
    if role() != "annotator" or not isinstance(ident, AnnotatorIdentity):
        _to_sign_in()
        st.error(
            "Sign in with your access code on the start page to annotate.", icon=":material/lock:"
        )
        st.stop()
    return ident


def sign_in_admin() -> None:
    st.session_state.clear()
    st.session_state[ROLE] = "admin"


def sign_in_annotator(identity: AnnotatorIdentity) -> None:
    st.session_state.clear()
    st.session_state[ROLE] = "annotator"
    st.session_state[IDENTITY] = identity


def sign_out() -> None:
    st.session_state.clear()


def problems_frame(exc):
    """An InputError's problems as a table (row, column, problem) for st.dataframe."""
    import pandas as pd

    return pd.DataFrame(
        [{"row": p.row, "column": p.column or "", "problem": p.message} for p in exc.problems],
        columns=["row", "column", "problem"],
    )


def download_csv(label: str, frame: pd.DataFrame, file_name: str, key: str, *, index: bool = False):
    """A button that downloads *frame* as CSV, through the one writer that escapes spreadsheet
    formulas in every cell, header and index included (:func:`medsim_annot.io.table_bytes`)."""
    st.download_button(
        label, table_bytes(frame, index=index), file_name=file_name, mime="text/csv", key=key
    )
