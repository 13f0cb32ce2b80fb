"""Annotate: the annotation widget (annotators only).

The page mounts the widget (``pages/components/annotator``) once with its boot data
(:class:`data_schemas.widget.WidgetBoot`): the scale, the queue's length, and a short-lived
bearer token for the ratings endpoint, minted here for this annotator and credential
version. From then on the widget sends its ratings to the endpoint and gets its pairs from
it (see :mod:`medsim_annot.ratings_api`): no rerun of this page per key press. The page
runs again only when the widget asks for a new token (the old one expired or ended), and at
sign-out: the sidebar's Sign out hands over to the widget, which sends the pending ratings (or
asks the doctor), deletes everything it kept in the browser, and then reports ``signed_out``;
only then does the session end. The tokens this page mints share one page session id, which
the widget stamps on every rating it keeps (docs/security.md).

Store errors never end the page: the widget keeps the ratings ("not saved — will retry")
and resends them with backoff until the store answers again.
"""

from __future__ import annotations

import streamlit as st

from data_schemas.limits import MIN_VIEW_MS
from medsim_annot import i18n
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.i18n import fmt_int, t
from medsim_annot.services import rating_queue as RQ
from medsim_annot.services.people.tokens import mint_token, new_session
from pages import _languages, _ui
from pages.components.annotator import annotator

KEY = "annotate_widget"
FIRST_VISIT = "annotate_first_visit"  # nothing was rated at this sign-in: show the guideline


def _signed_out() -> None:
    """The widget sent or discarded the pending ratings and cleared the browser: end the
    session (and single sign-on's, when signed in through it)."""
    asked = st.session_state.get(_ui.SIGN_OUT_ASKED)
    if not isinstance(asked, dict):
        return
    _ui.sign_out()
    if asked.get("sso"):
        st.logout()


def _stay_signed_in() -> None:
    st.session_state.pop(_ui.SIGN_OUT_ASKED, None)


def _sign_out_now() -> None:
    """Sign-out asked while the widget cannot be mounted: end the session at once (what the
    browser kept stays bound to this session and expires; docs/security.md)."""
    if st.session_state.get(_ui.SIGN_OUT_ASKED):
        _signed_out()
        st.rerun()


def annotate_ui() -> None:
    ident = _ui.require_annotator()
    eng = _ui.engine()
    credential = getattr(ident, "credential_version", None)
    ss = st.session_state

    st.markdown(t("#### Hello, {name}", name=_ui.plain_markdown(ident.name)))
    try:
        setup = RQ.widget_setup(ident.annotator_id, credential=credential, engine=eng)
        setup = _languages.widget_setup_in(setup, ident, eng)  # the study's own texts
        minted = ss.get(_ui.RATINGS_TOKEN)
        state = ss.get(KEY)
        wanted = state.get("token_wanted") if isinstance(state, dict) else None
        session = ss.get(_ui.RATINGS_SESSION) or new_session()
        ss[_ui.RATINGS_SESSION] = session
        if not isinstance(minted, dict) or wanted == minted.get("serial"):
            # No token yet, or the widget reports that the one it holds stopped working.
            serial = (minted or {}).get("serial", 0) + 1
            token = mint_token(
                ident.annotator_id, int(credential or 1), session=session, engine=eng
            )
            minted = ss[_ui.RATINGS_TOKEN] = {"token": token.token, "serial": serial}
        earlier = RQ.earlier_sessions(ident.annotator_id, session, engine=eng)
    except SessionEnded as exc:
        _sign_out_now()
        st.error(
            t(
                "Your access code was replaced or revoked, so this session has stopped. "
                "Sign in again with your current code, or ask the study admin. ({reason})",
                reason=_ui.plain_markdown(str(exc)),
            ),
            icon=":material/lock:",
        )
        st.stop()
    except UsageProblem as exc:
        _sign_out_now()
        st.error(_ui.plain_markdown(str(exc)))  # messages name the study
        st.stop()
    except RQ.STORE_ERRORS:
        _sign_out_now()
        st.warning(
            t(
                "The rating store cannot be reached right now, so your pairs cannot be "
                "loaded. Nothing is lost; try again in a moment."
            ),
            icon=":material/hourglass_empty:",
        )
        st.button(t("Try again"), key="annotate_retry", type="primary")
        st.stop()

    data = RQ.widget_boot(
        ident.annotator_id,
        ident.study_id,
        setup,
        token=minted["token"],
        token_serial=minted["serial"],
        session=session,
        earlier=earlier,
        sign_out=bool(ss.get(_ui.SIGN_OUT_ASKED)),
    )
    annotator(
        data=data,
        key=KEY,
        on_token_wanted_change=lambda: None,
        on_signed_out_change=_signed_out,
        on_sign_out_cancelled_change=_stay_signed_in,
    )
    # The guideline, inline below the widget (it never covers the pair, and on a phone the
    # pair and its buttons stay on the first screen): open at a first sign-in (nothing rated
    # yet), closed afterwards. The widget states the question above every pair and draws the
    # options with their keys, so they are not repeated here.
    first_visit = ss.setdefault(FIRST_VISIT, setup.done == 0)
    with st.expander(t("Guidelines and scale"), expanded=first_visit, key="annotate_guidelines"):
        if setup.guideline.strip():
            st.markdown(setup.guideline)
        else:  # a custom scale without a guideline: its options' descriptions are the guide
            st.markdown(
                "\n".join(
                    f"- **{o['label']}**: {o['description']}"
                    for o in setup.scale["options"]
                    if o["description"]
                )
            )
        if setup.scale["unclear_flag"]:
            st.markdown(
                t("- *Unclear meaning* (key `u`): flag that a term's meaning is unclear to you.")
            )
        st.markdown(
            t(
                "*{arrow} Back* (key `Backspace`) shows the previous pair. An answer given "
                "within {ms} ms of a pair appearing is ignored (and says so).",
                arrow="→" if i18n.direction(i18n.current_language()) == "rtl" else "←",
                ms=fmt_int(MIN_VIEW_MS),
            )
        )


annotate_ui()
