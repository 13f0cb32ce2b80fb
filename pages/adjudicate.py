"""Adjudicate: the queue of pairs the raters could not settle (adjudicators, and study admins
from their own session: an admin picks the study and decides as themselves, through
:func:`~medsim_annot.services.people.adjudicators.admin_adjudicator`, with no second code).

The adjudication widget (``pages/components/adjudicator``) shows one pair with everything an
adjudicator may see (both terms, every rater's answer, unclear flag, comment and time, the
automatic label, the majority and the Dawid-Skene label) and is driven by the keyboard; a
decision goes to :func:`medsim_annot.services.adjudication.decisions.decide` with the version the
adjudicator saw, so a decision made meanwhile by someone else is shown, not overwritten.
"""

from __future__ import annotations

import streamlit as st

from data_schemas.adjudicator_widget import AdjudicatorData
from data_schemas.gold import ADJUDICATION_NEEDS, ADJUDICATION_REASONS
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.services.adjudication import board as board_svc
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.adjudication import rater_names
from medsim_annot.services.people.adjudicators import AdjudicatorIdentity, admin_adjudicator
from medsim_annot.services.people.admins import ENV_ADMIN, AdminIdentity
from medsim_annot.services.stored_predictions import adjudicator_score
from medsim_annot.services.study_handle import Study, open_study
from pages import _languages, _qa, _ui
from pages.components.adjudicator import adjudicator, read_state

KEY = "adjudicate_widget"
INDEX = "adjudicate_index"
DONE = "adjudicate_done"  # counters of the decision / nav states already handled
STATUS = "adjudicate_status"


def _need_name(need: str) -> str:
    """A need as the screen names it: its plain description ("every rating differs")."""
    text = ADJUDICATION_NEEDS.help.get(need, need.replace("_", " "))
    return text[:1].upper() + text[1:]


def value_labels(scale: Scale) -> dict[str, str]:
    """Each value of *scale* as shown ("same") -> the scale's own label ("Same")."""
    return {str(Scale.display(o.value)): o.label for o in scale.options}


def _who() -> tuple[AdjudicatorIdentity, Study] | None:
    """Who decides and in which study: the signed-in adjudicator and their study, or the
    signed-in admin (as themselves) in the study picked here."""
    if _ui.role() != "admin":
        ident: AdjudicatorIdentity = st.session_state[_ui.IDENTITY]  # checked by the guard
        return ident, open_study(ident.study_name, engine=_ui.engine())
    study = _qa.pick_study("adj_study")
    if study is None:
        return None
    # A session signed in before admins had names is the admin of MEDSIM_ADMIN_PASSWORD.
    admin = _ui.current_admin() or AdminIdentity(name=ENV_ADMIN, via="named")
    return admin_adjudicator(study, admin.name), study


@_ui.requires("adjudicate", page=True)
def adjudicate_ui() -> None:
    ss = st.session_state
    st.title("Adjudicate")
    who = _who()
    if who is None:
        return
    ident, study = who  # resolved once for this run
    if ss.get("adj_seen_study") != study.name:  # another study: start at its first pair
        ss["adj_seen_study"] = study.name
        ss[INDEX] = 0
        ss.pop(STATUS, None)
    st.caption(
        _ui.plain_markdown(f"Study {ident.study_name} · adjudicator {ident.name}.")
        + " Your decisions set the final label of a pair; the raters' agreement figures stay "
        "computed on their own answers."
    )
    c1, c2, c3 = st.columns([3, 2, 1])
    needs = c1.multiselect(
        "Reasons to show",
        list(ADJUDICATION_NEEDS),
        default=[],
        key="adj_needs",
        format_func=_need_name,
        placeholder="All reasons",
    )
    board = board_svc.board(study)
    group = c2.selectbox("Group", ["(all)", *board.groups], key="adj_group")
    include = c3.checkbox("Decided too", key="adj_decided")

    def _queue(b: board_svc.Board):
        return board_svc.filter_queue(
            b.queue, needs=needs, group=None if group == "(all)" else group, include_decided=include
        )

    queue = _queue(board)
    done = ss.setdefault(DONE, {"decision": None, "nav": None})
    index = int(ss.get(INDEX, 0))
    fresh = False

    # The widget's events, read through its contract (data_schemas/adjudicator_widget.py).
    events, problem = read_state(ss.get(KEY))
    if problem and problem != done.get("problem"):
        ss[STATUS] = f"Not saved: {problem}"
    done["problem"] = problem
    nav = events.nav
    if nav and nav.seq != done["nav"]:
        done["nav"] = nav.seq
        index += 1 if nav.to == "next" else -1
        fresh = True
    decision = events.decision
    if decision and decision.seq != done["decision"]:
        done["decision"] = decision.seq
        try:
            d = decisions_svc.decide(
                study,
                decision.pair_id,
                label=decision.label,
                reason=decision.reason,
                reason_text=decision.reason_text,
                flag_guideline=decision.flag_guideline,
                adjudicator=ident.name,
                seen_version=decision.version,
            )
        except decisions_svc.StaleDecision as exc:
            cur = exc.current or {}
            ss[STATUS] = (
                f"Not saved: {exc} ({cur.get('label')}, {cur.get('reason')} by "
                f"{cur.get('adjudicator')}). Look again and save to change it."
            )
        except UsageProblem as exc:
            ss[STATUS] = f"Not saved: {exc}"
        else:
            shown = value_labels(_languages.scale_in(study)).get(d.label, d.label)
            ss[STATUS] = (
                f"Saved {d.pair_id}: {shown} ({d.reason.replace('_', ' ')}), version {d.version}."
            )
            if include:
                index += 1  # a decided pair stays in the list: go on to the next one
        board = board_svc.board(study)
        queue = _queue(board)
        fresh = True

    index = max(0, min(index, len(queue) - 1)) if len(queue) else 0
    ss[INDEX] = index
    pair = board.pair(str(queue.iloc[index]["pair_id"])) if len(queue) else None
    if pair is not None:
        # Rater A, B, C unless the study shows names (a study setting).
        pair = rater_names.as_shown(pair, rater_names.shown_names(study))
    progress = board_svc.progress(board)
    if progress.flagged:
        st.caption(f"{progress.flagged} flagged for a guideline update")
    model_line = adjudicator_score(study, pair["pair_id"]) if pair else None
    if model_line:  # only when the admin lets adjudicators see the model's score
        st.caption(model_line)
    # What the browser gets, checked against the widget's contract before it is sent.
    data = AdjudicatorData.model_validate(
        {
            "pair": pair,
            "reasons": [
                {
                    "value": r,
                    "key": decisions_svc.REASON_KEYS[r],
                    "label": r.replace("_", " ").capitalize(),
                }
                for r in ADJUDICATION_REASONS
            ],
            "position": index + 1,
            "total": len(queue),
            "status": ss.get(STATUS, ""),
            "fresh": fresh,
            "labels": value_labels(_languages.scale_in(study)),
            "need_labels": {n: _need_name(n) for n in ADJUDICATION_NEEDS},
            "decided": progress.decided,
            "needed": progress.needed,
        }
    )
    adjudicator(data=data, key=KEY)


adjudicate_ui()
