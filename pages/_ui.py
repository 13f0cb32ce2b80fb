"""Helpers shared by the pages: the cached engine, role guards, sign-out.

Every admin page calls :func:`require_admin` first, so opening its URL without the admin
role shows a refusal and stops the script before anything else is rendered or sent.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from data_schemas.errors import InputError
from medsim_annot.io import table_bytes
from medsim_annot.services.auth import AnnotatorIdentity
from medsim_annot.services.store import open_store, store_url

ROLE = "auth_role"
IDENTITY = "auth_identity"


@st.cache_resource(show_spinner=False)
def _engine(url: str):
    return open_store(url)


def engine():
    """The database engine for MEDSIM_DATABASE_URL (one per process and URL)."""
    return _engine(store_url())


def role() -> str | None:
    return st.session_state.get(ROLE)


def require_admin() -> None:
    """Refuse (and stop) unless the session signed in with the admin password."""
    if role() != "admin":
        st.error(
            "This page is for the study admin. Sign in with the admin password on the start page.",
            icon=":material/lock:",
        )
        st.stop()


def require_annotator() -> AnnotatorIdentity:
    """The signed-in annotator; refuse (and stop) for anyone else."""
    ident = st.session_state.get(IDENTITY)
    if role() != "annotator" or not isinstance(ident, AnnotatorIdentity):
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


def problems_frame(exc: InputError) -> pd.DataFrame:
    """An InputError's problems as a table (row, column, problem) for st.dataframe."""
    return pd.DataFrame(
        [{"row": p.row, "column": p.column or "", "problem": p.message} for p in exc.problems],
        columns=["row", "column", "problem"],
    )


def show_problems(
    exc: InputError, message: str | None = None, *, note: str = "", key: str | None = None
) -> None:
    """The one way pages show a bad input file: an error line (*message*, or the file and
    the number of problems, then *note*) and the table of its problems (row, column,
    problem)."""
    n = len(exc.problems)
    if message is None and not n:
        message = exc.summary()
    elif message is None:
        message = f"{exc.file or 'The file'}: {n} problem(s)" + (f" — {note}" if note else ".")
    st.error(message)
    if n:
        st.dataframe(problems_frame(exc), hide_index=True, key=key)


def download_csv(label: str, frame: pd.DataFrame, file_name: str, key: str, *, index: bool = False):
    """A button that downloads *frame* as CSV, through the one writer that escapes spreadsheet
    formulas in every cell, header and index included (:func:`medsim_annot.io.table_bytes`)."""
    st.download_button(
        label, table_bytes(frame, index=index), file_name=file_name, mime="text/csv", key=key
    )
