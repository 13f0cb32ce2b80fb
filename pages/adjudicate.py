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

from data_schemas.adjudicator_widget import AdjudicatorData, AdjudicatorTexts
from data_schemas.gold import ADJUDICATION_NEEDS, ADJUDICATION_REASONS
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, fmt_decimal, fmt_int, t, tn
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
ALL_GROUPS = "(all)"

#: The reasons as the screen names them (the values stay the stored ones).
REASON_NAMES = {
    "rater_error": N_("Rater error"),
    "ambiguous_term": N_("Ambiguous term"),
    "guideline_gap": N_("Guideline gap"),
    "auto_label_wrong": N_("Auto label wrong"),
    "other": N_("Other"),
}

#: The same, inside a sentence ("Saved p1: Same (guideline gap), version 1.").
REASON_WORDS = {
    "rater_error": N_("rater error"),
    "ambiguous_term": N_("ambiguous term"),
    "guideline_gap": N_("guideline gap"),
    "auto_label_wrong": N_("auto label wrong"),
    "other": N_("other"),
}


def reason_name(reason: str) -> str:
    """A reason as the screen names it ("Guideline gap")."""
    return t(REASON_NAMES[reason]) if reason in REASON_NAMES else reason.replace("_", " ")


def _need_name(need: str) -> str:
    """A need as the screen names it: its plain description ("every rating differs")."""
    text = t(ADJUDICATION_NEEDS.help[need]) if need in ADJUDICATION_NEEDS else need
    return text[:1].upper() + text[1:]


def _lines(pair: dict | None, position: int, total: int, labels: dict[str, str], progress):
    """The widget's lines about the pair on screen, in the person's language."""
    counter = t(
        "{decided} of {needed} decided",
        decided=fmt_int(progress.decided),
        needed=fmt_int(progress.needed),
    )
    if pair is None:
        return AdjudicatorTexts.translated(counter=counter)

    def show(v: object) -> str:
        return t("none") if v is None else labels.get(str(v), str(v))

    model = (
        t(
            "Dawid-Skene: {label} (posterior {posterior})",
            label=show(pair["model_label"]),
            posterior=fmt_decimal(pair["model_posterior"]),
        )
        if pair.get("model_label") is not None
        else t("Dawid-Skene: not computed")
    )
    facts = " · ".join(
        [
            t("majority: {label}", label=show(pair["majority"])),
            t("automatic label: {label}", label=show(pair["auto_label"])),
            model,
        ]
    )
    d = pair.get("decision")
    current = (
        t(
            "Current decision (version {version}): {label}, {reason} by {adjudicator}",
            version=fmt_int(pair["version"]),
            label=show(d["label"]),
            reason=reason_name(d["reason"]),
            adjudicator=d["adjudicator"],
        )
        if d
        else t("Not decided yet.")
    )
    needs = pair.get("needs") or []
    return AdjudicatorTexts.translated(
        head=t(
            "Pair {position} of {total} · {pair_id}",
            position=fmt_int(position),
            total=fmt_int(total),
            pair_id=pair["pair_id"],
        ),
        counter=counter,
        needs=t("Why: {needs}", needs="; ".join(map(_need_name, needs))) if needs else "",
        facts=facts,
        current=current,
    )


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
    st.title(t("Adjudicate"))
    who = _who()
    if who is None:
        return
    ident, study = who  # resolved once for this run
    if ss.get("adj_seen_study") != study.name:  # another study: start at its first pair
        ss["adj_seen_study"] = study.name
        ss[INDEX] = 0
        ss.pop(STATUS, None)
    st.caption(
        t(
            "Study {study} · adjudicator {name}.",
            study=_ui.plain_markdown(ident.study_name),
            name=_ui.plain_markdown(ident.name),
        )
        + " "
        + t(
            "Your decisions set the final label of a pair; the raters' agreement figures stay "
            "computed on their own answers."
        )
    )
    c1, c2, c3 = st.columns([3, 2, 1])
    needs = c1.multiselect(
        t("Reasons to show"),
        list(ADJUDICATION_NEEDS),
        default=[],
        key="adj_needs",
        format_func=_need_name,
        placeholder=t("All reasons"),
    )
    board = board_svc.board(study)
    group = c2.selectbox(
        t("Group"),
        [ALL_GROUPS, *board.groups],
        format_func=lambda g: t("(all)") if g == ALL_GROUPS else g,
        key="adj_group",
    )
    include = c3.checkbox(t("Decided too"), key="adj_decided")

    def _queue(b: board_svc.Board):
        return board_svc.filter_queue(
            b.queue,
            needs=needs,
            group=None if group == ALL_GROUPS else group,
            include_decided=include,
        )

    queue = _queue(board)
    done = ss.setdefault(DONE, {"decision": None, "nav": None})
    index = int(ss.get(INDEX, 0))
    fresh = False

    # The widget's events, read through its contract (data_schemas/adjudicator_widget.py).
    events, problem = read_state(ss.get(KEY))
    if problem and problem != done.get("problem"):
        ss[STATUS] = t("Not saved: {problem}", problem=problem)
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
            ss[STATUS] = t(
                "Not saved: {problem} ({label}, {reason} by {adjudicator}). Look again and "
                "save to change it.",
                problem=str(exc),
                label=value_labels(_languages.scale_in(study)).get(
                    str(cur.get("label")), str(cur.get("label"))
                ),
                reason=reason_name(str(cur.get("reason"))),
                adjudicator=cur.get("adjudicator"),
            )
        except UsageProblem as exc:
            ss[STATUS] = t("Not saved: {problem}", problem=str(exc))
        else:
            shown = value_labels(_languages.scale_in(study)).get(d.label, d.label)
            ss[STATUS] = t(
                "Saved {pair_id}: {label} ({reason}), version {version}.",
                pair_id=d.pair_id,
                label=shown,
                reason=t(REASON_WORDS[d.reason]) if d.reason in REASON_WORDS else d.reason,
                version=fmt_int(d.version),
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
        st.caption(
            tn(
                "{n} flagged for a guideline update",
                "{n} flagged for a guideline update",
                progress.flagged,
                n=fmt_int(progress.flagged),
            )
        )
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
                    "label": reason_name(r),
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
            "texts": _lines(
                pair, index + 1, len(queue), value_labels(_languages.scale_in(study)), progress
            ),
        }
    )
    adjudicator(data=data, key=KEY)


adjudicate_ui()
