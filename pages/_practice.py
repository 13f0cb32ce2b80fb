"""The dashboard's practice section (admin only): every doctor's practice round (state,
round, answers, agreement with the reference answers) and the admin's two actions, unlock
by name and send back to practice (recalibration). Thin: widgets →
``services.practice`` → render. Practice answers appear here and in ``medsim study
practice-report`` only."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import fmt_int, fmt_percent, t
from medsim_annot.services.practice import gate as gate_svc
from medsim_annot.services.practice.report import practice_report
from medsim_annot.services.study_handle import Study
from pages import _qa, _ui

KEY = "dashboard_practice_"


def _by() -> str:
    admin = _ui.current_admin()
    return admin.actor if admin else "admin"


def has_practice(study: Study) -> bool:
    """Whether *study* has practice pairs (so a doctor can be sent back to practice)."""
    return practice_report(study).pairs > 0


def send_back(study: Study, who: str, why: str) -> None:
    """Send *who* back to practice (the drift alert's action and this section's)."""
    _act(lambda: gate_svc.send_back_to_practice(study, who, by=_by(), reason=why))


def panel(study: Study) -> None:
    rep = practice_report(study)
    if rep.pairs == 0:
        return
    st.header(t("Practice round"))
    values = {
        "pairs": fmt_int(rep.pairs),
        "needed": fmt_int(rep.needed),
        "threshold": fmt_percent(rep.threshold),
    }
    if rep.within_one_reported:
        caption = t(
            "{pairs} practice pairs are served before the real queue, each followed by its "
            "reference answer and explanation. The real pairs open once the last {needed} "
            "practice answers agree exactly with the reference answers at {threshold} or "
            "more (agreement within one step is shown too), or when an admin unlocks the "
            "doctor. Practice answers never count as ratings.",
            **values,
        )
    else:
        caption = t(
            "{pairs} practice pairs are served before the real queue, each followed by its "
            "reference answer and explanation. The real pairs open once the last {needed} "
            "practice answers agree exactly with the reference answers at {threshold} or "
            "more, or when an admin unlocks the doctor. Practice answers never count as "
            "ratings.",
            **values,
        )
    st.caption(caption)
    frame = pd.DataFrame([a.to_dict() for a in rep.annotators])
    # Headers translated for display only: the CSV keeps the column names.
    headers = {
        "annotator": t("Doctor"),
        "state": t("State"),
        "round": t("Round"),
        "answered": t("Answered in this round"),
        "answered_all_rounds": t("Answered in all rounds"),
        "needed": t("Answers the gate looks at"),
        "exact": t("Exact agreement"),
        "within_one": t("Within one step"),
        "real_queue_open": t("Real pairs open"),
    }
    _qa.table(
        frame,
        "practice",
        KEY + "dl",
        column_config={c: {"label": label} for c, label in headers.items() if c in frame},
    )
    names = [a.annotator for a in rep.annotators]
    if not names:
        return
    cols = st.columns(2)
    with cols[0].form(KEY + "unlock_form"):
        who = st.selectbox(t("Doctor"), names, key=KEY + "unlock_who")
        why = st.text_input(t("Reason (optional)"), key=KEY + "unlock_why")
        if st.form_submit_button(t("Unlock the real pairs")):
            _act(lambda: gate_svc.unlock(study, who, by=_by(), reason=why))
    with cols[1].form(KEY + "back_form"):
        who = st.selectbox(t("Doctor"), names, key=KEY + "back_who")
        why = st.text_input(t("Reason"), key=KEY + "back_why")
        if st.form_submit_button(t("Send back to practice")):
            send_back(study, who, why)


@_ui.requires("admin")
def _act(action) -> None:
    try:
        action()
    except UsageProblem as exc:
        st.error(_ui.plain_markdown(str(exc)))
        return
    st.success(t("Done: recorded in the activity log."))
