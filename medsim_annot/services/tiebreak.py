"""The store side of the 2 + 1 design: a third rater only where the first two
disagree.

A study created with ``--per-item 2 --tiebreak`` keeps ``{"tiebreak": {"tolerance": T}}`` in
its config. :func:`after_rating` runs inside :func:`~medsim_annot.services.annotation.
submit_rating`'s transaction, right after a rating was stored: when the pair now has exactly
two current ratings that do not agree (:func:`medsim_annot.design.adaptive.needs_tiebreak`),
one more slot for it goes to the active annotator with the least remaining work who holds no
slot for it (:func:`~medsim_annot.design.adaptive.choose_tiebreak_annotator`). The slot gets a
new position past the end of that annotator's queue (positions are slot identity and never
change) and a serving order key among their next few pairs, never next to a showing of the
same two terms (:func:`~medsim_annot.design.adaptive.tiebreak_position`).

Exactly one tiebreak per pair: the pair's item row is locked before its ratings are read (of
two annotators finishing it at once, the second sees the first's rating), and the
``tiebreaks`` table's unique ``item_id`` refuses a second claim (the loser's SAVEPOINT rolls
back and it moves on). With three annotators the majority of every pair then equals the
majority the full three-rater design would give: where the two agree, a third rating cannot
change it; where they do not, the third rating is taken.
"""

from __future__ import annotations

import pandas as pd

from data_schemas import columns as C
from data_schemas.options import TIEBREAK_TOLERANCE
from data_schemas.scales import scale_from_json
from medsim_annot.design.adaptive import (
    TIEBREAK_SOON,
    choose_tiebreak_annotator,
    needs_tiebreak,
    tiebreak_position,
)
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.storage import ORDER_GAP, Transaction, utcnow
from medsim_annot.storage import annotation as annotation_store
from medsim_annot.storage import tiebreak as store


def tiebreak_config(tolerance: float = 0.0) -> dict:
    """The study config entry of a 2 + 1 design (checked)."""
    return {"tolerance": float(TIEBREAK_TOLERANCE.check(tolerance))}


def after_rating(s: Transaction, *, study_id: int, item_id: int) -> int | None:
    """Add the pair's tiebreak slot if it now needs one (inside the caller's transaction).
    Returns the id of the annotator who got it, else ``None``."""
    config, scale_json = store.study_design(s, study_id)
    design = config.get("tiebreak")
    if not design:
        return None
    store.lock_item(s, item_id)
    ratings = store.pair_ratings(s, item_id)
    if len(ratings) != 2 or store.has_tiebreak(s, item_id):
        return None
    scale = scale_from_json(scale_json)
    a, b = ratings
    if not needs_tiebreak(
        scale.rating_code(a.value),
        scale.rating_code(b.value),
        unclear=(a.unclear, b.unclear),
        tolerance=float(design.get("tolerance", 0.0)),
    ):
        return None
    remaining = {str(k): v for k, v in store.remaining_work(s, study_id).items()}
    who = choose_tiebreak_annotator(remaining, {str(h) for h in store.holders(s, item_id)})
    if who is None:
        return None
    annotator_id = int(who)
    if not store.claim(
        s, study_id=study_id, item_id=item_id, annotator_id=annotator_id, created_at=utcnow()
    ):
        return None
    key = _order_key(s, annotator_id, store.twin_key(s, item_id))
    pos = store.add_slot(
        s, study_id=study_id, item_id=item_id, annotator_id=annotator_id, order_key=key
    )
    if pos is None:
        raise UsageProblem(t("could not add the tiebreak slot (the queue kept changing)"))
    annotation_store.forget_progress(s, annotator_id)
    return annotator_id


def _order_key(s: Transaction, annotator_id: int, twin: frozenset[str]) -> int:
    """Serving order key of a new tiebreak slot: among the annotator's next few pairs after
    the one they are on, never beside a showing of the same terms; after the last slot when
    they have finished, or when there is no room between two keys."""
    limit = TIEBREAK_SOON + 3
    rows = store.upcoming(s, annotator_id, limit + 1)
    _pos, last_key = store.last_slot(s, annotator_id)
    end = last_key + ORDER_GAP
    if not rows:
        return end
    truncated = len(rows) > limit
    queue = rows[:limit] if truncated else rows
    i = tiebreak_position([r.twin for r in queue], 0, twin)
    if i >= len(queue) and not truncated:
        return end
    lo, hi = rows[i - 1].order_key, rows[i].order_key
    return (lo + hi) // 2 if hi - lo >= 2 else end


def waiting(s: Transaction, *, study_id: int, annotator_id: int) -> int:
    """Pairs that could still bring *annotator_id* a tiebreak slot (0 unless the study is a
    2 + 1 design): fewer than two ratings so far, no tiebreak yet, none of theirs."""
    config, _scale_json = store.study_design(s, study_id)
    if not config.get("tiebreak"):
        return 0
    return store.waiting(s, study_id, annotator_id)


def tiebreak_pair_ids(current: pd.DataFrame) -> set[str]:
    """The pairs of a current-ratings frame that got a tie-break (third) rating."""
    if current.empty or "slot" not in current.columns:
        return set()
    return set(current.loc[current["slot"] == "tiebreak", C.PAIR_ID].astype(str))
