"""The annotation widget's messages: one contract for the browser and the ratings endpoint.

The widget (``pages/components/annotator``) posts a :class:`RatingsRequest` — its ordered
list of unacknowledged ratings and, when it needs pairs, where from — to the ratings
endpoint (``POST /api/annotate/ratings``, bearer token in the ``Authorization`` header) and
gets a :class:`RatingsResponse` back: the highest sequence number resolved, the versions
stored, the entries refused with a reason, and a window of pairs. A request that breaks the
contract, the token or a server cap gets an :class:`ApiError` and stores nothing.

Every limit the widget obeys is here (:class:`WidgetLimits`, sent to it with the page's
boot data), so the browser, the endpoint and the services cannot disagree about them.
Every visible text of the widget is here too (:class:`WidgetText`, :class:`PracticeText`:
English defaults, translated by the page into the person's language and sent in the boot
data with ``lang``, ``dir`` and the locale its numbers and plural rules follow); the widget
itself writes no visible word of its own.
This module imports nothing of the project but :mod:`data_schemas.limits` and
:mod:`data_schemas._text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

from ._text import N_, tr, trn
from .limits import COMMENT_MAX_CHARS, MIN_VIEW_MS

#: The path of the ratings endpoint (served beside Streamlit by ``serve.py``).
RATINGS_PATH = "/api/annotate/ratings"
#: Entries accepted in one request (the widget sends at most this many, oldest first).
MAX_BATCH = 500
#: Largest request body accepted (bytes): MAX_BATCH entries with full comments fit.
MAX_BODY_BYTES = 1_500_000
#: Ratings one annotator may store per RATE_WINDOW_S seconds through the endpoint: a doctor
#: pressing every 120 ms without pause stores 500 a minute; a script looping on the endpoint
#: is stopped there (HTTP 429; the widget keeps its ratings and sends them again later).
MAX_WRITES_PER_WINDOW = 600
RATE_WINDOW_S = 60
#: Requests of any kind one annotator may make per RATE_WINDOW_S seconds (saves, refills,
#: polls, bodies that break the contract): twice the write cap, so a doctor's presses and
#: the widget's refills never reach it; a script asking for pairs in a loop does (HTTP 429).
MAX_REQUESTS_PER_WINDOW = 1200
#: Revisions one slot may have: changing an answer back and forth is fine, a script that
#: appends thousands of revisions to one pair is refused.
MAX_REVISIONS_PER_SLOT = 50
#: Identical consecutive ratings that show the straight-lining reminder (Chiu et al. 2018).
STRAIGHT_LINE_RUN = 10
#: The widget asks for more pairs when it holds fewer than this many ahead of the doctor.
REFILL_BELOW = 20
#: Pairs sent per refill from the asked position (and BEHIND served before it, for Back).
WINDOW = 40
BEHIND = 2
#: A request unanswered for this long is sent again.
RESEND_AFTER_MS = 4000
#: Waits before the n-th retry after an error (the last one repeats).
BACKOFF_MS = (1000, 2000, 4000, 8000, 15000)
#: How often the "waiting for other doctors" screen asks whether a tiebreak pair arrived.
WAIT_POLL_MS = 4000
#: Lifetime of a ratings token (seconds); the widget asks the page for a new one when it
#: expires (one page rerun per lifetime).
TOKEN_TTL_S = 3600
#: How long ratings kept in the browser stay good (seconds): the widget discards a kept list
#: untouched for longer, and the endpoint refuses a rating of a slot served to its session
#: longer ago (what was served is recorded per signed-in page session; docs/security.md).
KEPT_TTL_S = 12 * 3600
#: The browser's time on a pair is taken up to this (ms; one day): a pair left on screen
#: overnight is "long", not a number that overflows a column.
ELAPSED_MAX_MS = 86_400_000

_Count = Annotated[StrictInt, Field(ge=0)]
_Seq = Annotated[StrictInt, Field(ge=1, le=2**53)]
_Position = Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]
#: Longest rating value accepted (a scale's values are short; a longer one is refused
#: before it reaches the store or a message).
MAX_VALUE_CHARS = 100
#: A queue mark's parts (highest position, queue version): bounded like the store's integers.
_MarkPart = Annotated[StrictInt, Field(ge=-1, le=2**31 - 1)]
#: A signed-in page session's id (random, minted by the page with its first token).
_Session = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_-]{16,43}$")]
#: A language tag as the widget sends it (``de``, ``es``, ``qps-ploc``): the endpoint answers
#: in it when it is a supported language.
_LanguageTag = Annotated[StrictStr, Field(pattern=r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8}){0,3}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RatingEntry(_Strict):
    """One unacknowledged rating as the widget keeps and sends it.

    ``seq``: the widget's sequence number (increasing within its list). ``version``: the
    slot's version the widget showed; or, for a second edit of a slot whose first edit is
    not acknowledged yet, ``after`` names that edit's ``seq`` (the edit is chained onto the
    version it stores); an entry with neither is refused. ``elapsed_ms``: how long the pair
    was on screen before the press (taken up to :data:`ELAPSED_MAX_MS`). ``session``: the
    signed-in page session the slot was served to (``None``: the token's own); a rating is
    refused unless the endpoint served that slot to that session of this annotator.
    """

    seq: _Seq
    position: _Position
    value: Annotated[StrictStr, Field(max_length=MAX_VALUE_CHARS)] | StrictInt | StrictFloat
    unclear: StrictBool = False
    comment: StrictStr = ""
    elapsed_ms: Annotated[StrictInt, Field(ge=0)]
    version: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)] | None = None
    after: _Seq | None = None
    session: _Session | None = None

    @field_validator("comment")
    @classmethod
    def _comment_cap(cls, v: str) -> str:
        v = v.strip()
        if len(v) > COMMENT_MAX_CHARS:
            raise ValueError(f"a comment may have at most {COMMENT_MAX_CHARS} characters")
        return v

    @field_validator("elapsed_ms")
    @classmethod
    def _elapsed_cap(cls, v: int) -> int:
        return min(v, ELAPSED_MAX_MS)


class PracticeAnswer(_Strict):
    """One practice answer: the *serial*-th answer of the doctor's practice round (the
    serial the server sent with the practice pair), the value pressed and the time the pair
    was on screen. Sent alone, at once (no pending list): the doctor waits for the feedback."""

    serial: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]
    value: StrictStr | StrictInt | StrictFloat
    elapsed_ms: Annotated[StrictInt, Field(ge=0)]

    @field_validator("elapsed_ms")
    @classmethod
    def _elapsed_cap(cls, v: int) -> int:
        return min(v, 2**31 - 1)


class RatingsRequest(_Strict):
    """What the widget posts: ``pending`` (sequence order) and where it needs pairs from.

    ``need``: ``-1`` — where to resume (the first unrated slot; also after sign-in);
    a position — the pairs served from it (with ``back``: the pairs served before it);
    ``None`` — its window suffices, only acknowledge. ``at``: the pair on screen. ``mark``:
    the queue mark of the last window it got; when the queue has moved since (a 2 + 1
    tiebreak slot, the sequential audit), the stretch from ``at`` is sent again.
    """

    pending: Annotated[list[RatingEntry], Field(max_length=MAX_BATCH)] = []
    need: Annotated[StrictInt, Field(ge=-1, le=2**31 - 1)] | None = None
    back: StrictBool = False
    at: _Position | None = None
    mark: tuple[_MarkPart, _MarkPart] | None = None
    #: A practice answer (the practice round before the real queue; docs/practice.md).
    practice: PracticeAnswer | None = None
    #: The widget's language (its boot's ``lang``): the refusals in the answer are written
    #: in it (the endpoint refuses a language it does not speak).
    lang: _LanguageTag | None = None


class WidgetPair(_Strict):
    """One slot as the widget gets it: exactly what a ``PairView`` exposes (terms in slot
    order, the annotator's own answer and its version) plus its serving index — no pair id,
    dataset, label or other annotator's rating (extra fields are refused)."""

    position: int
    index: int
    term_1: str
    term_2: str
    rating: str | None
    unclear: bool
    comment: str
    version: int


class WindowInfo(_Strict):
    start_of_queue: bool
    end_of_queue: bool


class CurrentAnswer(_Strict):
    """A slot's answer now (shown when a stale tab's press is refused)."""

    rating: str | None
    unclear: bool
    comment: str
    version: int


class Refusal(_Strict):
    """An entry that was not stored, and why (``current``: the slot's answer, when another
    window changed it)."""

    seq: int
    position: int
    message: str
    current: CurrentAnswer | None = None


class PracticePair(_Strict):
    """A practice pair to answer: its terms and the serial its answer carries (no
    reference answer: that comes only with the feedback, after the answer)."""

    serial: int
    term_1: str
    term_2: str


class PracticeFeedback(_Strict):
    """The feedback on one practice answer: the doctor's answer, the reference answer and
    the explanation of that practice pair, and whether they agree (``exact``; ``within_one``
    on a scale with a numeric level)."""

    serial: int
    term_1: str
    term_2: str
    value: str
    reference: str
    explanation: str
    exact: bool
    within_one: bool


class PracticeState(_Strict):
    """Where the doctor stands with the practice gate. ``open``: the real queue is served
    (then ``pair`` is ``None``). ``answered``: practice answers in this round; ``needed``:
    how many the gate looks at (the last ones); ``exact``/``within_one``: their agreement
    with the reference answers (``None`` before any); ``threshold``: the share of exact
    agreement that opens the real queue. ``feedback``: on the answer just sent."""

    open: bool
    answered: int
    needed: int
    threshold: float
    exact: float | None = None
    within_one: float | None = None
    pair: PracticePair | None = None
    feedback: PracticeFeedback | None = None


class RatingsResponse(_Strict):
    """The endpoint's answer.

    ``ack``: every entry up to this sequence number is resolved (stored, found stored or
    refused). ``versions``: seq → the slot's version after it. ``unavailable``: the store
    failed midway; entries after ``ack`` wait for a resend. ``window``/``window_info``/
    ``mark``: pairs in serving order, when asked for (or when the queue moved). ``resume``:
    the answer to ``need = -1``, with ``start`` (first unrated position, ``None`` when the
    queue is complete), ``complete``, ``waiting`` (2 + 1 pairs that may still come),
    ``done`` and ``total``.
    """

    ack: int
    versions: dict[str, int] = {}
    refused: list[Refusal] = []
    unavailable: bool = False
    window: list[WidgetPair] = []
    window_info: WindowInfo | None = None
    mark: tuple[int, int] | None = None
    resume: bool = False
    start: int | None = None
    complete: bool = False
    waiting: int = 0
    done: int | None = None
    total: int | None = None
    #: The practice round, when the study has one and the doctor is in it (or just left it).
    #: While it is not ``open`` no real pair is sent and no real rating acknowledged (the
    #: widget keeps them until the real queue opens).
    practice: PracticeState | None = None


#: Why a request was refused as a whole (nothing stored). ``ended``: the access code was
#: replaced or revoked (sign in again); ``expired``: the token ran out or was ended (ask the
#: page for a new one); ``unauthorized``: no or unknown token; ``invalid``: the body broke
#: the contract; ``too_large``: over MAX_BODY_BYTES; ``rate_limited``: over
#: MAX_WRITES_PER_WINDOW or MAX_REQUESTS_PER_WINDOW (retry after ``retry_after_ms``);
#: ``unavailable``: the store cannot be reached (retry); ``problem``: the study cannot be served (e.g. still being created);
#: ``forbidden``: the request came from a page of another origin (``Origin`` header);
#: ``unsupported``: the body is not ``Content-Type: application/json``.
ErrorCode = Literal[
    "ended",
    "expired",
    "unauthorized",
    "invalid",
    "too_large",
    "rate_limited",
    "unavailable",
    "problem",
    "forbidden",
    "unsupported",
]
#: HTTP status of each error.
ERROR_STATUS: dict[str, int] = {
    "ended": 401,
    "expired": 401,
    "unauthorized": 401,
    "invalid": 400,
    "too_large": 413,
    "rate_limited": 429,
    "unavailable": 503,
    "problem": 409,
    "forbidden": 403,
    "unsupported": 415,
}


class ApiError(_Strict):
    error: ErrorCode
    reason: str
    retry_after_ms: int | None = None


class WidgetLimits(_Strict):
    """Every limit the widget follows, sent to it from here."""

    max_batch: int = MAX_BATCH
    min_view_ms: int = MIN_VIEW_MS
    comment_max: int = COMMENT_MAX_CHARS
    straight_line_run: int = STRAIGHT_LINE_RUN
    refill_below: int = REFILL_BELOW
    resend_after_ms: int = RESEND_AFTER_MS
    backoff_ms: tuple[int, ...] = BACKOFF_MS
    wait_poll_ms: int = WAIT_POLL_MS
    kept_ttl_ms: int = KEPT_TTL_S * 1000


class ScaleOptionView(_Strict):
    value: str
    label: str
    key: str
    description: str


class ScaleView(_Strict):
    """The scale as the widget draws it. ``question``: the one line above every pair saying
    what is asked (:attr:`data_schemas.scales.Scale.asks`; empty: no line)."""

    name: str
    options: list[ScaleOptionView]
    unclear_flag: bool
    question: str = ""


class PracticeText(_Strict):
    """Every string the widget shows in the practice round (``{name}`` fields are filled
    in by the widget). English defaults; :meth:`translated` is the set in the current
    language, which the page hands over."""

    heading: str = N_("Practice pair {n}")
    intro: str = N_(
        "Practice round: these pairs do not count. After each answer you see the reference "
        "answer and why."
    )
    your_answer: str = N_("Your answer: {answer}")
    reference: str = N_("Reference answer: {answer}")
    agree: str = N_("You agree with the reference answer.")
    close: str = N_("Off by one step from the reference answer.")
    differ: str = N_("Your answer differs from the reference answer.")
    why: str = N_("Why: {explanation}")
    go_on: str = N_("Press any rating key (or Enter) to go on.")
    progress: str = N_(
        "Practice: {answered} answered · {exact}% exactly as the reference over the last "
        "{window} (needed: {threshold}% over the last {needed})"
    )
    progress_within: str = N_(" · {within}% within one step")
    passed: str = N_("Practice done: your real pairs open now.")
    sending: str = N_("Saving your practice answer…")
    loading: str = N_("Loading the practice round…")

    @classmethod
    def translated(cls) -> PracticeText:
        """Every field in the current language (placeholders left for the widget)."""
        return cls(**{name: tr(f.default) for name, f in cls.model_fields.items()})


#: A plural message as the widget gets it: its text per CLDR plural category of the
#: language (``one``, ``few``, ``many``, ``other``, …); the widget picks one with
#: ``Intl.PluralRules(locale).select(n)`` (``other`` when the category is missing).
PluralText = dict[str, str]
#: Sample counts of the English plural categories (the defaults when no language is given).
ENGLISH_PLURAL_SAMPLES: dict[str, int] = {"one": 1, "other": 2}


class WidgetText(_Strict):
    """Every visible string of the annotation widget outside the practice round: button
    labels, hints, status, notices, refusals, the end, waiting and stopped screens, the
    two dialogs, the reminder, aria labels and live-region announcements. ``{name}`` fields
    are filled by the widget (numbers formatted for the language there). The fields typed
    :data:`PluralText` hold one text per plural category of the language.

    Build it with :meth:`translated`, which translates every field into the current
    language for the plural categories given (sample counts per category)."""

    # The frame (aria labels of the regions, the separator between the two terms).
    progress_label: str = N_("Progress")
    pair_label: str = N_("Pair to rate")
    options_label: str = N_("Rating")
    versus: str = N_("vs")
    # Buttons and their keys (the key itself is not translated, only its name).
    back: str = N_("Back")
    back_to_last: str = N_("Back to the last pair")
    key_backspace: str = N_("Backspace")
    unclear: str = N_("Unclear meaning")
    comment_hint: str = N_("Comment (optional) — press Tab to leave the field, then the rating key")
    comment_hint_touch: str = N_(
        "Comment (optional) — type it, then tap your answer: the comment is saved with it"
    )
    comment_count: str = N_("{n} / {max} characters")
    # Progress and announcements.
    progress_rated: str = N_("{done} / {total} rated")
    progress_pair: str = N_("{done} / {total} rated · pair {index} of {total}")
    announce_pair: str = N_("Pair {index} of {total}: {term_1} versus {term_2}")
    announce_practice: str = N_("{heading}: {term_1} versus {term_2}")
    saved_answer: str = N_("Saved answer: {answer}. Press a key to change it.")
    saved_answer_unclear: str = N_(
        "Saved answer: {answer} · unclear meaning. Press a key to change it."
    )
    # The save status.
    all_saved: str = N_("All saved")
    stopped: str = N_("Stopped")
    # Waiting screens.
    loading_pairs: str = N_("Loading your pairs…")
    loading_next: str = N_("Loading the next pair…")
    loading_previous: str = N_("Loading the previous pair…")
    checking_queue: str = N_("Checking your queue…")
    signing_out: str = N_("Signing out: saving your ratings…")
    signed_out: str = N_("Signed out.")
    # Notices.
    ignored_too_soon: str = N_(
        "Key ignored: this pair had been on screen for only {ms} ms. Look at it and press again."
    )
    ignored_loading: str = N_(
        "Key ignored: the next pair is still loading. Press again when it appears."
    )
    not_saved_reason: str = N_("Not saved: {reason}")
    no_answer_from_server: str = N_("the server did not answer")
    changed_elsewhere: str = N_(
        "This pair was changed in another window — here is the current answer: {answer}. "
        "Your key press was not saved."
    )
    changed_elsewhere_unclear: str = N_(
        "This pair was changed in another window — here is the current answer: {answer} "
        "(unclear meaning). Your key press was not saved."
    )
    no_answer: str = N_("no answer")
    # The end screen.
    end_complete: str = N_(
        "Your queue is complete — thank you! Every rating is saved. You can close this tab."
    )
    end_complete_unsaved: str = N_(
        "Your queue is complete — your last ratings are still being saved; keep this tab "
        "open until the status says “All saved”."
    )
    end_waiting_unsaved: str = N_(
        "Your last ratings are still being saved; keep this tab open until the status says "
        "“All saved”."
    )
    ended: str = N_(
        "Your access code was replaced or revoked, so this session has stopped. Sign in "
        "again with your current code, or ask the study admin."
    )
    # The two dialogs.
    kept_label: str = N_("Ratings kept from an earlier session")
    kept_send: str = N_("Send them")
    kept_discard: str = N_("Discard them")
    signout_label: str = N_("Unsaved ratings at sign-out")
    signout_stay: str = N_("Keep them and stay signed in")
    signout_discard: str = N_("Discard them and sign out")
    # Plural messages ({n}: the count, formatted by the widget).
    not_saved: PluralText
    not_saved_retry: PluralText
    saving: PluralText
    sending_kept: PluralText
    end_waiting: PluralText
    ended_kept: PluralText
    kept_text: PluralText
    signout_text: PluralText
    reminder: PluralText

    @classmethod
    def translated(cls, samples: Mapping[str, int] = ENGLISH_PLURAL_SAMPLES) -> WidgetText:
        """Every field in the current language; each plural message once per category of
        *samples* (category → a count in it)."""
        single = {
            name: tr(f.default)
            for name, f in cls.model_fields.items()
            if isinstance(f.default, str)
        }
        each = samples.items()
        return cls(
            **single,
            not_saved={c: trn("{n} not saved", "{n} not saved", n) for c, n in each},
            not_saved_retry={
                c: trn("{n} not saved — will retry", "{n} not saved — will retry", n)
                for c, n in each
            },
            saving={c: trn("{n} saving…", "{n} saving…", n) for c, n in each},
            sending_kept={
                c: trn(
                    "Sending {n} rating kept from before…",
                    "Sending {n} ratings kept from before…",
                    n,
                )
                for c, n in each
            },
            end_waiting={
                c: trn(
                    "Waiting for other doctors — come back later: {n} pair may still need "
                    "your rating.",
                    "Waiting for other doctors — come back later: {n} pairs may still need "
                    "your rating.",
                    n,
                )
                for c, n in each
            },
            ended_kept={
                c: trn(
                    "{n} rating was not saved; it is kept in this browser and sent after you "
                    "sign in again.",
                    "{n} ratings were not saved; they are kept in this browser and sent after "
                    "you sign in again.",
                    n,
                )
                for c, n in each
            },
            kept_text={
                c: trn(
                    "{n} rating from an earlier session of yours (last changed {when}) is "
                    "kept on this computer and was never saved. Send it now? If you do not "
                    "recognise it, discard it.",
                    "{n} ratings from an earlier session of yours (last changed {when}) are "
                    "kept on this computer and were never saved. Send them now? If you do "
                    "not recognise them, discard them.",
                    n,
                )
                for c, n in each
            },
            signout_text={
                c: trn(
                    "{n} rating could not be saved yet (the server cannot be reached or your "
                    "code was replaced). If you sign out now it is discarded from this "
                    "computer.",
                    "{n} ratings could not be saved yet (the server cannot be reached or your "
                    "code was replaced). If you sign out now they are discarded from this "
                    "computer.",
                    n,
                )
                for c, n in each
            },
            reminder={
                c: trn(
                    "You have given the same rating to the last {n} pair. That can be right — "
                    "just a reminder to look at each pair afresh.",
                    "You have given the same rating to the last {n} pairs. That can be right "
                    "— just a reminder to look at each pair afresh.",
                    n,
                )
                for c, n in each
            },
        )


def _english_text() -> WidgetText:
    return WidgetText.translated()


class WidgetBoot(_Strict):
    """What the Annotate page hands the widget when it mounts it.

    ``who``: an opaque name for this annotator's browser storage (study and annotator).
    ``endpoint`` and ``token``: where and with what the widget posts its ratings
    (``Authorization: Bearer <token>``). ``token_serial``: counts the tokens this page
    minted; the widget asks for a new one by sending the serial it holds.
    ``ended``: the access code was replaced or revoked (the widget stops at once).
    ``session``: this signed-in page session (every rating the widget keeps names it);
    ``earlier``: this annotator's other sessions whose kept ratings the endpoint still takes
    (the widget asks the doctor before sending those, and discards kept lists naming any
    other session unsent). ``sign_out``: the doctor asked to sign out — save or ask, clear
    this browser's kept data, then report ``signed_out``.
    ``text``/``practice_text``: every visible string, in the person's language ``lang``
    (the widget's ``lang`` attribute, and the language its requests name); ``dir``: that
    language's writing direction; ``locale``: the CLDR locale its numbers, dates and plural
    categories follow (``Intl.NumberFormat``/``Intl.PluralRules``).
    """

    who: str
    endpoint: str
    token: str | None
    token_serial: int
    scale: ScaleView
    total: int
    limits: WidgetLimits = WidgetLimits()
    ended: str | None = None
    practice_text: PracticeText = PracticeText()
    text: WidgetText = Field(default_factory=_english_text)
    lang: str = "en"
    dir: Literal["ltr", "rtl"] = "ltr"
    locale: str = "en"
    session: str | None = None
    earlier: list[str] = []
    sign_out: bool = False
