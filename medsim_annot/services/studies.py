"""Study use cases: create, list, describe, import completed studies, export ratings, and
read a study's pairs and current ratings as frames for the statistics.

Every write happens in one transaction (:func:`medsim_annot.storage.session_scope`): a
failure leaves the database as it was.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from data_schemas import columns as C
from data_schemas.ehr_rel import is_ehr_rel, read_ehr_rel
from data_schemas.errors import InputError, Problem
from data_schemas.pairs import validate_pairs
from data_schemas.practice import PracticeRow
from data_schemas.ratings import to_ratings_frame, validate_ratings
from data_schemas.scales import RELATEDNESS_0_3, Scale, load_scale
from medsim_annot.design.assignment import Slot
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.io import read_table, write_table
from medsim_annot.services.people.auth import hash_code, new_access_code
from medsim_annot.services.people.names import check_annotator_name, check_study_name
from medsim_annot.services.practice.setup import (
    PracticeSettings,
    split_pairs,
    store_practice_pairs,
)
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import (
    Engine,
    Source,
    Transaction,
    bulk,
    engine_of,
    get_engine,
    session_scope,
    utcnow,
)
from medsim_annot.storage import arrow as arrow_store
from medsim_annot.storage import events as events_store
from medsim_annot.storage import studies as store
from medsim_annot.storage.arrow import RatingArrays

ITEM_COLUMNS = (
    C.AUTO_LABEL,
    C.DATASET,
    C.DIFFICULTY,
    C.NEGATIVE_STRATEGY,
    C.CONCEPT_ID_1,
    C.CONCEPT_ID_2,
)


# --------------------------------------------------------------------------- reading files
def load_pairs(path: str | Path) -> pd.DataFrame:
    """Read and validate a pairs file (any supported format)."""
    frame = read_table(path)
    return validate_pairs(frame, str(path))


# --------------------------------------------------------------------------- create
def check_answer_values(
    frame: pd.DataFrame, scale: Scale, file: str | None = None
) -> dict[int, str]:
    """The known answers of a pairs frame's ``check_answer`` column, row index to the value
    as ratings store it; empty cells are not check pairs. A value off the scale or one that
    is no decision ("don't know" cannot be a known answer) is an error naming the row."""
    if C.CHECK_ANSWER not in frame.columns:
        return {}
    out: dict[int, str] = {}
    problems: list[Problem] = []
    for i, raw in enumerate(frame[C.CHECK_ANSWER].tolist()):
        text = "" if raw is None or (isinstance(raw, float) and np.isnan(raw)) else str(raw)
        if text.strip() == "":
            continue
        try:
            value = scale.canonical(text)
        except ValueError as exc:
            problems.append(Problem(str(exc), row=i + 2, column=C.CHECK_ANSWER))
            continue
        if scale.is_no_decision(value):
            problems.append(
                Problem(
                    t(
                        "'{value}' is no decision: a check pair needs a known answer",
                        value=text.strip(),
                    ),
                    row=i + 2,
                    column=C.CHECK_ANSWER,
                )
            )
            continue
        out[i] = str(Scale.display(value))
    if problems:
        raise InputError(problems, file)
    return out


def create_study(
    name: str,
    pairs: pd.DataFrame,
    scale: Scale,
    annotators: list[str] | None = None,
    *,
    queues: dict[str, list[Slot]] | None = None,
    config: dict | None = None,
    guideline: str | None = None,
    audit_groups: list[str] | None = None,
    practice: list[PracticeRow] | None = None,
    file: str | None = None,
    engine: Engine | None = None,
) -> dict:
    """Create study *name* from a validated pairs frame.

    Rows with a ``practice_answer`` are the study's practice pairs (served before the real
    queue, :mod:`medsim_annot.services.practice`), not real pairs; *practice* gives them
    instead when the caller split the frame already (and planned *queues* on the rest).
    A practice answer off the scale or an explanation over the comment cap is an
    :class:`InputError` naming *file*, row and column; nothing is stored.

    Without *queues* every annotator gets every pair in file order (the AAAI 2020 design).
    *audit_groups* (one per pair, a study with a sequential audit) is stored as each pair's
    ``audit_group``.
    Returns ``{"study", "items", "annotators": [{"name", "access_code"}]}``; access codes
    are shown once here and stored only hashed.

    A big study is written in batches (:data:`medsim_annot.storage.bulk.BATCH_ROWS` rows per
    transaction) so that doctors rating other studies are never locked out on SQLite; the
    study is invisible to annotators (``ready = false``) until its last batch is written,
    and removed again if the create fails half-way — nothing is left behind.
    """
    name = check_study_name(name)
    annotators = list(
        dict.fromkeys(check_annotator_name(a) for a in (annotators or []) if a.strip())
    )
    if queues is not None:
        annotators = list(dict.fromkeys([*annotators, *queues]))
    engine = engine or get_engine()
    if practice is None:
        pairs, practice = split_pairs(pairs, scale, file)
        if practice and queues is not None:
            raise ValueError("split the practice pairs off before planning the queues")
    answers = check_answer_values(pairs, scale)
    config = dict(config or {})
    if practice and "practice" not in config:
        config["practice"] = PracticeSettings().to_config()
    codes: list[dict] = []
    with session_scope(engine) as s:
        if store.study_id(s, name) is not None:
            raise UsageProblem(t("a study named '{name}' already exists", name=name))
        study_id = store.insert_study(
            s,
            name=name,
            scale_json=scale.to_json(),
            guideline=guideline if guideline is not None else scale.guideline,
            config=config or {},
            created_at=utcnow(),
            ready=False,
        )
        if practice:
            store_practice_pairs(s, study_id, practice)
    try:
        bulk.insert_items(engine, study_id, _new_items(pairs, audit_groups, answers))
        item_ids = bulk.item_ids(engine, study_id)
        for who in annotators:
            code = new_access_code()
            with session_scope(engine) as s:
                ann_id = store.insert_annotator(
                    s,
                    study_id=study_id,
                    name=who,
                    code_hash=hash_code(code),
                    active=True,
                    created_at=utcnow(),
                )
            queue = (
                queues[who]
                if queues is not None and who in queues
                else [Slot(i) for i in range(len(item_ids))]
            )
            bulk.insert_queue(engine, study_id, ann_id, item_ids, queue)
            codes.append({"name": who, "access_code": code})
        bulk.mark_ready(
            engine,
            study_id,
            "study_created",
            utcnow(),
            detail={
                "items": len(item_ids),
                "annotators": annotators,
                "scale": scale.name,
                "config": config or {},
            },
        )
    except BaseException:
        bulk.discard_study(engine, study_id)
        raise
    return {"study": name, "items": len(pairs), "annotators": codes}


def _new_items(
    pairs: pd.DataFrame,
    audit_groups: list[str] | None = None,
    answers: dict[int, str] | None = None,
) -> list[store.NewItem]:
    """The pairs as the store takes them: item texts ``""`` when absent, the file's other
    columns kept in ``meta``; *answers* (row to known answer) mark the check pairs, whose
    answer is stored apart from ``meta`` so that it can never reach a pair's view."""
    answers = answers or {}
    skip = (C.PAIR_ID, C.TERM_1, C.TERM_2, C.CHECK_ANSWER, *ITEM_COLUMNS)
    extra = [c for c in pairs.columns if c not in skip]
    if audit_groups is not None and len(audit_groups) != len(pairs):
        raise ValueError("audit_groups needs one group per pair")
    items = []
    for pos, rec in enumerate(pairs.to_dict(orient="records")):
        label = rec.get(C.AUTO_LABEL)
        items.append(
            store.NewItem(
                pair_id=str(rec[C.PAIR_ID]),
                term_1=rec[C.TERM_1],
                term_2=rec[C.TERM_2],
                auto_label=None if label is None or pd.isna(label) else int(label),
                **{c: _text(rec.get(c)) for c in ITEM_COLUMNS[1:]},
                meta={c: _plain(rec[c]) for c in extra},
                audit_group=None if audit_groups is None else audit_groups[pos],
                check_answer=answers.get(pos),
            )
        )
    return items


def _text(v) -> str:
    return "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)


def _plain(v):
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return None
    return v.item() if hasattr(v, "item") else v


# --------------------------------------------------------------------------- read
@dataclass(frozen=True)
class StudyListing:
    """One study of :func:`list_studies`: its name, scale name, item and annotator counts,
    the assigned and rated (current-rating) slots, and when it was created (ISO text).
    :meth:`to_dict` is one row of ``medsim study list --json``."""

    study: str
    scale: str
    items: int
    annotators: int
    assigned: int
    rated: int
    created_at: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def list_studies(*, engine: Engine | None = None) -> list[StudyListing]:
    """Every study with its scale, item, annotator and current-rating counts."""
    engine = engine or get_engine()
    with session_scope(engine) as s:
        studies = store.study_overview(s)
    return [
        StudyListing(
            study=name,
            scale=json.loads(scale)["name"],
            items=counts["items"],
            annotators=counts["annotators"],
            assigned=counts["assigned"],
            rated=counts["rated"],
            created_at=created.isoformat() if created else None,
        )
        for _sid, name, scale, created, counts in studies
    ]


def pairs_frame(study: Study, *, tx: Transaction | None = None) -> pd.DataFrame:
    """The pairs of *study* in the pairs contract (with metadata columns), in file order.

    Read column-wise (not as ORM objects): studies hold 100,000s of pairs. *tx*: read in
    this transaction (:func:`medsim_annot.storage.read_snapshot`) instead of on a
    connection of its own.
    """
    engine = study.engine
    source = engine if tx is None else tx
    cols = [C.PAIR_ID, C.TERM_1, C.TERM_2, *ITEM_COLUMNS]
    fast = (
        arrow_store.item_columns(source, study.id) if arrow_store.supports_arrow(engine) else None
    )
    if fast is not None and len(fast):
        return _pairs_of_columns(fast)
    data = store.item_columns(source, study.id)
    if not len(data[0]):
        frame = pd.DataFrame(columns=cols)
        frame[C.AUTO_LABEL] = pd.array([], dtype="Int64")
        return frame
    frame = pd.DataFrame({c: v.tolist() for c, v in zip(cols, data[:-1])})
    metas = [json.loads(m) if m and m != "{}" else {} for m in data[-1]]
    if any(metas):
        extra = pd.DataFrame(metas)
        extra = extra[[c for c in extra.columns if c not in frame.columns]]
        frame = pd.concat([frame, extra], axis=1)
    frame[C.AUTO_LABEL] = pd.array(frame[C.AUTO_LABEL].tolist(), dtype="Int64")
    return frame


def _pairs_of_columns(items: arrow_store.ItemColumns) -> pd.DataFrame:
    """The frame of :func:`pairs_frame` from the column-wise read
    (:func:`medsim_annot.storage.arrow.item_columns`): the same columns, values and dtypes
    as the DBAPI read's."""
    text_dtype = pd.Series([""]).dtype  # what pandas infers for a list of str
    frame = pd.DataFrame(
        {c: pd.array(v, dtype=text_dtype) for c, v in items.text.items() if c != "meta_json"}
    )
    frame.insert(
        3,
        C.AUTO_LABEL,
        pd.arrays.IntegerArray(items.auto_label.astype(np.int64), items.auto_label_missing.copy()),
    )
    # Only the rows with metadata become Python objects (most pairs have none: "{}").
    meta = items.text["meta_json"]
    empty = pc.is_in(meta, value_set=pa.array(["", "{}"]))
    rows = np.flatnonzero(~empty.to_numpy(zero_copy_only=False))
    metas: list[Any] = []
    if len(rows):
        metas = [{} for _ in range(len(meta))]
        for row, text in zip(rows.tolist(), meta.take(pa.array(rows)).to_pylist(), strict=True):
            metas[row] = json.loads(text)
    if any(metas):
        extra = pd.DataFrame(metas)
        extra = extra[[c for c in extra.columns if c not in frame.columns]]
        frame = pd.concat([frame, extra], axis=1)
    return frame


def current_ratings(
    study: Study, *, include_duplicates: bool = False, tx: Transaction | None = None
) -> pd.DataFrame:
    """Current rating of every rated assignment (the latest saved row), long format.

    Columns: pair_id, annotator, rating (scale value), rated_at, comment, unclear, elapsed_ms,
    slot (main|calibration|duplicate), position. Duplicate slots (the second showing of an item
    to the same annotator, for intra-rater consistency) are left out unless asked for.
    Read column-wise (:func:`_read_current`) and built by :func:`_current_frame`: the scale
    is applied once per distinct value, no Python object per value (100,000s of ratings).
    *tx*: read in this transaction (:func:`medsim_annot.storage.read_snapshot`).
    """
    source = study.engine if tx is None else tx
    stored = _read_current(source, study.id)
    if not include_duplicates:
        duplicate = np.flatnonzero(stored.kinds == "duplicate")
        stored = stored.take(~np.isin(stored.kind_code, duplicate))
    return _current_frame(stored, _annotator_names(source, study.id), study.scale)


_current_columns = store.current_rating_columns
_annotator_names = store.annotator_names


def _read_current(source: Source, study_id: int) -> RatingArrays:
    """The current ratings of a study (duplicate slots included) as stored: column-wise
    (:func:`medsim_annot.storage.arrow.current_rating_arrays`: ADBC on PostgreSQL, the
    engine's own ``sqlite3`` on SQLite) where the database has that read and the values fit
    it, else through the DBAPI (:func:`_current_columns`), coded by
    :func:`_arrays_of_columns` into the same arrays."""
    if arrow_store.supports_arrow(engine_of(source)):
        stored = arrow_store.current_rating_arrays(source, study_id)
        if stored is not None:
            return stored
    raw = _current_columns(source, study_id)
    return _arrays_of_columns(raw, int(raw["_total"][0]) if len(raw["_total"]) else 0)


def _arrays_of_columns(raw: dict[str, np.ndarray], total: int) -> RatingArrays:
    """The raw DBAPI columns of :func:`_current_columns` (with the bookkeeping columns) as
    :class:`~medsim_annot.storage.arrow.RatingArrays`: texts coded into lookup arrays,
    date-times parsed (:func:`_utc_times`) to naive UTC; *total* ratings of the study."""

    def coded(column: str) -> tuple[np.ndarray, np.ndarray]:
        codes, uniques = pd.factorize(np.asarray(raw[column], dtype=object), use_na_sentinel=False)
        return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)

    def ints(column: str) -> np.ndarray:
        return np.asarray(raw[column]).astype(np.int64)

    pair_code, pair_ids = coded(C.PAIR_ID)
    value_code, values = coded(C.RATING)
    kind_code, kinds = coded("slot")
    comment_code, comments = coded(C.COMMENT)
    elapsed = pd.Series(raw["elapsed_ms"], dtype=object)
    missing = elapsed.isna().to_numpy(dtype=bool)
    times = _utc_times(pd.Series(raw[C.RATED_AT], dtype=object))
    return RatingArrays(
        annotator_id=ints("_annotator"),
        item_position=ints("_item_pos"),
        position=ints("position"),
        pair_code=pair_code,
        pair_ids=pair_ids,
        value_code=value_code,
        values=values,
        kind_code=kind_code,
        kinds=kinds,
        comment_code=comment_code,
        comments=comments,
        unclear=np.asarray(raw[C.UNCLEAR]).astype(bool),
        elapsed_ms=elapsed.where(~missing, 0).to_numpy().astype(np.int64),
        elapsed_missing=missing,
        rated_at=times.dt.tz_convert(None).to_numpy().astype("datetime64[us]"),
        rating_id=ints("_rid"),
        slot_id=ints("_assignment"),
        total=total,
    )


def _current_frame(stored: RatingArrays, names: dict[int, str], scale: Scale) -> pd.DataFrame:
    """The frame of :func:`current_ratings` from the stored ratings (whichever read gave
    them) and the annotators' names by id: sorted by the pair's file position, then
    annotator name, then queue position; built from NumPy codes and small lookup arrays
    instead of a Python object per value. The one place the frame is built."""
    n = len(stored)
    id_list = sorted(set(names))
    by_id = pd.Index(np.asarray(id_list, dtype=np.int64))
    # Annotators as codes into their names sorted (unknown ids last, as None -> "None").
    name_list = [names[i] for i in id_list]
    rank: Any = np.argsort(np.array(name_list, dtype=object), kind="stable") if name_list else []
    sorted_names = np.array([name_list[i] for i in rank] + ["None"], dtype=object)
    code_of_id = np.empty(len(name_list) + 1, dtype=np.int64)
    code_of_id[np.asarray(rank, dtype=np.int64)] = np.arange(len(name_list))
    code_of_id[-1] = len(name_list)
    ann_code = code_of_id[by_id.get_indexer(stored.annotator_id)]
    order = np.lexsort((stored.position, ann_code, stored.item_position))

    def text(uniques: np.ndarray, codes: np.ndarray) -> pd.Series:
        lookup = pd.array(uniques.astype(str).tolist(), dtype="str")
        return pd.Series(lookup.take(codes[order]))

    canon = [scale.canonical(v) for v in stored.values]
    rating = pd.Series(canon).take(stored.value_code[order]).reset_index(drop=True)
    if n and rating.dtype == object:  # as pandas infers a list of the values
        rating = pd.Series(rating.tolist())
    missing = stored.elapsed_missing[order]
    if not missing.any():
        elapsed = pd.Series(stored.elapsed_ms[order])
    elif missing.all():
        elapsed = pd.Series([None] * n).infer_objects()
    else:
        elapsed = pd.Series(np.where(missing, np.nan, stored.elapsed_ms[order].astype(float)))
    return pd.DataFrame(
        {
            C.PAIR_ID: text(stored.pair_ids, stored.pair_code),
            C.ANNOTATOR: text(sorted_names, ann_code),
            C.RATING: rating,
            C.RATED_AT: pd.Series(stored.rated_at[order]).dt.tz_localize("UTC"),
            C.COMMENT: text(stored.comments, stored.comment_code),
            C.UNCLEAR: pd.Series(stored.unclear[order]),
            "elapsed_ms": elapsed,
            "slot": text(stored.kinds, stored.kind_code),
            "position": pd.Series(stored.position[order]),
        }
    )


class CurrentRatingsReader:
    """The current ratings of one study (duplicate slots included, the frame of
    ``current_ratings(study, include_duplicates=True)``), kept between reads so that a
    new rating costs a read of the ratings saved since, not of the whole study.

    Ratings are append-only (a database trigger refuses UPDATE and DELETE) and the current
    rating of an assignment is its row with the highest id, so the current ratings after a
    save are the kept ones with each assignment that has newer rows replaced by its newest.

    What is kept is the stored ratings (:class:`~medsim_annot.storage.arrow.RatingArrays`)
    of :func:`current_ratings`' read (:func:`_read_current`: column-wise where the database
    has that read, so the first dashboard after a server start costs what the cold
    benchmark measures); the few rows of an increment are read through the DBAPI, coded
    the same way (:func:`_arrays_of_columns`) and merged into what is kept; every frame is
    built by :func:`_current_frame`.

    Exactness: the new rows and the number of saved ratings come from one statement (one
    snapshot). When the kept ratings plus the new ones do not add up to that number — a
    rating with a lower id committed late (PostgreSQL sequences), or nothing new came back
    — everything is read again. *version* (``ratings_version``: count, highest id), when it
    equals what is kept, means nothing changed (the kept set is a subset of the counted
    one and has its size). Annotators' names are read on every call (they can be renamed).
    One reader belongs to one study of one database; it is safe to share between threads.
    """

    def __init__(self, study_id: int, scale: Scale, engine: Engine):
        self.study_id = study_id
        self.scale = scale
        self.engine = engine
        self._stored: RatingArrays | None = None
        self._count = -1
        self._top = -1
        self._lock = threading.Lock()
        #: How the last :meth:`read` was served: "full", "increment" or "kept".
        self.last_read = ""

    def read(self, version: tuple[int, int] | None = None) -> pd.DataFrame:
        """The current ratings now (see :func:`current_ratings`)."""
        with self._lock:
            if (
                self._stored is not None
                and version is not None
                and (int(version[0]), int(version[1])) == (self._count, self._top)
            ):
                self.last_read = "kept"
            elif self._stored is None or not self._increment():
                self._full()
            stored = self._stored
        assert stored is not None
        names = _annotator_names(self.engine, self.study_id)
        return _current_frame(stored, names, self.scale)

    def _full(self) -> None:
        """Read everything (:func:`_read_current`)."""
        self.last_read = "full"
        self._stored = _read_current(self.engine, self.study_id)
        self._count, self._top = -1, -1
        if len(self._stored):
            self._count, self._top = self._stored.total, int(self._stored.rating_id.max())
        # else no ratings, so no count came back: the next read is a full one again

    def _increment(self) -> bool:
        if self._top < 0 or self._stored is None:
            return False
        new = _current_columns(self.engine, self.study_id, after=self._top)
        rid = new["_rid"].astype(np.int64)
        if not len(rid) or int(new["_total"][0]) != self._count + len(rid):
            return False
        asg = new["_assignment"].astype(np.int64)
        by_id = np.argsort(rid, kind="stable")[::-1]  # newest first
        _, first = np.unique(asg[by_id], return_index=True)
        keep = np.sort(by_id[first])  # the newest row of each assignment
        total = self._count + len(rid)
        newest = _arrays_of_columns({c: v[keep] for c, v in new.items()}, total)
        self._stored = _with_new_rows(self._stored, newest)
        self._count = total
        self._top = int(rid.max())
        self.last_read = "increment"
        return True


def _with_new_rows(stored: RatingArrays, new: RatingArrays) -> RatingArrays:
    """*stored* with the slots of *new* (one newest rating per slot) replaced by those
    ratings: *new*'s texts recoded into *stored*'s lookup arrays (extended where a value is
    new), and *new*'s ``total``."""
    kept = stored.take(~np.isin(stored.slot_id, new.slot_id))
    merged: dict[str, Any] = {
        f: np.concatenate([getattr(kept, f), getattr(new, f)]) for f in arrow_store.PER_RATING
    }
    for codes, lookup in arrow_store.LOOKUPS.items():
        uniques = getattr(stored, lookup)
        index = {str(v): i for i, v in enumerate(uniques)}
        extra = [str(v) for v in getattr(new, lookup) if str(v) not in index]
        index.update({v: len(uniques) + i for i, v in enumerate(extra)})
        at = np.array([index[str(v)] for v in getattr(new, lookup)], dtype=np.int64)
        merged[codes] = np.concatenate([getattr(kept, codes), at[getattr(new, codes)]])
        merged[lookup] = np.concatenate([uniques, np.array(extra, dtype=object)])
    return RatingArrays(**merged, total=new.total)


def _utc_times(raw: pd.Series) -> pd.Series:
    """Date-times as read by :func:`medsim_annot.storage.studies.fetch_columns` (text from SQLite, naive UTC
    ``datetime`` from PostgreSQL, or aware ``datetime``) as a UTC datetime Series, the same
    values and dtype as ``pd.to_datetime`` gives for the aware ``datetime`` objects that
    :class:`~medsim_annot.storage.models.UTCDateTime` returns.

    >>> _utc_times(pd.Series(["2026-01-01 10:00:00.000000", None], dtype=object)).tolist()
    [Timestamp('2026-01-01 10:00:00+0000', tz='UTC'), NaT]
    """
    kind = pd.api.types.infer_dtype(raw, skipna=True) if len(raw) else "empty"
    if kind in ("datetime", "datetime64", "empty"):
        return pd.to_datetime(raw, utc=True)
    text = (
        raw.notna().to_numpy(dtype=bool)
        if kind == "string"
        else raw.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    )
    if not text.any():
        return pd.to_datetime(raw, utc=True)
    out = pd.to_datetime(raw.where(text, None), utc=True, format="ISO8601")
    if not text.all():
        rest = pd.to_datetime(raw.where(~text, None), utc=True)
        out = out.where(text, rest)
    return out.astype("datetime64[us, UTC]")


def ratings_frame(study: Study) -> tuple[pd.DataFrame, Scale]:
    """The ratings frame the statistics take (see data_schemas.ratings.to_ratings_frame)
    and the study's scale."""
    cur = current_ratings(study)
    return to_ratings_frame(cur, study.scale), study.scale


def export_ratings(study: Study, out: str | Path | None = None) -> pd.DataFrame:
    """Current ratings in the long ratings contract (pair_id, annotator, rating, rated_at,
    comment, unclear); written to *out* (any supported format) when given."""
    cur = current_ratings(study)
    frame = pd.DataFrame(
        {
            C.PAIR_ID: cur[C.PAIR_ID],
            C.ANNOTATOR: cur[C.ANNOTATOR],
            C.RATING: [study.scale.display(v) for v in cur[C.RATING]],
            C.RATED_AT: [
                t.isoformat().replace("+00:00", "Z") if not pd.isna(t) else ""
                for t in cur[C.RATED_AT]
            ],
            C.COMMENT: cur[C.COMMENT],
            C.UNCLEAR: ["true" if u else "false" for u in cur[C.UNCLEAR]],
        }
    )
    if out is not None:
        write_table(frame, out)
        events_store.record_event(
            "ratings_exported",
            study_id=study.id,
            detail={"file": Path(out).name, "ratings": int(len(frame))},
            engine=study.engine,
        )
    return frame


# --------------------------------------------------------------------------- imports
def import_ehr_rel(path: str | Path, study: str, *, engine: Engine | None = None) -> dict:
    """Import an EHR-Rel wide file as a completed study on the 0–3 relatedness scale: every
    ``rater_<X>`` column becomes annotator X, who is assigned exactly the pairs X rated.
    Every row is an item (a pair on two rows gets ``ID1-ID2#2``); the result's ``notes``
    say so, for the CLI to print and the dashboard to show (kept in the study's config)."""
    frame = read_table(path)
    if not is_ehr_rel(frame.columns):
        raise InputError.single(
            t(
                "is not an EHR-Rel wide file: expected snomed_id_1, snomed_label_1, "
                "snomed_id_2, snomed_label_2 and rater_<name> columns"
            ),
            file=str(path),
            row=1,
        )
    wide = read_ehr_rel(frame, str(path))
    config: dict[str, object] = {"imported_from": Path(path).name, "format": "ehr-rel"}
    if wide.notes:
        config["notes"] = list(wide.notes)
    result = _import_completed(study, wide.pairs, wide.ratings, RELATEDNESS_0_3, config, engine)
    return {**result, "notes": list(wide.notes)}


def import_ratings(
    ratings_path: str | Path,
    pairs_path: str | Path,
    scale: str | Scale,
    study: str,
    *,
    engine: Engine | None = None,
) -> dict:
    """Import ratings collected elsewhere (long ratings file + pairs file) as a completed study."""
    sc = scale if isinstance(scale, Scale) else load_scale(scale)
    pairs = load_pairs(pairs_path)
    ratings = validate_ratings(
        read_table(ratings_path), sc, str(ratings_path), known_pairs=set(pairs[C.PAIR_ID])
    )
    return _import_completed(
        study,
        pairs,
        ratings,
        sc,
        {"imported_from": Path(ratings_path).name, "format": "ratings"},
        engine,
    )


def import_completed(
    study: str,
    pairs: pd.DataFrame,
    ratings: pd.DataFrame,
    scale: Scale,
    config: dict,
    *,
    engine: Engine | None = None,
) -> dict:
    """Store validated *pairs* and *ratings* (the contracts' typed frames) as a completed
    study in one transaction: each annotator is assigned exactly the pairs they rated.
    Used by the importers of other tools (:mod:`medsim_annot.services.interop`)."""
    return _import_completed(study, pairs, ratings, scale, config, engine)


def _import_completed(
    study: str,
    pairs: pd.DataFrame,
    ratings: pd.DataFrame,
    scale: Scale,
    config: dict,
    engine: Engine | None,
) -> dict:
    engine = engine or get_engine()
    study = check_study_name(study)
    index = {pid: i for i, pid in enumerate(pairs[C.PAIR_ID])}
    names = list(dict.fromkeys(ratings[C.ANNOTATOR]))
    queues = {}
    for who in names:
        rated = sorted({index[p] for p in ratings.loc[ratings[C.ANNOTATOR] == who, C.PAIR_ID]})
        queues[who] = [Slot(i) for i in rated]
    if not len(ratings):
        raise InputError.single(t("has no ratings to import"), file=config.get("imported_from"))
    now = utcnow()
    with session_scope(engine) as s:
        if store.study_id(s, study) is not None:
            raise UsageProblem(t("a study named '{name}' already exists", name=study))
        study_id = store.insert_study(
            s,
            name=study,
            scale_json=scale.to_json(),
            guideline=scale.guideline,
            config=config,
            created_at=now,
        )
        item_ids = store.insert_items(s, study_id, _new_items(pairs))
        ann_ids = {}
        for who in names:
            ann_ids[who] = store.insert_annotator(
                s, study_id=study_id, name=who, code_hash=None, active=False, created_at=now
            )
            store.insert_queue(s, study_id, ann_ids[who], item_ids, queues[who])
        slot_ids = store.assignment_ids(s, study_id)
        ordered = ratings.assign(_t=ratings[C.RATED_AT].fillna(pd.Timestamp(now)))
        ordered = ordered.sort_values("_t", kind="stable")
        rows = []
        for rec in ordered.to_dict(orient="records"):
            a_id = ann_ids[rec[C.ANNOTATOR]]
            i_id = item_ids[index[rec[C.PAIR_ID]]]
            rows.append(
                {
                    "study_id": study_id,
                    "annotator_id": a_id,
                    "item_id": i_id,
                    "assignment_id": slot_ids[(a_id, i_id)],
                    "value": str(rec[C.RATING]),
                    "unclear": bool(rec.get(C.UNCLEAR, False)),
                    "comment": rec.get(C.COMMENT) or "",
                    "rated_at": rec["_t"].to_pydatetime(),
                    "elapsed_ms": None,
                    "source": "import",
                }
            )
        store.insert_ratings(s, rows)
        events_store.add_event(
            s, "study_imported", study_id=study_id, at=now, detail={**config, "ratings": len(rows)}
        )
    return {
        "study": study,
        "items": len(pairs),
        "ratings": len(ratings),
        "annotators": [{"name": n, "access_code": None} for n in names],
    }


#: The columns of :func:`rating_history`.
HISTORY_COLUMNS = [
    "rating_id",
    C.PAIR_ID,
    C.ANNOTATOR,
    C.RATING,
    C.UNCLEAR,
    C.COMMENT,
    C.RATED_AT,
    "elapsed_ms",
    "source",
    "slot",
    "guideline_version",
]


def rating_history(study: Study) -> pd.DataFrame:
    """Every saved rating (the append-only history), oldest first."""
    with session_scope(study.engine) as s:
        rows = store.rating_history(s, study.id)
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def ratings_version(study: Study, *, tx: Transaction | None = None) -> tuple[int, int]:
    """(number of saved ratings, highest rating id) of *study*: changes with every save, so
    pages use it as a cache key that is never stale after a save. *tx*: read in this
    transaction."""
    if tx is not None:
        return store.ratings_version(tx, study.id)
    with session_scope(study.engine) as s:
        return store.ratings_version(s, study.id)
