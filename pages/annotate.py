"""Annotate: the annotation widget (annotators only).

The page mounts the widget (``pages/components/annotator``) once with its boot data
(:class:`data_schemas.widget.WidgetBoot`): the scale, the queue's length, and a short-lived
bearer token for the ratings endpoint, minted here for this annotator and credential
version. From then on the widget sends its ratings to the endpoint and gets its pairs from
it (see :mod:`medsim_annot.ratings_api`): no rerun of this page per key press. The page
runs again only when the widget asks for a new token (the old one expired or ended).

Store errors never end the page: the widget keeps the ratings ("not saved — will retry")
and resends them with backoff until the store answers again.
"""

from __future__ import annotations

import streamlit as st

from data_schemas.limits import MIN_VIEW_MS
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.services import rating_queue as RQ
from medsim_annot.services.people.tokens import mint_token
from pages import _ui
from pages.components.annotator import annotator

KEY = "annotate_widget"


def annotate_ui() -> None:
    ident = _ui.require_annotator()
    eng = _ui.engine()
    credential = getattr(ident, "credential_version", None)
    ss = st.session_state

    st.markdown(f"#### Hello, {_ui.plain_markdown(ident.name)}")
    try:
        setup = RQ.widget_setup(ident.annotator_id, credential=credential, engine=eng)
        minted = ss.get(_ui.RATINGS_TOKEN)
        state = ss.get(KEY)
        wanted = state.get("token_wanted") if isinstance(state, dict) else None
        if not isinstance(minted, dict) or wanted == minted.get("serial"):
            # No token yet, or the widget reports that the one it holds stopped working.
            serial = (minted or {}).get("serial", 0) + 1
            token = mint_token(ident.annotator_id, int(credential or 1), engine=eng)
            minted = ss[_ui.RATINGS_TOKEN] = {"token": token.token, "serial": serial}
    except SessionEnded as exc:
        st.error(
            "Your access code was replaced or revoked, so this session has stopped. "
            "Sign in again with your current code, or ask the study admin. "
            f"({_ui.plain_markdown(str(exc))})",
            icon=":material/lock:",
        )
        st.stop()
    except UsageProblem as exc:
        st.error(_ui.plain_markdown(str(exc)))  # messages name the study
        st.stop()
    except RQ.STORE_ERRORS:
        st.warning(
            "The rating store cannot be reached right now, so your pairs cannot be loaded. "
            "Nothing is lost; try again in a moment.",
            icon=":material/hourglass_empty:",
        )
        st.button("Try again", key="annotate_retry", type="primary")
        st.stop()

    with st.popover("Guidelines and scale", key="annotate_guidelines"):
        st.markdown(setup.guideline)
        st.markdown(
            "\n".join(
                f"- **{o['label']}** (key `{o['key']}`): {o['description']}"
                for o in setup.scale["options"]
            )
        )
        if setup.scale["unclear_flag"]:
            st.markdown("- Key `u`: flag that a term's meaning is unclear to you.")
        st.markdown(
            "Key `Backspace`: back to the previous pair. A key pressed within "
            f"{MIN_VIEW_MS} ms of a pair appearing is ignored (and says so)."
        )

    data = RQ.widget_boot(
        ident.annotator_id,
        ident.study_id,
        setup,
        token=minted["token"],
        token_serial=minted["serial"],
    )
    annotator(data=data, key=KEY, on_token_wanted_change=lambda: None)


annotate_ui()
