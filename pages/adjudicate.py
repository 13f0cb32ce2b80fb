"""Adjudicate: the queue of pairs the raters could not settle (adjudicators only).

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
from medsim_annot.errors import UsageProblem
from medsim_annot.services.adjudication import board as board_svc
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.adjudication import rater_names
from medsim_annot.services.people.adjudicators import AdjudicatorIdentity
from medsim_annot.services.stored_predictions import adjudicator_score
from medsim_annot.services.study_handle import open_study
from pages import _ui
from pages.components.adjudicator import adjudicator, read_state

KEY = "adjudicate_widget"
INDEX = "adjudicate_index"
DONE = "adjudicate_done"  # counters of the decision / nav states already handled
STATUS = "adjudicate_status"


@_ui.requires("adjudicator", page=True)
def adjudicate_ui() -> None:
    ss = st.session_state
    ident: AdjudicatorIdentity = ss[_ui.IDENTITY]  # checked by the role guard above
    eng = _ui.engine()

    st.title("Adjudicate")
    st.caption(
        f"Study {_ui.plain_markdown(ident.study_name)} · adjudicator "
        f"{_ui.plain_markdown(ident.name)}. Your decisions set the final label "
        "of a pair; the raters' agreement figures stay computed on their own answers."
    )
    c1, c2, c3 = st.columns([3, 2, 1])
    needs = c1.multiselect(
        "Reasons to show",
        list(ADJUDICATION_NEEDS),
        default=[],
        key="adj_needs",
        help=ADJUDICATION_NEEDS.describe(),
    )
    study = open_study(ident.study_name, engine=eng)  # resolved once for this run
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
            ss[STATUS] = f"Saved {d.pair_id}: {d.label} ({d.reason}), version {d.version}."
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
    st.caption(
        f"{progress.needed} pairs need a decision · {progress.decided} decided · "
        f"{progress.flagged} flagged for the guideline"
    )
    model_line = adjudicator_score(study, pair["pair_id"]) if pair else None
    if model_line:  # only when the admin lets adjudicators see the model's score
        st.caption(model_line)
    # What the browser gets, checked against the widget's contract before it is sent.
    data = AdjudicatorData.model_validate(
        {
            "pair": pair,
            "reasons": [
                {"value": r, "key": decisions_svc.REASON_KEYS[r], "label": r.replace("_", " ")}
                for r in ADJUDICATION_REASONS
            ],
            "position": index + 1,
            "total": len(queue),
            "status": ss.get(STATUS, ""),
            "fresh": fresh,
        }
    )
    adjudicator(data=data, key=KEY)


adjudicate_ui()
