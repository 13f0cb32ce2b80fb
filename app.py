"""medsim-annot: sign-in and navigation. Served by ``serve.py`` (``make run``, ``make serve``:
``streamlit run serve.py``), which adds the ratings endpoint and, before any session starts,
turns off Streamlit's legacy multipage mode. ``streamlit run app.py`` directly also serves the
pages, but without the endpoint, and its first visitor after a start sees every file of
``pages/`` listed in the sidebar once, until ``st.navigation`` below replaces the list.

Annotators sign in with their access code and get only the Annotate page; adjudicators sign
in with theirs (or SSO) and get only the Adjudicate page; study admins sign
in with their name and password and get Study setup, Dashboard, Activity, Export and Embedding
scoring (the pages of each role are listed once, in ``pages/_registry.py``). When single sign-on is configured
(``[auth]`` in ``.streamlit/secrets.toml``, see docs/sso.md), "Sign in with SSO" sends the
user to the identity provider; the configured ``admins`` list and the annotators' linked
identities decide the role, and anyone else is refused. Failed sign-ins are throttled per
client and overall (:mod:`medsim_annot.services.people.throttle`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from medsim_annot.i18n import N_, fmt_int, t
from medsim_annot.services.people.adjudicators import AdjudicatorIdentity
from medsim_annot.services.people.admins import admin_password_configured, admin_session_valid
from medsim_annot.services.people.passwords import env_password_problem
from medsim_annot.services.people.signin import sign_in_admin, sign_in_with_code
from medsim_annot.services.people.sso import (
    UNREACHABLE,
    SsoOutcome,
    cookie_secret_problem,
    provider_unreachable,
    session_expired,
    session_hours,
    sso_role,
)
from medsim_annot.services.people.throttle import ThrottledError
from medsim_annot.services.rating_queue import STORE_ERRORS
from pages import _i18n, _languages, _ui
from pages._registry import ROLES, pages_for
from pages.components.preload import preload_chart_code

HERE = Path(__file__).resolve().parent
SSO = "auth_sso"  # session flag: signed in through the identity provider
SSO_CHOICE = "auth_sso_study"  # the study an SSO annotator linked in several studies chose
SIGN_IN_REFUSAL = "login_refusal"  # (form, message, icon) of the last refused sign-in
# The tab icon is a file of ours, served by the app: a Material icon as page_icon makes every
# browser fetch it from an outside font host, and nothing may leave the hospital's network.
# An annotator's sidebar holds only "Signed in as" and Sign out: closed, so that on a tablet
# the pair gets the whole width (it opens with the arrow at the top left).
st.set_page_config(
    page_title="medsim-annot",
    page_icon=str(HERE / "pages" / "favicon.png"),
    # Admin and adjudication pages use the window's width (tables of figures); the sign-in
    # and Annotate pages stay centred.
    layout="wide" if _ui.role() in ("admin", "adjudicator") else "centered",
    initial_sidebar_state="collapsed" if _ui.role() == "annotator" else "auto",
)
st.session_state[_ui.ROUTED] = True
# The person's language for every text of this run (and <html lang dir>): pages/_i18n.py.
_i18n.apply()
# Translators: the product's name; keep it as it is (a pseudo-locale run shows it marked).
APP_NAME = N_("medsim-annot")
STORE_DOWN = N_(
    "The rating store cannot be reached right now, so your code could not be checked. "
    "Nothing is lost: try again in a moment."
)


def _secrets(section: str) -> dict:
    try:
        value = st.secrets.get(section)
    except Exception:
        return {}
    return dict(value) if value else {}


def sso_configured() -> bool:
    auth = _secrets("auth")
    return bool(auth.get("client_id") and auth.get("server_metadata_url"))


def sso_admins() -> list[str]:
    """The ``admins`` list (e-mail addresses / subject ids) of ``[medsim]`` in secrets.toml."""
    return [str(a) for a in _secrets("medsim").get("admins", [])]


def _sso_expired() -> bool:
    """Whether the provider sign-in is older than ``[medsim] sso_session_hours``."""
    try:
        hours = session_hours(_secrets("medsim"))
    except ValueError:
        hours = 0.0  # a broken setting asks the provider every time rather than never
    return session_expired(st.user.to_dict(), hours) if hours else True


def _sso_annotator(outcome: SsoOutcome) -> None:
    """Sign the SSO user in as the annotator it is (asking which study when it is one in
    several), unless this session already is one of them."""
    allowed = {a.annotator_id: a for a in outcome.annotators}
    ident = st.session_state.get(_ui.IDENTITY)
    current = getattr(ident, "annotator_id", None) if _ui.role() == "annotator" else None
    if current not in allowed:
        choice: int | None = st.session_state.get(SSO_CHOICE)
        if len(allowed) > 1:
            pick = allowed.get(choice) if choice is not None else None
        else:
            pick = outcome.annotators[0]
        if pick is None:
            st.session_state.pop(_ui.ROLE, None)
        else:
            _ui.sign_in_annotator(pick)
            st.session_state[SSO_CHOICE] = pick.annotator_id
        st.session_state[SSO] = True


def _sso_session() -> SsoOutcome | None:
    """Map the identity provider's user to a role (every run: a removed admin loses it)."""
    if not sso_configured():
        return None
    logged_in = bool(st.user.to_dict().get("is_logged_in"))
    if logged_in and _sso_expired():
        if st.session_state.get(SSO):
            _ui.end_session(t("Your single sign-on session has ended; sign in again."))
        return None
    if not logged_in:
        if st.session_state.get(SSO):  # the SSO session ended elsewhere
            _ui.sign_out()
        return None
    if _ui.role() and not st.session_state.get(SSO):
        return None  # signed in with a password or code in this session: leave it
    outcome = sso_role(st.user.to_dict(), admins=sso_admins(), engine=_ui.engine())
    if outcome.role == "admin":
        if _ui.current_admin() != outcome.admin:
            _ui.sign_in_admin(outcome.admin)
            st.session_state[SSO] = True
    elif outcome.role == "adjudicator":
        pick_adj = outcome.adjudicators[0]
        if st.session_state.get(_ui.IDENTITY) != pick_adj:
            _ui.sign_in_adjudicator(pick_adj)
            st.session_state[SSO] = True
    elif outcome.role == "annotator":
        _sso_annotator(outcome)
    else:
        for key in (_ui.ROLE, _ui.IDENTITY, _ui.ADMIN):
            st.session_state.pop(key, None)
        st.session_state[SSO] = True
    return outcome


def _sso_sign_out() -> None:
    _ui.sign_out()
    st.logout()


def _sso_sign_in() -> None:
    """Go to the identity provider, unless it cannot be reached: then say so here (the
    provider route would answer a bare error page with no way back)."""
    _i18n.use_page_language()  # a callback runs before app.py sets the language
    if provider_unreachable(str(_secrets("auth").get("server_metadata_url", ""))):
        st.session_state[_ui.NOTICE] = t(UNREACHABLE)
        return
    st.login()


def _refuse(form: str, message: str, icon: str | None = None) -> None:
    st.session_state[SIGN_IN_REFUSAL] = (form, message, icon)


def _show_refusal(form: str) -> None:
    """The refusal of the last submit of *form*, shown once, under the form."""
    refusal = st.session_state.get(SIGN_IN_REFUSAL)
    if refusal and refusal[0] == form:
        del st.session_state[SIGN_IN_REFUSAL]
        st.error(refusal[1], icon=refusal[2])


def _check_code() -> None:
    """Submit callback of the access-code form: a valid code signs the annotator in.

    Sign-in runs in the callback, not on the button's return value: with fast reruns a
    submit that reaches the server while the previous run is finishing starts a new run
    whose trigger the finishing run then resets, so ``form_submit_button`` returns False
    and the submit is lost (the form stands unchanged). Callbacks run before the script,
    from the submitted widget values, so the submit is acted on whenever it arrives."""
    _i18n.use_page_language()  # a callback runs before app.py sets the language
    code = st.session_state.get("login_code") or ""
    try:
        ident = sign_in_with_code(code, client=_ui.client_id(), engine=_ui.engine())
    except ThrottledError as exc:
        _refuse("code", t("Sign-in paused: {reason}.", reason=exc))
    except STORE_ERRORS:
        _refuse("code", t(STORE_DOWN), ":material/hourglass_empty:")
    else:
        if isinstance(ident, AdjudicatorIdentity):
            _ui.sign_in_adjudicator(ident)
        elif ident is None:
            _refuse(
                "code",
                t(
                    "This access code is not valid (or was revoked). Check it, or ask the "
                    "study admin for a new one."
                ),
            )
        else:
            _ui.sign_in_annotator(ident)


def _submit_first(
    form: str,
    button: str,
    on_click: Callable[[], None],
    fields: Callable[[], None],
    *,
    primary: bool = False,
    clear: bool = True,
) -> None:
    """The sign-in form *form*: its submit button is sent to the browser before its *fields*
    (drawn by ``fields()``), though it shows below them.

    Streamlit's frontend submits a form on Enter only once it has received the form's submit
    button; until then Enter in a field only commits the typed value. Drawn after the fields,
    the button reaches a fresh or slow page later than they do, and a user who types and
    presses Enter in between is not signed in and not told anything (seen: field drawn at
    5.48 s, Enter at 5.54 s, button at 6.10 s, nothing sent). So the fields' container is
    made first, the button drawn next, and the fields are filled into their container last.
    *clear*: empty the fields at a submit (a password); an access code stays, so that a
    mistyped one can be corrected rather than typed again.
    """
    with st.form(form, clear_on_submit=clear):
        above = st.container()
        st.form_submit_button(button, type="primary" if primary else "secondary", on_click=on_click)
        with above:
            fields()


def _annotator_sign_in() -> None:
    """The access-code form (checked by :func:`_check_code`)."""

    def fields() -> None:
        st.text_input(
            t("Access code"),
            key="login_code",
            # Translators: the shape of an access code (X: a letter or digit); keep it.
            placeholder=t("XXXX-XXXX-…"),
        )

    _submit_first("login_annotator", t("Sign in"), _check_code, fields, primary=True, clear=False)
    _show_refusal("code")


def _admin_password_notice() -> None:
    """Why admin sign-in cannot work yet, if it cannot: a bad environment password or none."""
    try:
        configured = admin_password_configured(engine=_ui.engine())
    except STORE_ERRORS:
        configured = True
    if problem := env_password_problem():
        st.warning(problem)
    elif not configured:
        st.info(
            t(
                "No admin password is set yet: run `medsim admin set-password` or set "
                "`MEDSIM_ADMIN_PASSWORD` (at least {n} characters).",
                n=fmt_int(12),
            )
        )


def _check_admin() -> None:
    """Submit callback of the admin form: a right name and password sign the admin in (in
    the callback for the reason given at :func:`_check_code`)."""
    _i18n.use_page_language()  # a callback runs before app.py sets the language
    name = st.session_state.get("login_admin_name") or ""
    pw = st.session_state.get("login_password") or ""
    try:
        admin = sign_in_admin(name, pw, client=_ui.client_id(), engine=_ui.engine())
    except ThrottledError as exc:
        _refuse("admin", t("Sign-in paused: {reason}.", reason=exc))
    except STORE_ERRORS:
        _refuse("admin", t(STORE_DOWN), ":material/hourglass_empty:")
    else:
        if admin is not None:
            _ui.sign_in_admin(admin)
        else:
            _refuse("admin", t("Wrong admin name or password."))


#: The wait (ms) after the chart code is fetched before it runs, on the open admin form: short,
#: so the run (0.3-1.2 s of the browser's main thread on a busy machine) is over before the
#: admin's Enter, but after the form's own paint.
ADMIN_FORM_PRELOAD_MS = 250


def _admin_sign_in() -> None:
    """The admin name and password form (checked by :func:`_check_admin`)."""

    def fields() -> None:
        st.text_input(t("Admin name"), value="admin", key="login_admin_name")
        st.text_input(t("Admin password"), type="password", key="login_password")

    _submit_first("login_admin", t("Sign in as admin"), _check_admin, fields)
    _show_refusal("admin")


def landing() -> None:
    st.title(t(APP_NAME))
    st.markdown(
        t(
            "Doctors rate how similar or related two medical terms are, one pair at a time "
            "and one key press per pair; study admins set up studies, follow agreement and "
            "export the verified data."
        )
    )
    st.markdown(
        t(
            "**Annotators:** type the access code you were given and press *Sign in*. Your "
            "progress is saved with every key press; sign in again any time to continue."
        )
    )
    if notice := st.session_state.pop(_ui.NOTICE, None):
        st.warning(notice, icon=":material/lock:")
    _annotator_sign_in()
    if sso_configured():
        st.button(
            t("Sign in with SSO"),
            key="login_sso",
            on_click=_sso_sign_in,
            help=t(
                "Your organisation's sign-in (study admins, and annotators of studies that "
                "allow it)."
            ),
        )
    # A toggle, not an expander: an expander opens in the browser alone, and a click on it
    # during the page's first script run was seen to leave it drawn open with its fields
    # missing. The toggle's value is kept by the server, and the next run draws the form.
    if st.toggle(t("Study admin"), key="login_admin_open"):
        _admin_password_notice()
        _admin_sign_in()
        # The admin pages' element code runs in this browser while the admin types, and one
        # metric is drawn hidden (last on the page: moves nothing); see pages/components/preload.
        preload_chart_code(
            "medsim_preload_signin", in_sidebar=False, run_after_ms=ADMIN_FORM_PRELOAD_MS
        )


def refused(outcome: SsoOutcome):
    def page() -> None:
        st.title(t(APP_NAME))
        if outcome.identity:
            text = t(
                "You are signed in as {who}, but this account is not a study admin and is not "
                "linked to an annotator of a study that allows SSO sign-in. Ask the study "
                "admin to add you, or sign out to use an access code.",
                who=_ui.plain_markdown(outcome.identity),
            )
        else:
            text = t(
                "You are signed in as an unknown user, but this account is not a study admin "
                "and is not linked to an annotator of a study that allows SSO sign-in. Ask "
                "the study admin to add you, or sign out to use an access code."
            )
        st.error(text, icon=":material/lock:")
        st.button(t("Sign out"), key="sso_refused_signout", on_click=_sso_sign_out)

    return page


def choose_study(outcome: SsoOutcome):
    def page() -> None:
        st.title(t(APP_NAME))
        st.write(t("You take part in several studies. Which one do you want to annotate?"))
        labels = {a.annotator_id: _ui.plain_markdown(a.study_name) for a in outcome.annotators}
        pick = st.radio(t("Study"), list(labels), format_func=labels.get, key="sso_pick")
        if st.button(t("Continue"), type="primary", key="sso_pick_go"):
            st.session_state[SSO_CHOICE] = pick
            st.rerun()
        st.button(t("Sign out"), key="sso_choose_signout", on_click=_sso_sign_out)

    return page


def sso_misconfigured(problem: str):
    def page() -> None:
        st.title(t(APP_NAME))
        st.error(problem, icon=":material/lock:")

    return page


def _admin_still_valid() -> None:
    """End a password session whose admin was removed or given a new password since."""
    if _ui.role() != "admin" or st.session_state.get(SSO):
        return  # SSO sessions are mapped again on every run
    try:
        valid = admin_session_valid(_ui.current_admin(), engine=_ui.engine())
    except STORE_ERRORS:
        _ui.end_session(t(_ui.ADMIN_UNCHECKED))
        return
    if not valid:
        _ui.end_session(t(_ui.ADMIN_ENDED))


sso_problem = cookie_secret_problem(_secrets("auth"))
outcome = None if sso_problem else _sso_session()
if not sso_problem:
    _admin_still_valid()
role = None if sso_problem else _ui.role()
if sso_problem:
    # Nothing else is served: a session signed in any way would outlive the fix unchecked,
    # and a forged identity cookie must not reach the role mapping.
    st.session_state.clear()
    pages = [st.Page(sso_misconfigured(sso_problem), title=t("Sign in"), default=True)]
elif role in ROLES:
    # The role's pages, from the one page registry; the first is where the role lands.
    pages = [
        st.Page(p.path, title=p.label, icon=p.icon, default=i == 0)
        for i, p in enumerate(pages_for(role))
    ]
elif outcome is not None and outcome.role == "refused":
    pages = [st.Page(refused(outcome), title=t("Sign in"), icon=":material/login:", default=True)]
elif outcome is not None and outcome.role == "annotator":
    pages = [
        st.Page(
            choose_study(outcome),
            title=t("Choose a study"),
            icon=":material/login:",
            default=True,
        )
    ]
else:
    pages = [st.Page(landing, title=t("Sign in"), icon=":material/login:", default=True)]

nav = st.navigation(pages, position="sidebar" if role == "admin" else "hidden")
if role:
    with st.sidebar:
        ident = st.session_state.get(_ui.IDENTITY)
        admin = _ui.current_admin()
        if role in ("annotator", "adjudicator") and ident:
            signed_in = t("Signed in as {name}", name=_ui.plain_markdown(ident.name))
        elif admin:
            signed_in = t("Signed in as study admin {name}", name=_ui.plain_markdown(admin.name))
        else:
            signed_in = t("Signed in as study admin")
        st.caption(signed_in)
        _languages.language_selector(admin or ident, _ui.engine())  # the person's language
        sso = bool(st.session_state.get(SSO))
        if role == "annotator":
            # Through the widget: it saves or asks, then clears what it kept in the browser.
            st.button(t("Sign out"), key="signout", on_click=_ui.ask_sign_out, kwargs={"sso": sso})
        else:
            st.button(t("Sign out"), key="signout", on_click=_sso_sign_out if sso else _ui.sign_out)
nav.run()
