"""The store side of the sequential audit: groups that stop being served when
their accuracy estimate is tight.

A study created with ``--target-ci HALF_WIDTH`` keeps ``{"stopping": {"target", "group_by",
"min_positives", "min_negatives", "enabled"}}`` in its config and each pair's group in
``items.audit_group``. :func:`after_rating` runs inside
:func:`~medsim_annot.services.annotation.submit_rating`'s transaction, right after the
2 + 1 hook: it computes the group's accuracy and precision of the automatic labels against
the doctors' current majority (strict majority of the current ratings of the pair's
non-duplicate slots, as in :func:`medsim_annot.stats.audit_labels`) over the pairs with a
decided majority, and asks :func:`medsim_annot.design.adaptive.group_stopping` whether the
group stops. A group that stops gets one ``group_stops`` row (unique per group: of two
ratings finishing it at once, one claims it) and an event ``group_stopped`` (actor
``system``); its remaining unrated slots are withdrawn (``withdrawn_at`` set, never deleted).
A rating that still arrives for a withdrawn slot is stored as usual.

:func:`set_stopping` is ``medsim study stopping NAME on|off`` and the dashboard's switch: off
serves every withdrawn slot again; on re-evaluates every group at once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from data_schemas import options
from data_schemas.scales import Scale, scale_from_json
from medsim_annot.design.adaptive import (
    MIN_NEGATIVES,
    MIN_POSITIVES,
    GroupEstimate,
    group_stopping,
)
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services import stopping_ppi as ppi_stop
from medsim_annot.services.study_handle import Study
from medsim_annot.stats.majority import majority_from_counts
from medsim_annot.storage import Transaction, session_scope, utcnow, with_retry
from medsim_annot.storage import annotation as annotation_store
from medsim_annot.storage import events as events_store
from medsim_annot.storage import stopping as store
from medsim_annot.storage import studies as studies_store
from medsim_annot.storage import tiebreak as tiebreak_store

#: Actor of the events the stopping rule records by itself.
SYSTEM_ACTOR = "system"
#: What joins a pair's values of the group columns into its group name.
GROUP_SEP = " / "


def stopping_config(
    target: float,
    group_by: list[str],
    *,
    min_positives: int = MIN_POSITIVES,
    min_negatives: int = MIN_NEGATIVES,
) -> dict:
    """The study config entry of a sequential audit (checked)."""
    target = float(options.TARGET_CI.check(target))
    options.MIN_POSITIVES.check(min_positives)
    options.MIN_NEGATIVES.check(min_negatives)
    return {
        "target": target,
        "group_by": list(group_by),
        "min_positives": int(min_positives),
        "min_negatives": int(min_negatives),
        "enabled": True,
    }


def group_keys(pairs: pd.DataFrame, group_by: list[str]) -> list[str]:
    """Each pair's group name: its values of *group_by* joined by " / " ("all" without
    group columns); a missing value is the empty string."""
    if not group_by:
        return ["all"] * len(pairs)
    cols = pairs[group_by].astype("string").fillna("")
    return [GROUP_SEP.join(map(str, r)) for r in cols.itertuples(index=False, name=None)]


def estimate(
    ratings: list[store.GroupRating],
    scale: Scale,
    config: dict,
    scores: ppi_stop.StudyScores | None = None,
) -> dict[str, GroupEstimate]:
    """Per group: :func:`group_stopping` over the pairs with a decided strict majority
    (positive or negative value of the scale) and an automatic label; with the study's
    stored predictions (*scores*, :func:`medsim_annot.services.stopping_ppi.load`), the
    accuracy, its interval and the decision come from the prediction-powered rule
    (:func:`medsim_annot.services.stopping_ppi.with_predictions`)."""
    if not scale.has_polarity:
        raise UsageProblem(
            t("the {scale} scale has no positive and negative values", scale=scale.name)
        )
    assert scale.positive is not None and scale.negative is not None
    pos, neg = scale.code(scale.positive), scale.code(scale.negative)
    if not ratings:
        return {}
    # Plain arrays, no frame: this runs after every rating (a group of 500 pairs: ~1 ms).
    item_row: dict[int, int] = {}
    seen: dict[str, float] = {}
    group_of: list[str] = []
    labels: list[float] = []
    row = np.empty(len(ratings), dtype=np.int64)
    codes = np.empty(len(ratings), dtype=np.float64)
    for k, r in enumerate(ratings):
        i = item_row.get(r.item_id)
        if i is None:
            i = item_row[r.item_id] = len(group_of)
            group_of.append(r.group)
            labels.append(np.nan if r.auto_label is None else float(r.auto_label))
        row[k] = i
        c = seen.get(r.value)
        if c is None:
            c = seen[r.value] = scale.rating_code(r.value)
        codes[k] = c
    decisive = ~np.isnan(codes)
    domain = np.unique(codes[decisive])
    n_items = len(group_of)
    n_cast = np.bincount(row, minlength=n_items).astype(np.float64)
    counts = np.zeros((n_items, len(domain)))
    if len(domain):
        np.add.at(counts, (row[decisive], np.searchsorted(domain, codes[decisive])), 1)
    major = majority_from_counts(counts, n_cast, domain, "strict")
    truth = np.where(major == pos, 1.0, np.where(major == neg, 0.0, np.nan))
    label = np.asarray(labels, dtype=np.float64)
    scored = ~np.isnan(truth) & ~np.isnan(label)
    groups = np.asarray(group_of, dtype=object)
    out = {}
    for g in sorted(set(groups)):
        sel = scored & (groups == g)
        truth_sel, lab = truth[sel], label[sel]
        out[str(g)] = group_stopping(
            int((truth_sel == lab).sum()),
            int(sel.sum()),
            predicted_positive=int((lab == 1).sum()),
            true_positive=int(((lab == 1) & (truth_sel == 1)).sum()),
            positives=int((lab == 1).sum()),
            negatives=int((lab == 0).sum()),
            target=float(config["target"]),
            min_positives=int(config.get("min_positives", MIN_POSITIVES)),
            min_negatives=int(config.get("min_negatives", MIN_NEGATIVES)),
        )
    if scores is not None and scores.items:
        ids = list(item_row)
        truth_by_item = {i: float(truth[item_row[i]]) for i in ids}
        out = ppi_stop.with_predictions(out, truth_by_item, scores, config)
    return out


def _verdict(values: list[str], scale: Scale) -> float:
    """The strict-majority code of one pair's current ratings (NaN: no majority)."""
    codes = np.array([scale.rating_code(v) for v in values], dtype=np.float64)
    decisive = codes[~np.isnan(codes)]
    domain = np.unique(decisive)
    if not len(domain):
        return np.nan
    counts = np.array([[np.sum(decisive == d) for d in domain]], dtype=np.float64)
    return float(majority_from_counts(counts, np.array([len(codes)], float), domain)[0])


def _same_verdict(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _stop(
    s: Transaction, study_id: int, group: str, est: GroupEstimate | None, *, target: float, at
) -> bool:
    """Stop *group* if it is not stopped yet (one event) and withdraw its unrated slots."""
    detail: dict = {"group": group, "target": target}
    if est is not None:
        detail.update(
            n=est.n,
            accuracy=est.accuracy,
            accuracy_ci=[est.accuracy_low, est.accuracy_high],
            precision=None if math.isnan(est.precision) else est.precision,
            precision_ci=[est.precision_low, est.precision_high],
            positives=est.positives,
            negatives=est.negatives,
            reason=est.reason,
        )
    first = store.claim_stop(s, study_id=study_id, group=group, at=at, detail=detail)
    withdrawn = store.withdraw_group(s, study_id, group, at)
    store.bump_queue_version(s, withdrawn)
    for a in withdrawn:
        annotation_store.forget_progress(s, a)
    if first:
        detail["withdrawn"] = sum(withdrawn.values())
        _event(s, study_id, "group_stopped", detail, actor=SYSTEM_ACTOR, at=at)
    return first


def _event(
    s: Transaction, study_id: int, kind: str, detail: dict, *, actor: str | None, at
) -> None:
    events_store.add_event(s, kind, study_id=study_id, detail=detail, at=at, actor=actor)


def after_rating(s: Transaction, *, study_id: int, item_id: int, assignment_id: int) -> bool:
    """Evaluate the rated pair's group (inside the caller's transaction); ``True`` when the
    group stopped now. One config read when the study has no target."""
    config, scale_json = tiebreak_store.study_design(s, study_id)
    stopping = config.get("stopping")
    if not stopping or not stopping.get("enabled", True):
        return False
    withdrawn, annotator_id = store.slot_withdrawn(s, assignment_id)
    if withdrawn:  # a rating for a withdrawn slot: stored, and counted again in the total
        store.bump_queue_version(s, [annotator_id])
    group = store.item_group(s, item_id)
    if group is None:
        return False
    at, target = utcnow(), float(stopping["target"])
    if store.is_stopped(s, study_id, group):
        # Stopped already: withdraw slots added since (a tiebreak slot of the group).
        _stop(s, study_id, group, None, target=target, at=at)
        return False
    scale = scale_from_json(scale_json)
    now, before = store.pair_values(s, item_id, assignment_id)
    if _same_verdict(_verdict(now, scale), _verdict(before, scale)):
        # The group's figures change only when a pair's verdict does: nothing to decide
        # (a few index reads instead of the whole group).
        return False
    scores = ppi_stop.load(s, study_id, group)
    est = estimate(store.group_ratings(s, study_id, group), scale, stopping, scores).get(group)
    if est is None or not est.stop:
        return False
    return _stop(s, study_id, group, est, target=target, at=at)


def _study(s: Transaction, study: Study) -> tuple[int, dict, str]:
    """*study*'s id, and its config and scale as stored now (read in transaction *s*)."""
    config, scale_json = tiebreak_store.study_design(s, study.id)
    return study.id, config, scale_json


@dataclass(frozen=True)
class StoppingSwitch:
    """What turning study *study*'s sequential stopping on or off changed: off serves
    ``restored`` withdrawn slots again and releases ``groups_released``; on stops
    ``groups_stopped`` at once. :meth:`to_dict` (the fields of the switch made, in order) is
    what ``medsim study stopping --json`` prints and the event records."""

    study: str
    stopping: str  # "on" | "off"
    restored: int | None = None
    groups_released: list[str] | None = None
    groups_stopped: list[str] | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def set_stopping(study: Study, enabled: bool) -> StoppingSwitch:
    """Turn the sequential stopping of *study* on or off (``medsim study stopping``).

    Off: every withdrawn slot is served again (``withdrawn_at`` cleared) and the stopped
    groups are forgotten; event ``stopping_off``. On: every group is evaluated at once and
    those within the target stop; event ``stopping_on``. The events name the acting admin
    (:func:`medsim_annot.storage.events.acting_as`). Returns what changed."""
    name = study.name

    def run() -> StoppingSwitch:
        with session_scope(study.engine) as s:
            sid, config, scale_json = _study(s, study)
            stopping = config.get("stopping")
            if not stopping:
                raise UsageProblem(
                    t(
                        "study '{name}' has no sequential audit: create it with a target "
                        "half-width (target_ci)",
                        name=name,
                    )
                )
            at = utcnow()
            config["stopping"] = {**stopping, "enabled": bool(enabled)}
            studies_store.set_config(s, sid, config)
            if not enabled:
                restored, groups = store.restore_all(s, sid)
                store.bump_queue_version(s, restored)
                for a in restored:
                    annotation_store.forget_progress(s, a)
                off = StoppingSwitch(name, "off", sum(restored.values()), groups)
                _event(s, sid, "stopping_off", off.to_dict(), actor=None, at=at)
                return off
            _event(s, sid, "stopping_on", StoppingSwitch(name, "on").to_dict(), actor=None, at=at)
            ests = estimate(
                store.group_ratings(s, sid),
                scale_from_json(scale_json),
                stopping,
                ppi_stop.load(s, sid),
            )
            stopped = []
            for g, est in sorted(ests.items()):
                if est.stop and _stop(s, sid, g, est, target=float(stopping["target"]), at=at):
                    stopped.append(g)
            return StoppingSwitch(name, "on", groups_stopped=stopped)

    return with_retry(run)


#: How the dashboard names the intervals it shows.
INTERVAL_METHOD = "Wilson score interval, 95%"


@dataclass(frozen=True)
class AuditStatus:
    """The sequential audit of one study, for the dashboard's panel (one row per group)."""

    study: str
    enabled: bool
    target: float
    group_by: list[str]
    min_positives: int
    min_negatives: int
    groups: pd.DataFrame
    method: str = INTERVAL_METHOD


#: Columns of :attr:`AuditStatus.groups`.
STATUS_COLUMNS = (
    "group",
    "pairs",
    "n",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "precision",
    "precision_low",
    "precision_high",
    "positives",
    "negatives",
    "pairs_needed",
    "open_slots",
    "withdrawn_slots",
    "status",
)


def audit_status(study: Study) -> AuditStatus | None:
    """Per group of *study*: rated pairs with a verdict (``n``), accuracy and precision
    of the automatic labels with Wilson 95 % intervals, the pairs still needed to reach the
    target (:func:`~medsim_annot.design.adaptive.pairs_needed` at the stopping level, at
    least what the minimum requires; 0 once stopped), unrated slots still served, withdrawn
    slots and ``serving``/``stopped``. ``None`` for a study without ``--target-ci``."""
    name = study.name

    def run() -> AuditStatus | None:
        with session_scope(study.engine) as s:
            sid, config, scale_json = _study(s, study)
            stopping = config.get("stopping")
            if not stopping:
                return None
            scores = ppi_stop.load(s, sid)
            ests = estimate(
                store.group_ratings(s, sid), scale_from_json(scale_json), stopping, scores
            )
            slots = store.group_slots(s, sid)
            stopped = store.stopped_groups(s, sid)
        rows = []
        for g, sl in slots.items():
            est = ests.get(g) or group_stopping(
                0,
                0,
                target=float(stopping["target"]),
                min_positives=int(stopping.get("min_positives", MIN_POSITIVES)),
                min_negatives=int(stopping.get("min_negatives", MIN_NEGATIVES)),
            )
            rows.append(
                {
                    "group": g,
                    "pairs": sl.pairs,
                    "n": est.n,
                    "accuracy": est.accuracy,
                    "accuracy_low": est.accuracy_low if est.n else float("nan"),
                    "accuracy_high": est.accuracy_high if est.n else float("nan"),
                    "precision": est.precision,
                    "precision_low": (
                        est.precision_low if est.predicted_positive else float("nan")
                    ),
                    "precision_high": (
                        est.precision_high if est.predicted_positive else float("nan")
                    ),
                    "positives": est.positives,
                    "negatives": est.negatives,
                    "pairs_needed": 0 if g in stopped else est.more_needed,
                    "open_slots": sl.open,
                    "withdrawn_slots": sl.withdrawn,
                    "status": "stopped" if g in stopped else "serving",
                }
            )
        return AuditStatus(
            study=name,
            enabled=bool(stopping.get("enabled", True)),
            target=float(stopping["target"]),
            group_by=list(stopping.get("group_by", [])),
            min_positives=int(stopping.get("min_positives", MIN_POSITIVES)),
            min_negatives=int(stopping.get("min_negatives", MIN_NEGATIVES)),
            groups=pd.DataFrame(rows, columns=list(STATUS_COLUMNS)),
            method=INTERVAL_METHOD if scores is None else f"{scores.method}, 95%",
        )

    return with_retry(run)
