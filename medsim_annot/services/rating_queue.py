"""The browser's queue of unacknowledged ratings, committed in order.

The annotation widget draws the next pair in the browser and keeps every rating it has not yet
seen acknowledged in an ordered list: each entry carries its slot position, a client sequence
number, the version of the slot's rating the widget showed (``PairView.version``), or — for a
second edit of a slot whose first edit is still unacknowledged — the sequence number of that
earlier edit (``after``), so that the edit is chained onto the version the earlier one stored.

:func:`commit_pending` commits the entries in sequence order through
:func:`medsim_annot.services.annotation.submit_rating` and reports the highest sequence number
up to which every entry is resolved (stored, already stored, or refused). Re-sending an entry
is harmless: the service stores the same answer on the same version once.

- A refusal because the pair was changed in another window (:class:`StaleRating`) is reported
  with the slot's current answer; later edits chained onto a refused entry are refused too.
- A store error (:class:`StoreUnavailable`) stops at that entry: it and
  every later entry stay unacknowledged for the widget to resend.
- A replaced or revoked code (:class:`SessionEnded`) stops everything.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass, field

from data_schemas.limits import COMMENT_MAX_CHARS
from medsim_annot.errors import SessionEnded, StaleRating, StoreUnavailable, UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.storage import Engine

#: Errors that mean "the store cannot be reached": the annotation services retry transient
#: store errors and raise StoreUnavailable for any that remain (see docs/store.md).
STORE_ERRORS: tuple[type[BaseException], ...] = (StoreUnavailable,)
#: Committed sequence numbers remembered per session (for chaining later edits).
LOG_SIZE = 500
#: Entries accepted in one message from the browser.
MAX_BATCH = 500
#: One commit at a time per annotator in this process: a Streamlit rerun may start while the
#: interrupted one is still inside a save, and both carry the same entries.
_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock(annotator_id: int) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(annotator_id, threading.Lock())


@dataclass(frozen=True)
class PendingRating:
    """One unacknowledged rating as the widget sends it."""

    seq: int
    position: int
    value: str | float
    unclear: bool = False
    comment: str = ""
    elapsed_ms: int | None = None
    version: int | None = None
    after: int | None = None

    @classmethod
    def parse(cls, raw: object) -> PendingRating:
        """Validate one entry from the browser (untrusted JSON); raise :class:`UsageProblem`."""
        if not isinstance(raw, dict):
            raise UsageProblem("a pending rating must be an object")

        def _int(name: str, *, optional: bool = False) -> int | None:
            v = raw.get(name)
            if v is None and optional:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise UsageProblem(f"pending rating field {name!r} must be a whole number")
            if int(v) != v or v < 0:
                raise UsageProblem(f"pending rating field {name!r} must be a whole number ≥ 0")
            return int(v)

        value = raw.get("value")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise UsageProblem("pending rating field 'value' must be a scale value")
        comment = raw.get("comment") or ""
        if not isinstance(comment, str):
            raise UsageProblem("pending rating field 'comment' must be text")
        if len(comment.strip()) > COMMENT_MAX_CHARS:
            raise UsageProblem(f"a comment may have at most {COMMENT_MAX_CHARS} characters")
        elapsed = _int("elapsed_ms", optional=True)
        seq, position = _int("seq"), _int("position")
        if seq is None or position is None:  # not reached: required fields raise above
            raise UsageProblem("pending rating needs 'seq' and 'position'")
        return cls(
            seq=seq,
            position=position,
            value=value,
            unclear=bool(raw.get("unclear")),
            comment=comment,
            elapsed_ms=min(elapsed, 2**31 - 1) if elapsed is not None else None,
            version=_int("version", optional=True),
            after=_int("after", optional=True),
        )


@dataclass
class CommitOutcome:
    """What :func:`commit_pending` did.

    ``ack``: every entry with a sequence number up to it is resolved. ``versions``: sequence
    number → version stored (or found stored) for it. ``refused``: entries the store refused,
    each ``{seq, position, message, current}`` (``current``: the slot's answer now, or
    ``None``). ``unavailable``: the store failed; entries after ``ack`` wait for a resend.
    ``ended``: the message when the access code was replaced or revoked.
    """

    ack: int
    versions: dict[int, int] = field(default_factory=dict)
    refused: list[dict] = field(default_factory=list)
    unavailable: bool = False
    ended: str | None = None


def _same_answer(entry: PendingRating, current: dict) -> bool:
    cur = current.get("rating")
    same_value = str(cur) == str(entry.value)
    if not same_value:
        try:
            same_value = float(cur) == float(entry.value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            same_value = False
    return (
        same_value
        and bool(current.get("unclear")) == entry.unclear
        and (current.get("comment") or "").strip() == entry.comment.strip()
    )


def commit_pending(
    annotator_id: int,
    entries: list[PendingRating],
    *,
    acked: int,
    log: dict[int, int],
    credential: int | None = None,
    engine: Engine | None = None,
) -> CommitOutcome:
    """Commit *entries* (sequence order) whose sequence number is above *acked*.

    *log* maps sequence numbers committed earlier in this session to the version they stored;
    it is updated in place (and trimmed to :data:`LOG_SIZE`). Returns a :class:`CommitOutcome`.
    Entries found in *log* are acknowledged without another save.
    """
    with _lock(annotator_id):
        return _commit(annotator_id, entries, acked, log, credential, engine)


def _commit(annotator_id, entries, acked, log, credential, engine) -> CommitOutcome:
    todo = sorted((e for e in entries if e.seq > acked), key=lambda e: e.seq)[:MAX_BATCH]
    out = CommitOutcome(ack=acked)
    by_seq = {e.seq: e for e in todo}
    # The last edit of each chain (entry -> later entries chained onto it).
    nxt: dict[int, int] = {e.after: e.seq for e in todo if e.after is not None}
    refused_seqs: set[int] = set()
    for e in todo:
        if e.seq in log and e.seq not in out.versions:
            out.versions[e.seq] = log[e.seq]
        if e.seq in out.versions or e.seq in refused_seqs:
            out.ack = e.seq
            continue
        expected = e.version
        if e.after is not None:
            if e.after in refused_seqs:
                refused_seqs.add(e.seq)
                prior = next(r for r in out.refused if r["seq"] == e.after)
                out.refused.append({**prior, "seq": e.seq, "position": e.position})
                out.ack = e.seq
                continue
            expected = log.get(e.after, out.versions.get(e.after))
            if expected is None:
                refused_seqs.add(e.seq)
                out.refused.append(
                    {
                        "seq": e.seq,
                        "position": e.position,
                        "message": "this change could not be matched to the answer it "
                        "changes; look at the pair and press again",
                        "current": None,
                    }
                )
                out.ack = e.seq
                continue
        try:
            res = A.submit_rating(
                annotator_id,
                e.position,
                e.value,
                unclear=e.unclear,
                comment=e.comment,
                elapsed_ms=e.elapsed_ms,
                expected_version=expected,
                credential=credential,
                engine=engine,
            )
        except SessionEnded as exc:
            out.ended = str(exc)
            break
        except StaleRating as exc:
            current = dict(exc.current)
            chain = [e]
            while chain[-1].seq in nxt and nxt[chain[-1].seq] in by_seq:
                chain.append(by_seq[nxt[chain[-1].seq]])
            if len(chain) > 1 and _same_answer(chain[-1], current):
                # The whole chain was stored before (its acknowledgement was lost): the slot
                # holds the chain's last answer.
                for c in chain:
                    out.versions[c.seq] = int(str(current.get("version") or 0))
                out.ack = e.seq
                continue
            refused_seqs.add(e.seq)
            out.refused.append(
                {"seq": e.seq, "position": e.position, "message": str(exc), "current": current}
            )
            out.ack = e.seq
            continue
        except UsageProblem as exc:
            refused_seqs.add(e.seq)
            out.refused.append(
                {"seq": e.seq, "position": e.position, "message": str(exc), "current": None}
            )
            out.ack = e.seq
            continue
        except STORE_ERRORS:
            out.unavailable = True
            break
        out.versions[e.seq] = int(res.version)
        out.ack = e.seq
    log.update(out.versions)
    for k in sorted(log)[: max(0, len(log) - LOG_SIZE)]:
        del log[k]
    return out


def session_key(annotator_id: int, study_id: int) -> str:
    """An opaque name for this annotator's browser storage (no id is shown in the page)."""
    return hashlib.sha256(f"medsim-annot:{study_id}:{annotator_id}".encode()).hexdigest()[:16]


def read_window(
    annotator_id: int,
    position: int | None,
    *,
    before: int,
    after: int,
    credential: int | None = None,
    engine: Engine | None = None,
) -> A.Window:
    """The stretch of the queue the widget walks: *before* slots served before *position*,
    it and ``after - 1`` served after it, in serving order (``None``: the last *before*
    slots). See :func:`medsim_annot.services.annotation.serving_window`."""
    return A.serving_window(
        annotator_id, position, before=before, after=after, credential=credential, engine=engine
    )


def queue_end(annotator_id: int, *, engine: Engine | None = None) -> tuple[int, int]:
    """The queue's mark (highest position, queue version); it moves when a tiebreak slot is
    added or the sequential audit withdraws or restores slots."""
    return A.queue_end(annotator_id, engine=engine)


def widget_window(window: A.Window) -> tuple[list[dict], dict]:
    """The window's pairs as the widget gets them (:func:`widget_pair` plus each pair's
    serving index, for "pair N of total") and where the stretch sits in the queue."""
    pairs = [
        {**widget_pair(v), "index": window.first_index + i} for i, v in enumerate(window.pairs)
    ]
    info = {"start_of_queue": window.start_of_queue, "end_of_queue": window.end_of_queue}
    return pairs, info


def widget_pair(view: A.PairView) -> dict:
    """The JSON the widget gets for one slot: exactly what :class:`PairView` exposes about
    it (terms in slot order, the annotator's own current answer and its version, the slot
    position) — no pair id, dataset, label or other annotator's rating."""
    rating = view.rating
    if isinstance(rating, float) and rating.is_integer():
        rating = int(rating)
    return {
        "position": view.position,
        "term_1": view.term_1,
        "term_2": view.term_2,
        "rating": None if rating is None else str(rating),
        "unclear": bool(view.unclear),
        "comment": view.comment or "",
        "version": int(view.version),
    }


def widget_scale(view: A.PairView) -> dict:
    """The scale as the widget draws it: options (value, label, key, description) in order
    and whether the 'unclear meaning' flag exists."""
    scale = view.scale
    options = []
    for o in scale.options:
        value = o.value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        options.append(
            {"value": str(value), "label": o.label, "key": o.key, "description": o.description}
        )
    return {"name": scale.name, "options": options, "unclear_flag": bool(scale.unclear_flag)}


def resume_state(
    annotator_id: int, *, credential: int | None = None, engine: Engine | None = None
) -> A.QueueState:
    """Progress and the first unrated position (where a sign-in or a reload resumes)."""
    return A.queue_state(annotator_id, credential=credential, engine=engine)
