"""Activity (admin only): the event log, newest first — which admin (or command-line user)
created, changed, exported or revoked what, and when. Text only: nothing in it is rendered as
markdown."""

from __future__ import annotations

import streamlit as st

from medsim_annot.i18n import t
from medsim_annot.services import activity as activity_svc
from medsim_annot.services.dashboard import labels
from medsim_annot.services.study_handle import open_study
from pages import _qa, _ui


@_ui.requires("admin", page=True)
def activity_ui() -> None:
    st.title(t("Activity"))
    st.caption(
        t(
            "Who did what: study created or imported, annotators added, renamed, linked to "
            "SSO, codes issued or revoked, exports, admins added or removed. Failed sign-ins "
            "are in the server log (see docs/sso.md)."
        )
    )
    names = _qa.study_names()
    left, right = st.columns([2, 1])
    everything = t("(all studies and admin changes)")
    study = left.selectbox(t("Study"), [everything, *names], key="activity_study")
    limit = right.number_input(t("Newest"), min_value=10, max_value=5000, value=200, step=50)
    frame = activity_svc.activity(
        study=open_study(study, engine=_qa.engine()) if study in names else None,
        limit=int(limit),
        engine=_qa.engine(),
    )
    actors = sorted(a for a in frame["actor"].unique() if a)
    who = st.multiselect(
        t("Actor"),
        actors,
        placeholder=t("Choose actors") if actors else t("No actor recorded yet"),
        key="activity_actor",
    )
    if who:
        frame = frame[frame["actor"].isin(who)]
    if frame.empty:
        st.info(t("Nothing recorded yet."))
    else:
        frame = frame.assign(detail=frame["detail"].map(activity_svc.readable_detail))
        _qa.table(
            frame.assign(action=frame["action"].map(labels.action)),
            "activity",
            "activity_download",
            csv=frame,
            column_config={
                "at": st.column_config.DatetimeColumn(t("at (UTC)"), format="YYYY-MM-DD HH:mm:ss"),
                "actor": st.column_config.TextColumn(t("actor"), width="medium"),
                "detail": st.column_config.TextColumn(t("detail"), width="large"),
            },
        )


activity_ui()
