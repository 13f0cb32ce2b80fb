"""Annotate: the annotation widget (annotators only).

The widget (``pages/components/annotator``) holds a window of this annotator's queue in the
browser and draws the next pair in the same frame as the key press; its ratings come back as
an ordered list of unacknowledged entries, which this page hands to
:func:`medsim_annot.services.rating_queue.commit_pending` and acknowledges. Only what a
:class:`~medsim_annot.services.annotation.PairView` exposes reaches the browser (see
:func:`~medsim_annot.services.rating_queue.widget_pair`).

Store errors never end the page: the widget keeps the ratings ("not saved — will retry") and
resends them with backoff until the store answers again.
"""

from __future__ import annotations

import streamlit as st

from data_schemas.limits import COMMENT_MAX_CHARS, MIN_VIEW_MS
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.services import rating_queue as RQ
from pages import _ui
from pages.components.annotator import annotator

KEY = "annotate_widget"
ACKED = "annotate_acked"
LOG = "annotate_log"
LAST = "annotate_last"
ENDED = "annotate_ended"
EPOCH = "annotate_epoch"
QEND = "annotate_queue_end"
#: Pairs from the doctor's position on sent per refill, in serving order (plus BEHIND served
#: before it, for Back); the widget asks for more when it holds fewer than 20 ahead, and for
#: WINDOW more behind when Back reaches the start of what it holds.
WINDOW = 40
BEHIND = 2
#: How often the "waiting for other doctors" screen asks whether a tiebreak pair arrived.
WAIT_POLL_MS = 4000

ident = _ui.require_annotator()
eng = _ui.engine()
credential = getattr(ident, "credential_version", None)
ss = st.session_state


def _outbox() -> dict:
    state = ss.get(KEY)
    box = state.get("outbox") if isinstance(state, dict) else getattr(state, "outbox", None)
    return box if isinstance(box, dict) else {}


def _ended_message(exc: Exception) -> str:
    return (
        "Your access code was replaced or revoked, so this session has stopped. "
        f"Sign in again with your current code, or ask the study admin. ({exc})"
    )


outbox = _outbox()
if outbox and outbox.get("epoch") != ss.get(EPOCH):
    # Sequence numbers count within the browser tab's epoch: a new epoch starts afresh.
    ss[EPOCH], ss[ACKED], ss[LOG] = outbox.get("epoch"), 0, {}
acked = int(ss.get(ACKED, 0))
log: dict[int, int] = ss.setdefault(LOG, {})
refused_bad: list[dict] = []
entries: list[RQ.PendingRating] = []
for raw in outbox.get("pending") or []:
    try:
        entries.append(RQ.PendingRating.parse(raw))
    except UsageProblem as exc:
        seq = raw.get("seq") if isinstance(raw, dict) else None
        if isinstance(seq, int):
            refused_bad.append({"seq": seq, "position": -1, "message": str(exc), "current": None})

outcome = RQ.CommitOutcome(ack=acked)
if ss.get(ENDED) is None and entries:
    outcome = RQ.commit_pending(
        ident.annotator_id, entries, acked=acked, log=log, credential=credential, engine=eng
    )
    ss[ACKED] = outcome.ack
    if outcome.ended:
        ss[ENDED] = _ended_message(SessionEnded(outcome.ended))

# need: the position from which the browser needs pairs (with back: the pairs served before
# it); -1 (or no message yet): where to resume (the first unrated slot); None: its window
# suffices, only acknowledge. at: the position on the doctor's screen.
need = outbox.get("need", -1) if outbox else -1
back = bool(outbox.get("back")) if outbox else False
at = outbox.get("at") if outbox else None
resume = isinstance(need, int) and need < 0
data_extra: dict = {"resume": bool(outbox) and resume}
window = None
unavailable = outcome.unavailable
if ss.get(ENDED) is None:
    try:
        after = WINDOW
        if not resume and ss.get(QEND) is not None:
            # A slot added to this queue (a 2 + 1 tiebreak) may be served among the pairs the
            # browser holds: send the stretch from the doctor's pair again, in serving order
            # (long enough to reach what it holds; a refill it asked for comes next time).
            if RQ.queue_end(ident.annotator_id, engine=eng) != ss[QEND]:
                if isinstance(at, int) and not isinstance(at, bool) and at >= 0:
                    need, back, after = at, False, 2 * WINDOW
                else:
                    resume = True
                    data_extra["resume"] = True
        if resume:
            state = RQ.resume_state(ident.annotator_id, credential=credential, engine=eng)
            data_extra.update(
                start=state.first_unrated, complete=state.complete, waiting=state.waiting
            )
            if state.total:
                window = RQ.read_window(
                    ident.annotator_id,
                    state.first_unrated,
                    before=BEHIND if state.first_unrated is not None else WINDOW,
                    after=WINDOW,
                    credential=credential,
                    engine=eng,
                )
        elif isinstance(need, int):
            window = RQ.read_window(
                ident.annotator_id,
                need,
                before=WINDOW if back else BEHIND,
                after=1 if back else after,
                credential=credential,
                engine=eng,
            )
    except SessionEnded as exc:
        ss[ENDED] = _ended_message(exc)
    except UsageProblem as exc:
        st.error(_ui.plain_markdown(str(exc)))
        st.stop()
    except RQ.STORE_ERRORS:
        unavailable = True

views = window.pairs if window is not None else []
if window is not None and views:
    pairs, info = RQ.widget_window(window)
    ss[QEND] = window.queue_mark
    ss[LAST] = {
        "who": RQ.session_key(ident.annotator_id, ident.study_id),
        "scale": RQ.widget_scale(views[0]),
        "guideline": views[0].guideline,
        "total": views[0].total,
        "done": views[0].done,
        "window": pairs,
        "window_info": info,
    }
last = ss.get(LAST)

st.markdown(f"#### Hello, {_ui.plain_markdown(ident.name)}")
if last is None:
    if ss.get(ENDED):
        st.error(ss[ENDED], icon=":material/lock:")
    else:
        st.warning(
            "The rating store cannot be reached right now, so your pairs cannot be loaded. "
            "Nothing is lost; try again in a moment.",
            icon=":material/hourglass_empty:",
        )
        st.button("Try again", key="annotate_retry", type="primary")
    st.stop()

with st.popover("Guidelines and scale", key="annotate_guidelines"):
    st.markdown(last["guideline"])
    st.markdown(
        "\n".join(
            f"- **{o['label']}** (key `{o['key']}`): {o['description']}"
            for o in last["scale"]["options"]
        )
    )
    if last["scale"]["unclear_flag"]:
        st.markdown("- Key `u`: flag that a term's meaning is unclear to you.")
    st.markdown(
        "Key `Backspace`: back to the previous pair. A key pressed within "
        f"{MIN_VIEW_MS} ms of a pair appearing is ignored (and says so)."
    )

data = {
    "who": last["who"],
    "scale": last["scale"],
    "min_view_ms": MIN_VIEW_MS,
    "comment_max": COMMENT_MAX_CHARS,
    "total": last["total"],
    "done": last["done"] if not views else views[0].done,
    "window": last["window"] if views else [],
    "window_info": last["window_info"] if views else {},
    "wait_poll_ms": WAIT_POLL_MS,
    "start": None,
    "complete": False,
    **data_extra,
    "reply_to": outbox.get("sent", 0),
    "ack": outcome.ack,
    "versions": {str(k): v for k, v in outcome.versions.items()},
    "refused": outcome.refused + refused_bad,
    "unavailable": unavailable,
    "ended": ss.get(ENDED),
}
annotator(data=data, key=KEY, on_outbox_change=lambda: None)
