"""Adaptive designs: a third rater only on disagreement ("2 + 1") and groups that
stop being served when their estimate is tight (sequential audit). Pure functions, no DB.

The store (``medsim_annot.storage.adaptive``), the simulation benchmark
(``benchmarks/bench_adaptive.py``) and ``medsim study plan`` all call these same functions, so
the benchmark measures the logic the service runs.

- :func:`needs_tiebreak` — do two ratings agree on one decisive value?
- :func:`choose_tiebreak_annotator` — who rates the third time (least remaining work).
- :func:`tiebreak_position` — where in their queue: soon, never next to the pair's twin.
- :func:`interleave_groups` — a queue that round-robins over groups (sequential audit).
- :func:`pairs_needed` — the sample size that makes the Wilson interval of a proportion
  (:mod:`medsim_annot.stats.proportion`) narrow enough.
- :func:`group_stopping` — the stopping rule for one group.
- :func:`expected_ratings` — the budget of a design before a study starts.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

from data_schemas.options import (
    CALIBRATION,
    DISAGREEMENT,
    DONT_KNOW_RATE,
    ERROR_RATE,
    PER_ITEM,
    TARGET_CI,
    TIEBREAK_TOLERANCE,
)
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.stats.proportion import wilson_half_width, wilson_interval

#: How many slots ahead of the annotator's current one a tiebreak slot may go.
TIEBREAK_SOON = 3
#: Default minimum positives and negatives (by automatic label) rated in a group before it
#: may stop.
MIN_POSITIVES = 10
MIN_NEGATIVES = 10
#: Nominal level of the interval the stopping check uses. Checking after every verdict
#: lowers the actual coverage of a fixed-width sequential interval below its nominal level
#: (Frey 2010); at 97.5 % the simulation benchmark measures >= 95 % actual coverage.
STOP_CONFIDENCE = 0.975


# ---- 2 + 1 -------------------------------------------------------------------------------------
def needs_tiebreak(
    first: float | None,
    second: float | None,
    *,
    unclear: tuple[bool, bool] = (False, False),
    tolerance: float = 0.0,
) -> bool:
    """Whether two ratings of a pair fail to agree on one decisive value, so a third rating
    is needed.

    Parameters
    ----------
    first, second : float or None
        The two ratings as scale codes; ``None`` or NaN is a no-decision rating (don't know).
    unclear : (bool, bool)
        The annotators' "unclear meaning" flags; either set means no agreement.
    tolerance : float
        For graded scales: codes that differ by at most *tolerance* agree (default 0: equal).

    Returns
    -------
    bool
        ``True`` when they differ by more than *tolerance*, or either is no decision or
        flagged unclear.

    Examples
    --------
    >>> needs_tiebreak(1, 1), needs_tiebreak(1, 0), needs_tiebreak(1, None)
    (False, True, True)
    >>> needs_tiebreak(2, 3, tolerance=1), needs_tiebreak(1, 3, tolerance=1)
    (False, True)
    >>> needs_tiebreak(1, 1, unclear=(False, True))
    True
    """
    TIEBREAK_TOLERANCE.check(tolerance)
    if any(unclear):
        return True
    if _missing(first) or _missing(second):
        return True
    assert first is not None and second is not None  # _missing ruled None out
    return abs(float(first) - float(second)) > tolerance + 1e-12


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def choose_tiebreak_annotator(
    remaining: Mapping[str, int], rated: Sequence[str] | set[str]
) -> str | None:
    """The annotator who gets the tiebreak slot: among those who have not rated the pair (nor
    hold a slot for it), the one with the least remaining work; ties go to the name that
    sorts first, so the choice is reproducible.

    Parameters
    ----------
    remaining : mapping name -> int
        Unrated slots left in each eligible annotator's queue (revoked annotators left out).
    rated : collection of str
        Annotators who rated the pair or already hold a slot for it.

    Returns
    -------
    str or None
        ``None`` when everyone has rated the pair.

    Examples
    --------
    >>> choose_tiebreak_annotator({"a": 5, "b": 2, "c": 2}, {"b"})
    'c'
    >>> choose_tiebreak_annotator({"a": 5}, {"a"}) is None
    True
    """
    taken = set(rated)
    free = [(int(n), name) for name, n in remaining.items() if name not in taken]
    return min(free)[1] if free else None


def tiebreak_position(queue: Sequence[Hashable], cursor: int, twin: Hashable) -> int:
    """Where a tiebreak slot goes in an annotator's queue: the index it is inserted at (it
    comes before ``queue[index]``), the earliest place after the slot the annotator is on,
    but never directly after (or before) a showing of the pair's twin.

    Parameters
    ----------
    queue : sequence of hashable
        The twin key of each slot in queue order (for instance the unordered pair of terms or
        concepts, so a pair and its swapped copy share a key).
    cursor : int
        Index of the slot the annotator is on (their first unrated one; ``len(queue)`` when
        they have finished). The new slot never goes at or before it: the screen they see
        does not change under them.
    twin : hashable
        The twin key of the tiebreak pair.

    Returns
    -------
    int
        Insertion index in ``cursor + 1 .. len(queue)`` (``len(queue)``: append): the first
        place free of the twin; the end of the queue when none is.

    Examples
    --------
    >>> tiebreak_position(["a", "b", "c", "d"], 0, "x")
    1
    >>> tiebreak_position(["a", "x", "c", "d"], 0, "x")
    3
    >>> tiebreak_position([], 0, "x")
    0
    """
    n = len(queue)
    cursor = max(0, min(int(cursor), n))
    first = min(cursor + 1, n)
    for i in range(first, n + 1):
        before = queue[i - 1] if i > 0 else None
        after = queue[i] if i < n else None
        if i > 0 and before == twin:
            continue
        if after == twin:
            continue
        return i
    return n


# ---- group-interleaved serving ------------------------------------------------------------------
def interleave_groups(
    groups: Sequence[Hashable], order: Sequence[Hashable] | None = None
) -> list[int]:
    """The serving order of a queue that round-robins over groups: one slot of each group in
    turn (in *order*, default the groups sorted), each group's slots in their given order; a
    group that runs out is skipped. Returns the indices of *groups* in serving order.

    A sequential audit serves groups interleaved so that every group gathers verdicts at the
    same pace and a group can stop while the others go on.

    Examples
    --------
    >>> interleave_groups(["a", "a", "a", "b", "c", "c"])
    [0, 3, 4, 1, 5, 2]
    >>> interleave_groups(["a", "b", "b"], order=["b", "a"])
    [1, 0, 2]
    """
    lanes: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        lanes.setdefault(g, []).append(i)
    keys = list(order) if order is not None else sorted(lanes, key=str)
    keys = [k for k in keys if k in lanes] + [k for k in lanes if k not in set(keys)]
    out: list[int] = []
    depth = max((len(v) for v in lanes.values()), default=0)
    for r in range(depth):
        out.extend(lanes[k][r] for k in keys if r < len(lanes[k]))
    return out


# ---- intervals and the stopping rule -----------------------------------------------------------
def pairs_needed(p: float, half_width: float, *, confidence: float = 0.95) -> int:
    """The smallest number of pairs whose Wilson interval at proportion *p* has a half-width
    of at most *half_width*.

    >>> pairs_needed(0.5, 0.05), pairs_needed(0.9, 0.05)
    (381, 141)
    """
    TARGET_CI.check(half_width)
    p = min(max(float(p), 0.0), 1.0)
    lo, hi = 1, 1
    while wilson_half_width(p, hi, confidence=confidence) > half_width:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if wilson_half_width(p, mid, confidence=confidence) <= half_width:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class GroupEstimate:
    """One group's audit estimate and stopping decision (see :func:`group_stopping`)."""

    n: int
    correct: int
    accuracy: float
    accuracy_low: float
    accuracy_high: float
    predicted_positive: int
    true_positive: int
    precision: float
    precision_low: float
    precision_high: float
    positives: int
    negatives: int
    more_needed: int
    precision_more_needed: int
    stop: bool
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def group_stopping(
    correct: int,
    n: int,
    *,
    predicted_positive: int = 0,
    true_positive: int = 0,
    positives: int = 0,
    negatives: int = 0,
    target: float = 0.05,
    min_positives: int = MIN_POSITIVES,
    min_negatives: int = MIN_NEGATIVES,
    confidence: float = 0.95,
    stop_confidence: float = STOP_CONFIDENCE,
) -> GroupEstimate:
    """Accuracy and precision of a group's automatic labels with Wilson intervals, how many
    more pairs the accuracy needs to reach the target, and whether the group stops.

    Parameters
    ----------
    correct, n : int
        Pairs of the group with a majority verdict (*n*) and those whose automatic label
        equals it (*correct*).
    predicted_positive, true_positive : int
        Of those, pairs labelled positive automatically, and those the majority confirms.
    positives, negatives : int
        Pairs with a verdict whose automatic label is 1 / 0 (the minimum applies to these).
    target : float
        Target half-width of the accuracy interval (``--target-ci``).
    min_positives, min_negatives : int
        A group never stops before this many of each (default 10 + 10), so a lucky start
        cannot stop it.
    confidence : float
        Level of the intervals reported (default 95 %).
    stop_confidence : float
        Level of the interval the stopping check uses (default :data:`STOP_CONFIDENCE`).

    Returns
    -------
    GroupEstimate
        ``stop`` is true when the minimum is met and the half-width
        :math:`(high - low) / 2` of the accuracy's Wilson interval at *stop_confidence* is
        at most *target*.

    Notes
    -----
    A fixed-width sequential confidence interval (Chow & Robbins 1965): sample until the
    interval is narrow enough. Checked after every verdict, an interval's actual coverage
    falls below its nominal level (Frey 2010), so the check uses *stop_confidence* (97.5 %)
    while the figures shown are at *confidence* (95 %); the simulation benchmark measures the
    actual coverage. ``more_needed`` is :func:`pairs_needed` (at *stop_confidence*) at the
    current accuracy minus *n*, and at least what the minimum still requires.

    References
    ----------
    Chow, Y. S. & Robbins, H. (1965). On the asymptotic theory of fixed-width sequential
    confidence intervals for the mean. *Ann. Math. Statist.* 36(2), 457–462.
    https://doi.org/10.1214/aoms/1177700156

    Frey, J. (2010). Fixed-width sequential confidence intervals for a proportion. *The
    American Statistician* 64(3), 242–249. https://doi.org/10.1198/tast.2010.09140

    Examples
    --------
    >>> g = group_stopping(145, 150, positives=75, negatives=75, target=0.05)
    >>> round(g.accuracy, 3), g.stop
    (0.967, True)
    >>> group_stopping(12, 12, positives=6, negatives=6).stop  # below the minimum
    False
    """
    acc = correct / n if n else float("nan")
    lo, hi = wilson_interval(correct, n, confidence=confidence)
    prec = true_positive / predicted_positive if predicted_positive else float("nan")
    plo, phi = wilson_interval(true_positive, predicted_positive, confidence=confidence)
    short = max(0, min_positives - positives) + max(0, min_negatives - negatives)
    need = pairs_needed(acc if n else 0.5, target, confidence=stop_confidence)
    more = max(need - n, short, 0)
    pneed = pairs_needed(prec if predicted_positive else 0.5, target, confidence=stop_confidence)
    pmore = max(pneed - predicted_positive, 0)
    enough = positives >= min_positives and negatives >= min_negatives
    slo, shi = wilson_interval(correct, n, confidence=stop_confidence)
    narrow = n > 0 and (shi - slo) / 2 <= target + 1e-12
    if not enough:
        reason = f"needs {min_positives} positives and {min_negatives} negatives first"
    elif narrow:
        reason = f"accuracy interval within ±{target:g} ({stop_confidence:.1%} Wilson)"
    else:
        reason = f"accuracy interval wider than ±{target:g} ({stop_confidence:.1%} Wilson)"
    return GroupEstimate(
        n=int(n),
        correct=int(correct),
        accuracy=acc,
        accuracy_low=lo,
        accuracy_high=hi,
        predicted_positive=int(predicted_positive),
        true_positive=int(true_positive),
        precision=prec,
        precision_low=plo,
        precision_high=phi,
        positives=int(positives),
        negatives=int(negatives),
        more_needed=int(more),
        precision_more_needed=int(pmore),
        stop=bool(enough and narrow),
        reason=reason,
    )


# ---- budget ------------------------------------------------------------------------------------
def disagreement_rate(error: float, dont_know: float, *, levels: int = 2) -> float:
    """Chance that two annotators with the given per-rating error and don't-know rates fail
    to agree on one decisive value (the share of pairs that get a tiebreak), assuming
    independent errors spread evenly over the other ``levels - 1`` values.

    >>> round(disagreement_rate(0.05, 0.02), 4)
    0.1308
    """
    ERROR_RATE.check(error)
    DONT_KNOW_RATE.check(dont_know)
    decisive = 1 - dont_know
    right = decisive * (1 - error)
    wrong_each = decisive * error / max(levels - 1, 1)
    agree = right * right + (levels - 1) * wrong_each * wrong_each
    return 1 - agree


def expected_ratings(
    groups: Mapping[str, tuple[int, float]] | Mapping[str, tuple[int, int, float]],
    *,
    annotators: int,
    per_item: int | None = None,
    tiebreak: bool = False,
    calibration: int = 0,
    agreement_error: float = 0.05,
    dont_know: float = 0.02,
    target_ci: float | None = None,
    min_positives: int = MIN_POSITIVES,
    min_negatives: int = MIN_NEGATIVES,
    levels: int = 2,
    disagreement: float | None = None,
) -> dict:
    """The expected number of ratings a design needs, per group and in total.

    Parameters
    ----------
    groups : mapping name -> (pairs, accuracy)
        Pairs in each group and the expected accuracy of its automatic labels (from a pilot,
        or a default such as 0.9).
    annotators : int
        n annotators.
    per_item : int or None
        k annotators per pair (``None``: all rate all).
    tiebreak : bool
        2 + 1: a third rating only where the first two disagree (needs k = 2).
    calibration : int
        Pairs every annotator rates (spread over the groups in proportion to their size).
    agreement_error, dont_know : float
        Per-rating error and don't-know rates of a doctor (from a pilot's agreement).
    target_ci : float or None
        Sequential stopping: each group stops after the larger of :func:`pairs_needed` at its
        accuracy and the minimum positives + negatives (never more than it has).
    disagreement : float, optional
        The share of pairs whose first two ratings do not agree (from a pilot); overrides the
        one :func:`disagreement_rate` derives from *agreement_error* and *dont_know*.

    Returns
    -------
    dict
        ``groups`` (per group: ``pairs``, ``pairs_rated``, ``ratings``), ``ratings`` (total),
        ``all_rate_all`` (ratings if everyone rated every pair), ``saving`` (share of those
        saved) and ``ratings_per_pair``.

    Examples
    --------
    >>> out = expected_ratings({"g": (200, 0.9)}, annotators=3, per_item=2, tiebreak=True,
    ...                        calibration=20)
    >>> out["ratings"], out["all_rate_all"]
    (444, 600)
    """
    n = int(annotators)
    if n < 1:
        raise UsageProblem(t("a study needs at least one annotator"))
    k = n if per_item is None else int(PER_ITEM.within(high=n).check(per_item))
    if tiebreak and (k != 2 or n < 3):
        raise UsageProblem(
            t(
                "the 2 + 1 design (tiebreak) needs 2 annotators per pair (per_item) and at "
                "least 3 annotators"
            )
        )
    total_pairs = sum(int(g[0]) for g in groups.values())
    CALIBRATION.within(high=total_pairs).check(calibration)
    if disagreement is not None:
        DISAGREEMENT.check(disagreement)
    if not tiebreak:
        d = 0.0
    elif disagreement is not None:
        d = float(disagreement)
    else:
        d = disagreement_rate(agreement_error, dont_know, levels=levels)
    per_main = k + d
    out_groups = {}
    total = 0.0
    for name, spec in groups.items():
        size, acc = int(spec[0]), float(spec[-1])
        calib = calibration * size / total_pairs if total_pairs else 0.0
        rated = float(size)
        if target_ci is not None:
            need = max(
                pairs_needed(acc, target_ci, confidence=STOP_CONFIDENCE),
                min_positives + min_negatives,
            )
            rated = float(min(size, max(need, calib)))
        main = max(rated - calib, 0.0)
        ratings = calib * n + main * per_main
        out_groups[str(name)] = {
            "pairs": size,
            "pairs_rated": int(math.ceil(rated)),
            "ratings": int(math.ceil(ratings)),
        }
        total += ratings
    total_i = int(math.ceil(total))
    full = total_pairs * n
    return {
        "groups": out_groups,
        "ratings": total_i,
        "all_rate_all": full,
        "saving": 1 - total_i / full if full else 0.0,
        "ratings_per_pair": total_i / total_pairs if total_pairs else 0.0,
        "tiebreak_share": d,
    }
