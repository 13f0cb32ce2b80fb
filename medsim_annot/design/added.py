"""The queue of an annotator added to a study after it was created: built by the same design
code as the queues planned at creation (:func:`~medsim_annot.design.assignment.plan_study`),
from the design stored in the study's config.

* A study created in file order (``order: file``, ``--file-order``) keeps file order: every
  pair, as the others got.
* Otherwise the queue holds the study's calibration pairs (kind ``calibration``) and its
  share of the main pairs: every main pair in an "all rate all" design; in a k-of-n design
  (``per_item`` k of ``annotators`` n) ``round(k / n * main pairs)`` of them, those with the
  fewest planned raters first (ties broken with the seed), so the late annotator tops up the
  least-rated pairs. The balanced design itself counts the n annotators it was planned for:
  the added annotator's pairs get one rating more than the design's k, and the config lists
  the added annotators apart (``added_annotators``).
* The queue is shuffled with the seed (the study's, or a new one when the study recorded
  none), on a stream of its own (the number of annotators before: no two annotators share
  an order), served group-interleaved in a study with a sequential audit, and gets the
  study's check slots and duplicate slots as at creation.

Pure and seeded: the same arguments give the same queue.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .adaptive import interleave_groups
from .assignment import Slot, _rng, add_checks, add_duplicates


@dataclass(frozen=True)
class AddedQueue:
    """An added annotator's queue and how it was built (what the config records)."""

    slots: list[Slot]
    #: ``{"order", "seed", "stream", "main", "main_pairs", "share", "calibration",
    #: "duplicates", "checks"}``: ``order`` is ``file`` or ``shuffled``; ``share`` says
    #: how the main pairs were chosen.
    facts: dict

    def to_config(self, name: str) -> dict:
        return {"name": name, **self.facts}


def added_queue(
    n_items: int,
    config: Mapping,
    *,
    stream: int,
    seed: int,
    calibration: Sequence[int] = (),
    checks: Sequence[int] = (),
    planned: Sequence[int] | None = None,
    groups: Sequence[Hashable] | None = None,
) -> AddedQueue:
    """The queue of an annotator added to a study of *n_items* pairs whose design is
    *config* (the study's stored config).

    Parameters
    ----------
    stream : int
        The annotator's own random stream: the number of annotators the study had before.
    seed : int
        The study's seed (``config["seed"]``), or a new one to record when it has none.
    calibration, checks : sequence of int
        The study's calibration pairs and check pairs (item indices in file order).
    planned : sequence of int, optional
        Per pair, the annotators with a main slot for it now (k-of-n: the least-planned pairs
        are given first).
    groups : sequence, optional
        Each pair's group in a study with a sequential audit.

    Examples
    --------
    >>> q = added_queue(6, {"order": "file"}, stream=2, seed=0)
    >>> [s.item for s in q.slots], q.facts["order"]
    ([0, 1, 2, 3, 4, 5], 'file')
    >>> cfg = {"design": "k_of_n", "per_item": 1, "annotators": 2, "seed": 3}
    >>> q = added_queue(6, cfg, stream=2, seed=3, planned=[1, 1, 1, 1, 1, 1])
    >>> q.facts["main"], q.facts["main_pairs"], q.facts["order"]
    (3, 6, 'shuffled')
    """
    if config.get("order") == "file":
        slots = [Slot(i) for i in range(n_items)]
        return AddedQueue(
            slots,
            {
                "order": "file",
                "seed": None,
                "stream": int(stream),
                "main": n_items,
                "main_pairs": n_items,
                "share": "every pair, in file order (the study was created in file order)",
                "calibration": 0,
                "duplicates": 0,
                "checks": 0,
            },
        )
    calib = sorted({int(i) for i in calibration})
    check_set = sorted({int(i) for i in checks})
    skip = set(calib) | set(check_set)
    main = [i for i in range(n_items) if i not in skip]
    k, n = config.get("per_item"), config.get("annotators")
    if config.get("design") == "k_of_n" and k and n and int(k) < int(n):
        want = int(round(len(main) * int(k) / int(n)))
        counts = np.asarray(
            [int(planned[i]) if planned is not None else 0 for i in main], dtype=np.int64
        )
        tie = _rng(seed, 8, stream).permutation(len(main))
        order = np.lexsort((tie, counts))  # fewest planned raters first, ties at random
        chosen = sorted(main[int(j)] for j in order[:want])
        share = (
            f"{want} of {len(main)} main pairs: the design's share k/n = {k}/{n}, the pairs "
            "with the fewest planned raters first; the balanced design counts its "
            f"{n} annotators, so these pairs get a rating beyond its {k}"
        )
        design = {"per_item": int(k), "annotators": int(n)}  # the share's k and n
    else:
        design = {}
        chosen = main
        share = f"every one of the {len(main)} main pairs (all rate all)"
    q = [Slot(i, "calibration") for i in calib] + [Slot(i) for i in chosen]
    if config.get("shuffle", True):
        perm = _rng(seed, 4, stream).permutation(len(q))
        q = [q[i] for i in perm]
    if groups is not None and config.get("stopping"):
        names_g = sorted({str(g) for g in groups})
        order_g = [names_g[i] for i in _rng(seed, 5, stream).permutation(len(names_g))]
        q = [q[i] for i in interleave_groups([str(groups[x.item]) for x in q], order_g)]
    if check_set:
        q = add_checks(q, check_set, config.get("check_rate"), seed, stream=stream)
    duplicates = float(config.get("duplicates") or 0.0)
    if duplicates:
        q = add_duplicates(q, duplicates, seed, stream=stream)
    return AddedQueue(
        q,
        {
            "order": "shuffled" if config.get("shuffle", True) else "design",
            "seed": int(seed),
            "stream": int(stream),
            "main": len(chosen),
            "main_pairs": len(main),
            "share": share,
            **design,
            "calibration": len(calib),
            "duplicates": sum(s.kind == "duplicate" for s in q),
            "checks": sum(s.kind == "check" for s in q),
        },
    )
