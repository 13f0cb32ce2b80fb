"""Baseline for ``benchmarks/bench_annotation_browser.py``: the Annotate page as it was
before the annotation widget — every key press is a Streamlit button shortcut and
a full rerun that saves, then renders the next pair. Kept here, not in pages/, only to be
measured next to the widget in the same run. The old page's straight-lining reminder (one
more query per key press) is left out, as the widget has none: the baseline does no more work
than the widget's server side, so the comparison does not flatter the widget.

Annotate: one pair at a time, one key press per rating (annotators only).

Only a :class:`~medsim_annot.services.annotation.PairView` is rendered: the two terms, the
scale and guideline, the annotator's own current rating and progress. Nothing else about a
pair reaches the browser.
"""

from __future__ import annotations

import html
import time

import streamlit as st

from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from pages import _ui

POS = "annotate_position"
SHOWN = "annotate_shown_at"

ident = _ui.require_annotator()
eng = _ui.engine()

st.markdown(
    """
<style>
.medsim-terms {display:flex; gap:1.2rem; align-items:stretch; margin:0.6rem 0 1rem 0;}
.medsim-term {flex:1; font-size:2rem; font-weight:600; line-height:1.25; padding:1.1rem 1rem;
  border:1px solid rgba(128,128,128,.35); border-radius:0.6rem; text-align:center;
  overflow-wrap:anywhere;}
.medsim-vs {align-self:center; opacity:.55; font-size:1.1rem;}
</style>""",
    unsafe_allow_html=True,
)


def _state_key(name: str, pos: int) -> str:
    return f"annotate_{name}_{pos}"


def _rate(pos: int, value, saved_unclear: bool = False) -> None:
    """Button callback: save first (committed), then move on.

    A press that arrives from the buttons of a pair the page has already left (a fast second
    key press while the next pair is being drawn) is dropped: it must neither change the
    previous answer nor rate a pair that was not on screen.
    """
    if pos != st.session_state.get(POS):
        return
    shown = st.session_state.get(SHOWN)
    elapsed = int((time.monotonic() - shown[1]) * 1000) if shown and shown[0] == pos else None
    unclear = bool(st.session_state.get(_state_key("unclear", pos), saved_unclear))
    comment = st.session_state.get(_state_key("comment", pos), "") or ""
    try:
        res = A.submit_rating(
            ident.annotator_id,
            pos,
            value,
            unclear=unclear,
            comment=comment,
            elapsed_ms=elapsed,
            engine=eng,
        )
    except UsageProblem as exc:
        st.session_state["annotate_error"] = str(exc)
        return
    st.session_state[POS] = res.next_position
    st.session_state[SHOWN] = None


def _back(pos: int | None) -> None:
    if pos != st.session_state.get(POS):
        return
    if pos is None:
        state = A.queue_state(ident.annotator_id, engine=eng)
        st.session_state[POS] = max(0, state.total - 1)
    elif pos > 0:
        st.session_state[POS] = pos - 1
    st.session_state[SHOWN] = None


def _toggle_unclear(pos: int, current: bool) -> None:
    key = _state_key("unclear", pos)
    st.session_state[key] = not st.session_state.get(key, current)


if POS not in st.session_state:
    st.session_state[POS] = A.queue_state(ident.annotator_id, engine=eng).first_unrated
pos = st.session_state[POS]

st.markdown(f"#### Hello, {html.escape(ident.name)}")
if err := st.session_state.pop("annotate_error", None):
    st.error(err)

if pos is None:
    state = A.queue_state(ident.annotator_id, engine=eng)
    st.progress(1.0 if state.total else 0.0, text=f"{state.done} / {state.total}")
    if state.complete:
        st.success(
            "Your queue is complete — thank you! Every rating is saved. You can close this tab.",
            icon="🎉",
        )
        with st.container(key="annotate_complete"):
            st.button(
                "← Back to the last pair",
                key="annotate_back_end",
                shortcut="Backspace",
                on_click=_back,
                args=(None,),
            )
        st.stop()
    st.session_state[POS] = pos = state.first_unrated

try:
    view = A.get_pair(ident.annotator_id, pos, engine=eng)
except UsageProblem as exc:
    st.error(str(exc))
    st.stop()

# Time on the pair: from its first render after arriving at it to the key press.
if (st.session_state.get(SHOWN) or (None,))[0] != pos:
    st.session_state[SHOWN] = (pos, time.monotonic())
scale = view.scale

with st.container(key="annotate_progress"):
    st.progress(
        view.done / view.total if view.total else 0.0,
        text=f"{view.done} / {view.total} rated · pair {pos + 1} of {view.total}",
    )

st.markdown(
    f'<div class="medsim-terms" data-testid="medsim-pair" data-position="{pos}">'
    f'<div class="medsim-term" data-testid="medsim-term-1">{html.escape(view.term_1)}</div>'
    f'<div class="medsim-vs">vs</div>'
    f'<div class="medsim-term" data-testid="medsim-term-2">{html.escape(view.term_2)}</div>'
    f"</div>",
    unsafe_allow_html=True,
)

with st.container(key="annotate_options", horizontal=True):
    for opt in scale.options:
        current = view.rated and scale._same(view.rating, opt.value)
        st.button(
            f"{opt.label}",
            key=f"annotate_opt_{pos}_{opt.key}",
            shortcut=opt.key,
            type="primary" if current else "secondary",
            help=opt.description or None,
            on_click=_rate,
            args=(pos, opt.value, view.unclear),
        )

cols = st.columns([1, 1, 2])
with cols[0]:
    st.button(
        "← Back",
        key=f"annotate_back_{pos}",
        shortcut="Backspace",
        disabled=pos == 0,
        on_click=_back,
        args=(pos,),
    )
with cols[1]:
    if scale.unclear_flag:
        unclear_now = st.session_state.get(_state_key("unclear", pos), view.unclear)
        st.button(
            "Unclear meaning ✓" if unclear_now else "Unclear meaning",
            key=f"annotate_unclear_btn_{pos}",
            shortcut="U",
            type="primary" if unclear_now else "secondary",
            on_click=_toggle_unclear,
            args=(pos, view.unclear),
        )
with cols[2], st.popover("Guidelines and scale", width="stretch", key="annotate_guidelines"):
    st.markdown(view.guideline)
    st.markdown(
        "\n".join(f"- **{o.label}** (key `{o.key}`): {o.description}" for o in scale.options)
    )
    if scale.unclear_flag:
        st.markdown("- Key `u`: flag that a term's meaning is unclear to you.")
    st.markdown("Key `Backspace`: back to the previous pair.")

st.text_input(
    "Comment (optional) — press Tab to leave the field, then the rating key",
    key=_state_key("comment", pos),
    value=view.comment,
)

if view.rated:
    st.caption(
        f"Saved: {scale.option(view.rating).label}"
        + (" · unclear meaning" if view.unclear else "")
        + ". Press a key to change it."
    )
# Rendered last: when the browser shows this marker for a position, every element of that
# pair (terms, buttons with their shortcuts) has arrived. Browser tests wait for it.
st.markdown(
    f'<div data-testid="medsim-ready" data-position="{pos}" style="display:none"></div>',
    unsafe_allow_html=True,
)
