"""Helpers shared by the pages: the cached engine, the role guard, sign-out.

The role guard is :func:`requires`: every admin page's body, widget callbacks and fragments
(and the Adjudicate page's) run through it, so opening a page's URL without the role shows a
refusal and stops the script before anything else is rendered or sent, and a session whose
admin was removed (or given a new password) since the page was drawn can no longer change
anything from it.
"""

from __future__ import annotations

import functools
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import pandas as pd
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

from data_schemas.errors import InputError
from medsim_annot import forwarded
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.i18n import N_, fmt_int, t, tn
from medsim_annot.io import table_bytes
from medsim_annot.services.activity import set_actor_provider
from medsim_annot.services.people.adjudicators import AdjudicatorIdentity, check_session
from medsim_annot.services.people.admins import AdminIdentity, admin_session_valid
from medsim_annot.services.people.annotators import AnnotatorIdentity
from medsim_annot.services.people.code_sheet import (
    codes_sheet_html,
    codes_text,
    sign_in_address,
    web_address,
)
from medsim_annot.services.people.names import file_slug
from medsim_annot.services.people.tokens import end_token
from medsim_annot.services.rating_queue import STORE_ERRORS
from medsim_annot.services.store import open_store, store_url
from pages import _i18n, _languages

ROLE = "auth_role"
IDENTITY = "auth_identity"
DOWNLOAD_NONCE = "auth_download_nonce"
NOTICE = "auth_notice"  # a reason the start page shows once (a session that was ended)
ADMIN = "auth_admin"  # the signed-in AdminIdentity (named in the event log)
#: The ratings endpoint token the Annotate page minted for this session (ended at sign-out).
RATINGS_TOKEN = "auth_ratings_token"
#: The page session the Annotate page mints its tokens for (what was served is recorded per
#: session; the widget binds the ratings it keeps in the browser to it).
RATINGS_SESSION = "auth_ratings_session"
#: An annotator asked to sign out: the widget saves (or asks), clears what it kept in the
#: browser, then the session ends (value: whether to leave single sign-on too).
SIGN_OUT_ASKED = "auth_sign_out_asked"
#: Set by app.py on every run before it hands over to a page.
ROUTED = "auth_routed"
F = TypeVar("F", bound=Callable[..., Any])


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
    if PagesManager.uses_pages_directory and not st.session_state.get(ROUTED):
        st.switch_page("app.py")


# Refusals (marked here, translated where shown: t(ADMIN_ONLY)).
ADMIN_ONLY = N_(
    "This page is for the study admin. Sign in with the admin password on the start page."
)
ANNOTATOR_ONLY = N_("Sign in with your access code on the start page to annotate.")
ADJUDICATOR_ONLY = N_("This page is for the study's adjudicators. Sign in with your access code.")
ADMIN_ENDED = N_(
    "Your admin session has ended: the admin was removed or their password changed. Sign in again."
)
ADMIN_UNCHECKED = N_(
    "The store could not be reached to check your admin session; sign in again in a moment."
)


@dataclass(frozen=True)
class Refusal:
    """Why this session may not act in a role: *ended* when it was signed in as that role
    but may no longer be (the admin removed or given a new password, the adjudicator's code
    changed), else it was never signed in as that role."""

    message: str
    ended: bool


def _checkable(admin: object) -> bool:
    """Whether *admin* can be checked against the store: a session made by a sign-in keeps
    the admin's credential fingerprint (``app.py`` ends an admin session without one before
    any page runs; page tests build one by hand, with nothing in the store to check)."""
    return isinstance(admin, AdminIdentity) and (admin.via != "named" or bool(admin.credential))


def session_refusal(need: str) -> Refusal | None:
    """The one role check: ``None`` when this session is signed in as *need* (``"admin"``,
    ``"adjudicator"``, or ``"adjudicate"``: either of them) and that sign-in still holds in
    the store, else why not.

    Asked afresh by every page body, widget callback and fragment of the admin pages and the
    Adjudicate page (:func:`requires`): callbacks run before ``app.py`` checks the session,
    and a fragment's own reruns skip ``app.py`` altogether."""
    if need == "admin":
        if role() != "admin":
            return Refusal(t(ADMIN_ONLY), ended=False)
        admin = st.session_state.get(ADMIN)
        if not _checkable(admin):
            return None
        try:
            valid = admin_session_valid(admin, engine=engine())
        except STORE_ERRORS:
            return Refusal(t(ADMIN_UNCHECKED), ended=True)
        return None if valid else Refusal(t(ADMIN_ENDED), ended=True)
    if need == "adjudicate":
        # The Adjudicate page: its adjudicators, and study admins from their own session.
        return session_refusal("admin" if role() == "admin" else "adjudicator")
    if need == "adjudicator":
        ident = st.session_state.get(IDENTITY)
        if role() != "adjudicator" or not isinstance(ident, AdjudicatorIdentity):
            return Refusal(t(ADJUDICATOR_ONLY), ended=False)
        try:
            check_session(ident, engine=engine())
        except SessionEnded as exc:
            text = str(exc)
            return Refusal(f"{text[:1].upper()}{text[1:]}.", ended=True)
        return None
    raise ValueError(f"no role check for {need!r}")


def _refuse(refusal: Refusal, *, page: bool) -> None:
    """Act on *refusal*: an ended session is ended and the app run again, so the start page
    says why (``app.py`` shows the notice); a page body of a session never signed in as the
    role shows the refusal and stops; a callback or fragment of one just runs the app again.
    Nothing the refused function would have done happens."""
    if refusal.ended:
        end_session(refusal.message)
        st.rerun()
    if page:
        _to_sign_in()
        # A session ended by a callback of this page (run on its own, not through app.py)
        # shows why, once.
        st.error(st.session_state.pop(NOTICE, None) or refusal.message, icon=":material/lock:")
        st.stop()
    st.rerun()


def requires(need: str, *, page: bool = False) -> Callable[[F], F]:
    """Run the decorated function only while this session may act as *need*
    (:func:`session_refusal`); a refused call changes nothing and ends the session if it
    has ended (the start page then says so). On every widget callback and fragment of the
    admin pages and the Adjudicate page, and on their page body (``page=True``: a session
    never signed in as *need* sees the refusal there). Fragments are applied where they
    are called: ``st.fragment(requires("admin")(body), run_every=...)()``."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            # Callbacks and fragments run without app.py: their texts need the language too.
            _i18n.use_page_language()
            refusal = session_refusal(need)
            if refusal is not None:
                _refuse(refusal, page=page)
                return None
            return fn(*args, **kwargs)

        return cast(F, guarded)

    return wrap


def _while_admin_holds(fn: Callable[[], bytes], admin: object, eng) -> Callable[[], bytes]:
    """*fn*, refused (``PermissionError``) once *admin* no longer holds in the store."""

    def data() -> bytes:
        if _checkable(admin) and not admin_session_valid(cast(AdminIdentity, admin), engine=eng):
            raise PermissionError(t(ADMIN_ENDED))
        return fn()

    return data


def admin_download(fn: Callable[[], bytes]) -> Callable[[], bytes]:
    """*fn* as the data of a deferred download button of an admin page. Streamlit calls it
    when the button is clicked, outside any script run (no callback, no session state), so
    it keeps the admin who drew the button and builds the file only while that admin still
    holds (:func:`session_refusal`): a removed admin's click downloads nothing."""
    return _while_admin_holds(fn, st.session_state.get(ADMIN), engine())


def require_annotator() -> AnnotatorIdentity:
    """The signed-in annotator; refuse (and stop) for anyone else. Sets the page's language
    (a page run on its own, without ``app.py``, speaks the person's language too)."""
    _i18n.use_page_language()
    ident = st.session_state.get(IDENTITY)
    if role() != "annotator" or not isinstance(ident, AnnotatorIdentity):
        _to_sign_in()
        st.error(t(ANNOTATOR_ONLY), icon=":material/lock:")
        st.stop()
    return ident


def _clear_session() -> None:
    """Forget the session, ending its ratings token first (a store error leaves the token
    to expire on its own: it is short-lived)."""
    minted = st.session_state.get(RATINGS_TOKEN)
    if isinstance(minted, dict) and minted.get("token"):
        try:
            end_token(minted["token"], engine=engine())
        except STORE_ERRORS:
            pass
    st.session_state.clear()


def sign_in_adjudicator(identity: AdjudicatorIdentity) -> None:
    _clear_session()
    st.session_state[ROLE] = "adjudicator"
    st.session_state[IDENTITY] = identity
    _languages.use_stored_language(identity, engine())  # the person's own language


def sign_in_admin(admin: AdminIdentity | None = None) -> None:
    _clear_session()
    st.session_state[ROLE] = "admin"
    st.session_state[ADMIN] = admin or AdminIdentity(name="admin", via="named")
    _languages.use_stored_language(st.session_state[ADMIN], engine())


def current_admin() -> AdminIdentity | None:
    admin = st.session_state.get(ADMIN)
    return admin if role() == "admin" and isinstance(admin, AdminIdentity) else None


def _session_actor() -> str | None:
    """The signed-in admin of the Streamlit session running this thread (or nobody)."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    admin = current_admin()
    return admin.actor if admin else None


# Events recorded while a session runs (page script or widget callback) name its admin.
set_actor_provider(_session_actor)


def client_id() -> str:
    """Who is signing in, for counting failed attempts: the connection's address, or behind
    a reverse proxy that ``MEDSIM_TRUST_FORWARDED`` trusts, the right-most
    ``X-Forwarded-For`` hop no trusted proxy added (:func:`medsim_annot.forwarded.client_address`;
    every loopback client without one is ``local``)."""
    ip = st.context.ip_address
    return forwarded.client_address(
        ip if isinstance(ip, str) and ip else None,
        st.context.headers.get("X-Forwarded-For"),
        forwarded.trusted_proxies(),
    )


def sign_in_annotator(identity: AnnotatorIdentity) -> None:
    _clear_session()
    st.session_state[ROLE] = "annotator"
    st.session_state[IDENTITY] = identity
    _languages.use_stored_language(identity, engine())  # the person's own language


def sign_out() -> None:
    _clear_session()


def ask_sign_out(*, sso: bool = False) -> None:
    """An annotator's Sign out: the Annotate page hands it to the widget, which sends the
    pending ratings (or asks the doctor), deletes what it kept in this browser — ratings
    and free-text comments — and then ends the session (:func:`sign_out`; with *sso*, the
    identity provider's session too). Any other role signs out at once."""
    if role() == "annotator":
        st.session_state[SIGN_OUT_ASKED] = {"sso": bool(sso)}
    else:
        sign_out()
        if sso:
            st.logout()


def end_session(reason: str) -> None:
    """Sign out because the session may not go on; the start page shows *reason* once."""
    st.session_state.clear()
    st.session_state[NOTICE] = reason


def download_name(stem: str, ext: str) -> str:
    """A download file name: *stem* as a safe slug plus this session's random component.

    Streamlit derives a download's media id from its bytes, type and file name; the random
    part (64 bits, one per session) keeps that id underivable from the content, so nobody
    without the session can guess the link of an export. A study name
    never reaches a file name directly (a name with path characters could write elsewhere).
    """
    nonce = st.session_state.get(DOWNLOAD_NONCE)
    if nonce is None:
        nonce = st.session_state[DOWNLOAD_NONCE] = secrets.token_hex(8)
    return f"{file_slug(stem, fallback='download')}-{nonce}.{ext}"


_MD_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")


def plain_markdown(text: str) -> str:
    """*text* for a markdown element (``st.success``, ``st.caption``...) with every ASCII
    punctuation character backslash-escaped, so names and ids typed by people show as typed:
    no links, images, emphasis, colours, emoji codes or maths: a name typed by someone cannot become a link.

    >>> print(plain_markdown("![x](http://e.org/i.png)"))
    \\!\\[x\\]\\(http\\:\\/\\/e\\.org\\/i\\.png\\)
    """
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def upload_base_name(name: str) -> str:
    """The base name of an uploaded file's name (never a path: ``../x.csv`` gives ``x.csv``)."""
    base = Path((name or "").replace("\\", "/")).name
    return "upload" + Path(base).suffix if base in ("", ".", "..") else base


@contextmanager
def upload_copy(name: str, data: bytes) -> Iterator[Path]:
    """A private temporary copy of an upload under its base name (the readers go by the
    suffix), deleted with its folder on exit: no uploaded name chooses where we write, and no
    copy outlives its use. A bad file's errors name it as the user uploaded it, never by the
    server's temporary path."""
    with tempfile.TemporaryDirectory(prefix="medsim-upload-") as folder:
        path = Path(folder) / upload_base_name(name)
        path.write_bytes(data)
        try:
            yield path
        except InputError as exc:
            raise exc.renamed(str(path), upload_base_name(name)) from None


def show_codes_once(state_key: str, where: str, study: str, codes: list[dict], message: str):
    """Keep newly issued access codes for the next run only (see :func:`codes_shown_once`)."""
    st.session_state[state_key] = {
        "where": where,
        "study": study,
        "codes": [{"name": c["name"], "access_code": c["access_code"]} for c in codes],
        "message": message,
    }


def _sign_in_address() -> str | None:
    """Where doctors sign in: ``MEDSIM_PUBLIC_URL``, else the address this browser uses (a
    bad setting is said once, and the browser's address is used)."""
    seen = urlsplit(str(getattr(st.context, "url", "") or ""))
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    # The app's root (the sign-in page), not the admin page this browser is on.
    here = f"{seen.scheme}://{seen.netloc}/{base}" if seen.netloc else ""
    try:
        return sign_in_address(here)
    except UsageProblem as exc:
        st.warning(str(exc))
        return web_address(here)


def codes_shown_once(state_key: str, where: str, container_key: str) -> None:
    """Show the access codes kept by :func:`show_codes_once` for *where*, with the study's
    name and the sign-in address, a copy button, the codes file and a printable sheet (one
    card per doctor with a QR code of the address), and forget them: the next run no longer
    has them, so codes do not linger in the session."""
    new = st.session_state.get(state_key)
    if not new or new["where"] != where:
        return
    del st.session_state[state_key]
    address = _sign_in_address()
    text = codes_text(new["study"], address, new["codes"])
    with st.container(key=container_key):
        st.success(
            t(
                "{message} Give each annotator their access code now: codes are shown only "
                "this once and disappear at your next click (you can issue new ones below).",
                message=plain_markdown(new["message"]),
            )
        )
        st.code(text, language=None, wrap_lines=True)  # has a copy button
        c1, c2 = st.columns(2)
        c1.download_button(
            t("Download the codes"),
            text.encode("utf-8"),
            file_name=download_name(f"access-codes-{new['study']}", "txt"),
            mime="text/plain",
            on_click="ignore",
            key=f"{container_key}_download",
        )
        c2.download_button(
            t("Download a printable sheet (HTML, a QR code each)"),
            codes_sheet_html(new["study"], address, new["codes"]).encode("utf-8"),
            file_name=download_name(f"access-codes-{new['study']}", "html"),
            mime="text/html",
            on_click="ignore",
            key=f"{container_key}_sheet",
        )


def problems_frame(exc: InputError) -> pd.DataFrame:
    """An InputError's problems as a table (row, column, problem) for st.dataframe."""
    return pd.DataFrame(
        [
            # a problem of the whole file has no row: a blank cell, not "None"
            {
                "row": "" if p.row is None else str(p.row),
                "column": p.column or "",
                "problem": p.message,
            }
            for p in exc.problems
        ],
        columns=["row", "column", "problem"],
    )


def show_problems(
    exc: InputError, message: str | None = None, *, note: str = "", key: str | None = None
) -> None:
    """The one way pages show a bad input file: an error line (*message*, or the file and
    the number of problems, then *note*) and the table of its problems (row, column,
    problem). A problem of the whole file (no row, no column: "is an Excel workbook …") is
    written out in full under the line instead, where a table cell would cut it off."""
    n = len(exc.problems)
    whole = [p for p in exc.problems if p.row is None and not p.column]
    located = InputError([p for p in exc.problems if p not in whole], exc.file)
    if message is None and not n:
        message = exc.summary()
    elif message is None and not located.problems and len(whole) == 1:
        message = (
            t("{summary} — {note}", summary=exc.summary(), note=note) if note else exc.summary()
        )
    elif message is None:
        count = (
            tn("{file}: {n} problem", "{file}: {n} problems", n, file=exc.file, n=fmt_int(n))
            if exc.file
            else tn("The file: {n} problem", "The file: {n} problems", n, n=fmt_int(n))
        )
        message = t("{problems} — {note}", problems=count, note=note) if note else count + "."
    st.error(plain_markdown(message))  # names typed by people show as typed
    if whole and (located.problems or len(whole) > 1):
        st.markdown("\n".join(f"- {plain_markdown(p.message)}" for p in whole))
    if located.problems:
        st.dataframe(
            problems_frame(located),
            hide_index=True,
            key=key,
            # Headers translated for display only (the frame keeps its column names).
            column_config={
                "row": st.column_config.TextColumn(t("row")),
                "column": st.column_config.TextColumn(t("column")),
                "problem": st.column_config.TextColumn(t("problem"), width="large"),
            },
        )


def download_csv(label: str, frame: pd.DataFrame, file_name: str, key: str, *, index: bool = False):
    """A button that downloads *frame* as CSV, through the one writer that escapes spreadsheet
    formulas in every cell, header and index included (:func:`medsim_annot.io.table_bytes`).
    The file name gets this session's random part (:func:`download_name`)."""
    name = Path(file_name)
    st.download_button(
        label,
        table_bytes(frame, index=index),
        file_name=download_name(name.stem, name.suffix.lstrip(".") or "csv"),
        mime="text/csv",
        key=key,
    )
