"""Helpers shared by the pages: the cached engine, role guards, sign-out.

Every admin page calls :func:`require_admin` first, so opening its URL without the admin
role shows a refusal and stops the script before anything else is rendered or sent.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from medsim_annot.io import table_bytes
from medsim_annot.services.admins import AdminIdentity, set_actor_provider
from medsim_annot.services.auth import AnnotatorIdentity
from medsim_annot.services.store import open_store, store_url

ROLE = "auth_role"
IDENTITY = "auth_identity"
ADMIN = "auth_admin"  # the signed-in AdminIdentity (named in the event log)


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


def sign_in_admin(admin: AdminIdentity | None = None) -> None:
    st.session_state.clear()
    st.session_state[ROLE] = "admin"
    st.session_state[ADMIN] = admin or AdminIdentity(name="admin", via="named")


def current_admin() -> AdminIdentity | None:
    admin = st.session_state.get(ADMIN)
    return admin if role() == "admin" and isinstance(admin, AdminIdentity) else None


def _session_actor() -> str | None:
    """The signed-in admin of the Streamlit session running this thread (or nobody)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    admin = current_admin()
    return admin.actor if admin else None


# Events recorded while a session runs (page script or widget callback) name its admin.
set_actor_provider(_session_actor)


def client_id() -> str:
    """Who is signing in, for counting failed attempts: the connection's address (behind a
    trusted reverse proxy, MEDSIM_TRUST_FORWARDED=1, the last X-Forwarded-For hop)."""
    import os

    if os.environ.get("MEDSIM_TRUST_FORWARDED", "") not in ("", "0", "false", "no"):
        fwd = st.context.headers.get("X-Forwarded-For", "")
        if fwd.strip():
            return fwd.split(",")[-1].strip()
    ip = st.context.ip_address
    return ip if isinstance(ip, str) and ip else "local"


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
