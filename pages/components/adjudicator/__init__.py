"""The adjudication widget: a Streamlit Components-v2 component (inline HTML, CSS and vanilla
JS from the files beside this module), keyboard-first like the annotation widget.

``adjudicator(data=..., key=...)`` mounts it and returns its state; :func:`read_state` reads
that state through the widget's contract, :mod:`data_schemas.adjudicator_widget` (the data
it is mounted with, :class:`~data_schemas.adjudicator_widget.AdjudicatorData`, and the
events it sends back: ``decision`` and ``nav``, each with a counter). See ``adjudicator.js``
for the keys. It is mounted only on the Adjudicate page, which only adjudicators reach:
annotators' browsers never receive it or its data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import streamlit as st
from pydantic import ValidationError

from data_schemas.adjudicator_widget import (
    STATE_NAMES,
    AdjudicatorData,
    AdjudicatorState,
    problem_text,
)

HERE = Path(__file__).resolve().parent

_mount = st.components.v2.component(
    "medsim_adjudicator",
    html=(HERE / "adjudicator.html").read_text(encoding="utf-8"),
    css=(HERE / "adjudicator.css").read_text(encoding="utf-8"),
    js=(HERE / "adjudicator.js").read_text(encoding="utf-8"),
)


def adjudicator(*, data: AdjudicatorData, key: str):
    """Mount the widget with *data* (checked by its contract when it was built); returns its
    state (``decision``, ``nav``)."""
    return _mount(
        key=key,
        data=data.model_dump(mode="json"),
        default=dict.fromkeys(STATE_NAMES),
        on_decision_change=lambda: None,
        on_nav_change=lambda: None,
    )


def read_state(state: object) -> tuple[AdjudicatorState, str | None]:
    """The widget's state (as kept in the session: a mapping or an object with the event
    names as attributes; ``None`` before the first mount) read through its contract. An
    event that breaks the contract is left out; the second item then says why (``None``
    when every event is valid)."""
    valid: dict[str, object] = {}
    problem = None
    for name in STATE_NAMES:
        raw = state.get(name) if isinstance(state, Mapping) else getattr(state, name, None)
        if raw is None:
            continue
        try:
            AdjudicatorState.model_validate({name: raw})
        except ValidationError as exc:
            problem = problem or f"the widget's message broke its contract ({problem_text(exc)})"
        else:
            valid[name] = raw
    return AdjudicatorState.model_validate(valid), problem
