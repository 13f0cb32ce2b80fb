"""The adjudication widget's messages: one contract for the Adjudicate page and the browser.

The page (``pages/adjudicate.py``) mounts the widget (``pages/components/adjudicator``) with
an :class:`AdjudicatorData`: the pair on screen (:class:`AdjudicationPair`, everything an
adjudicator may see of it), the reasons to choose from with their keys, where the pair is in
the filtered queue and the page's answer to the last save. The widget hands back an
:class:`AdjudicatorState`: its last :class:`DecisionEvent` (sent on Enter) and its last
:class:`NavEvent` (``n`` / ``p``), each with a ``seq`` the page uses to handle it once.

The JavaScript (``adjudicator.js``) names these fields exactly. What comes back is read
through :class:`AdjudicatorState` (strict: wrong types and unknown fields are refused); the
service (``services.adjudication.decide``) still checks the label against the study's scale
and that ``other`` has a text. This module imports nothing of the project but
:mod:`data_schemas.limits` and the reason and need names of :mod:`data_schemas.gold`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from ._text import N_, tr
from .gold import AdjudicationNeed, AdjudicationReason
from .limits import COMMENT_MAX_CHARS

#: Longest ``seq`` the widget sends (``"<milliseconds>-<counter>"``).
SEQ_MAX_CHARS = 64

#: A pair id or a label: non-empty (a pair id has no length cap of its own; the service
#: checks that the pair exists and the label is a decisive value of the scale).
_Text = Annotated[StrictStr, Field(min_length=1)]
_Seq = Annotated[StrictStr, Field(min_length=1, max_length=SEQ_MAX_CHARS)]
_Count = Annotated[StrictInt, Field(ge=0)]
#: Where the navigation goes: the next or the previous pair of the filtered queue.
NavTo = Literal["next", "prev"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ------------------------------------------------------------------ page -> widget
class RaterAnswer(_Strict):
    """One rater's current answer to the pair (``seconds``: how long it was on screen)."""

    annotator: str
    rating: str
    unclear: bool
    comment: str
    seconds: float | None
    slot: str = ""


class CurrentDecision(_Strict):
    """A stored decision as the widget is shown it (also each row of ``history``)."""

    label: str
    reason: AdjudicationReason
    reason_text: str
    flag_guideline: bool
    adjudicator: str
    version: int
    event_id: int
    decided_at: str


class AdjudicationPair(_Strict):
    """Everything an adjudicator sees of one pair (``Board.pair``); never sent to
    annotators. ``version``: the pair's decision version (0: undecided), sent back with a
    decision. ``options``: the decisive values of the scale, keys 1-9 in this order."""

    pair_id: str
    term_1: str
    term_2: str
    auto_label: int | None
    model_label: str | None
    model_posterior: float | None
    majority: str | None
    raters: list[RaterAnswer]
    needs: list[AdjudicationNeed]
    version: int
    decision: CurrentDecision | None
    history: list[CurrentDecision] = []
    options: list[str]


class ReasonChoice(_Strict):
    """A reason the adjudicator can pick, with the key that picks it."""

    value: AdjudicationReason
    key: Annotated[str, Field(min_length=1, max_length=1)]
    label: str


class AdjudicatorTexts(_Strict):
    """Every word the widget shows, in the person's language: the JavaScript writes no text
    of its own. The page builds it with :meth:`translated`: the fixed words (defaults here,
    in English) through the catalogue, and the lines about the pair on screen (``head``,
    ``counter``, ``needs``, ``facts``, ``current``) written by the page with their numbers
    formatted for the language."""

    head: str = ""
    counter: str = ""
    needs: str = ""
    facts: str = ""
    current: str = ""
    vs: str = N_("vs")
    col_rater: str = N_("rater")
    col_answer: str = N_("answer")
    col_unclear: str = N_("unclear")
    col_seconds: str = N_("seconds")
    col_comment: str = N_("comment")
    yes: str = N_("yes")
    options: str = N_("Final label")
    reasons: str = N_("Reason")
    reason_text: str = N_('Reason text (needed for "other"; Esc leaves the field)')
    flag: str = N_("Flag for a guideline update")
    keys: str = N_("Keys:")
    key_label: str = N_("label")
    key_reason: str = N_("reason letter")
    key_flag: str = N_("flag")
    key_save: str = N_("save")
    key_nav: str = N_("next/previous pair")
    empty: str = N_("No pair needs a decision with these filters.")
    label_first: str = N_("Choose a label first (1-9).")
    reason_first: str = N_("Choose a reason first (its letter).")
    other_text: str = N_('Say why in the text for "other".')
    saving: str = N_("Saving…")

    @classmethod
    def translated(cls, **lines: str) -> AdjudicatorTexts:
        """The fixed words in the current language, with the page's *lines* (``head`` …)."""
        fixed = {
            name: tr(str(field.default))
            for name, field in cls.model_fields.items()
            if field.default and name not in lines
        }
        return cls(**fixed, **lines)


class AdjudicatorData(_Strict):
    """What the page mounts the widget with. ``pair``: ``None`` when no pair is left with
    the filters. ``position`` (1-based) and ``total``: in the filtered queue. ``status``: the
    page's answer to the last save. ``fresh``: the page moved or saved, so the widget resets
    its choices to the pair's stored decision. ``labels``, ``need_labels``: how values and
    needs are named on screen; ``decided`` of ``needed``: the counter."""

    pair: AdjudicationPair | None
    reasons: list[ReasonChoice]
    position: Annotated[int, Field(ge=1)]
    total: Annotated[int, Field(ge=0)]
    status: str = ""
    fresh: bool = False
    #: The scale's own label of each value ("same" -> "Same"), for the options, the raters'
    #: answers and the majority; a value without one shows as itself.
    labels: dict[str, str] = {}
    #: The plain name of each need ("no_majority" -> "no strict majority ...").
    need_labels: dict[str, str] = {}
    #: The study's adjudication so far: pairs decided of the pairs that need a decision.
    decided: Annotated[int, Field(ge=0)] = 0
    needed: Annotated[int, Field(ge=0)] = 0
    #: Every word the widget shows (:class:`AdjudicatorTexts`).
    texts: AdjudicatorTexts = AdjudicatorTexts()


# ------------------------------------------------------------------ widget -> page
class DecisionEvent(_Strict):
    """Enter: store this decision. ``version``: the pair's decision version the adjudicator
    saw (a decision stored meanwhile makes it stale). ``reason_text``: as typed (the service
    strips it); at most ``COMMENT_MAX_CHARS`` characters once stripped."""

    pair_id: _Text
    label: _Text
    reason: AdjudicationReason
    reason_text: StrictStr = ""
    flag_guideline: StrictBool = False
    version: _Count
    seq: _Seq

    @field_validator("reason_text")
    @classmethod
    def _text_cap(cls, v: str) -> str:
        if len(v.strip()) > COMMENT_MAX_CHARS:
            raise ValueError(
                tr(
                    "the reason text is longer than {n} characters",
                    n=COMMENT_MAX_CHARS,
                )
            )
        return v


class NavEvent(_Strict):
    """``n`` / ``p``: show the next or the previous pair."""

    to: NavTo
    seq: _Seq


class AdjudicatorState(_Strict):
    """The widget's state as the page reads it: the last event of each kind (``None``
    before the first)."""

    decision: DecisionEvent | None = None
    nav: NavEvent | None = None


#: The names of the widget's state (each one event kind), as the mount declares them.
STATE_NAMES: tuple[str, ...] = tuple(AdjudicatorState.model_fields)


def problem_text(exc: ValidationError) -> str:
    """One line saying why a message broke the contract (the first problem, with where)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg
