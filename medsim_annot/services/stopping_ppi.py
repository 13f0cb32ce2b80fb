"""The sequential audit's prediction-powered rule: when a study has stored predictions, each
group's accuracy interval is the PPI++ one (the doctors' verdicts on the rated pairs plus the
model's score on every pair of the group), checked at 97.5 % and reported at 95 % as the
classical rule is (:func:`medsim_annot.stats.ppi.ppi_group_stopping`); under active serving
the labelled pairs are reweighted by the inverse of the probability they were drawn with
(:func:`medsim_annot.stats.active.active_group_stopping`). Without predictions nothing here
runs and the classical rule decides.

:func:`load` reads the latest stored version's scores of the audit groups (in the caller's
transaction); :func:`with_predictions` replaces the accuracy figures and the decision of the
classical estimates of :func:`medsim_annot.services.stopping.estimate`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from medsim_annot.design.adaptive import MIN_NEGATIVES, MIN_POSITIVES, GroupEstimate
from medsim_annot.stats.active import active_group_stopping
from medsim_annot.stats.ppi import calibrate_scores, ppi_group_stopping
from medsim_annot.storage import Transaction
from medsim_annot.storage import predictions as pstore


@dataclass(frozen=True)
class StudyScores:
    """The latest stored predictions of a study's audit groups: their name and version, and
    per pair (item id) its group, automatic label, score and draw probability."""

    name: str
    version: int
    items: dict[int, pstore.GroupItem]

    @property
    def active(self) -> bool:
        """Whether the pairs were drawn with a known probability (active serving)."""
        return any(i.draw_probability is not None for i in self.items.values())

    @property
    def method(self) -> str:
        kind = "active PPI++ (inverse-probability weighted)" if self.active else "PPI++"
        return f"{kind} with predictions {self.name} v{self.version}"


def load(s: Transaction, study_id: int, group: str | None = None) -> StudyScores | None:
    """The study's latest stored predictions over its audit groups (*group* only when given),
    or ``None`` when it has none."""
    row = pstore.latest(s, study_id)
    if row is None:
        return None
    items = pstore.group_items(s, study_id, row.id, group)
    return StudyScores(row.name, row.version, {i.item_id: i for i in items})


def with_predictions(
    base: dict[str, GroupEstimate],
    truth: dict[int, float],
    scores: StudyScores,
    config: dict,
) -> dict[str, GroupEstimate]:
    """*base* (the classical estimate per group) with each group's accuracy, interval, pairs
    still needed and stopping decision from the prediction-powered rule. *truth*: the
    majority verdict (1/0, NaN: none) of every rated pair by item id; a pair of the group
    nobody rated is unlabelled."""
    target = float(config["target"])
    min_pos = int(config.get("min_positives", MIN_POSITIVES))
    min_neg = int(config.get("min_negatives", MIN_NEGATIVES))
    by_group: dict[str, list[pstore.GroupItem]] = {}
    for it in scores.items.values():
        if it.auto_label is not None:
            by_group.setdefault(it.group, []).append(it)
    out = dict(base)
    for g, b in base.items():
        items = by_group.get(g)
        if not items or b.n == 0:
            continue
        ids = [i.item_id for i in items]
        x = np.array([i.score for i in items], dtype=np.float64)
        label = np.array([i.auto_label for i in items], dtype=np.float64)
        t = np.array([truth.get(i, np.nan) for i in ids], dtype=np.float64)
        rated = np.array([i in truth for i in ids])
        labelled = ~np.isnan(t)
        p = calibrate_scores(x, np.where(labelled, t, np.nan), kind="probability")
        f = np.where(label == 1, p, 1 - p)
        y = (t == label) * 1.0
        pi = np.array([np.nan if i.draw_probability is None else i.draw_probability for i in items])
        if np.isfinite(pi).any():
            drawn = np.isfinite(pi)
            st = active_group_stopping(
                y,
                f,
                labelled=labelled & drawn,
                drawn=drawn,
                pi=np.where(drawn, pi, 1.0),
                target=target,
                positives=b.positives,
                negatives=b.negatives,
                min_positives=min_pos,
                min_negatives=min_neg,
            )
        else:
            st = ppi_group_stopping(
                y[labelled],
                f[labelled],
                f[~rated],
                target=target,
                positives=b.positives,
                negatives=b.negatives,
                min_positives=min_pos,
                min_negatives=min_neg,
            )
        e = st.estimate
        short = max(0, min_pos - b.positives) + max(0, min_neg - b.negatives)
        ratio = min(e.n / e.effective_n, 1.0) if e.effective_n > 0 else 1.0
        more = 0 if st.stop else max(math.ceil((b.n + b.more_needed) * ratio) - b.n, short, 1)
        out[g] = dataclasses.replace(
            b,
            accuracy=e.estimate,
            accuracy_low=e.low,
            accuracy_high=e.high,
            more_needed=int(more),
            stop=bool(st.stop),
            reason=st.reason,
        )
    return out
