"""The dashboard of a stored study: read from the database, computed by
:func:`~medsim_annot.services.dashboard.compute.compute_dashboard`, and cached.

Three caches, one helper (:class:`~medsim_annot.services.dashboard.cache.LRUCache`):

* :data:`DASHBOARDS` — computed dashboards. Key: (database URL, study name and id, ratings version,
  bootstrap, majority rule, the rater-check settings and check pairs, the language its
  sentences are in). The ratings version
  (count, highest rating id) changes with every saved rating (ratings are append-only), and
  the rater checks' settings and check pairs are read on every call, so a kept dashboard is
  never stale and nothing needs invalidating; old versions simply age out. :data:`CACHE_SIZE` = 8: a QA
  lead looks at a few studies with one or two option sets (bootstrap on/off, strict or
  decisive majority) while annotators keep saving; a dashboard of 100,000 pairs holds tens
  of MB, so eight bounds the memory at a few hundred MB.
* :data:`PAIRS` — a study's pairs. Key: (database URL, study id, creation time): pairs are
  written once, when the study is created or imported, and a re-created study has a new id
  or creation time. :data:`STUDY_ENTRIES` = 4: the studies open at once in one server.
* :data:`READERS` — a study's
  :class:`~medsim_annot.services.studies.CurrentRatingsReader`, which keeps the stored current
  ratings and after a new rating reads only the ratings saved since. Same key and size as
  the pairs, for the same reasons.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd

from data_schemas import columns as C
from medsim_annot.i18n import current_language, t
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import quality as quality_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.dashboard.cache import LRUCache
from medsim_annot.services.dashboard.compute import compute_dashboard
from medsim_annot.services.dashboard.tables import Dashboard
from medsim_annot.services.people import annotators as annotators_svc
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, session_scope
from medsim_annot.storage import arrow as arrow_store
from medsim_annot.storage import studies as studies_store

CACHE_SIZE = 8
STUDY_ENTRIES = 4
DASHBOARDS: LRUCache[Dashboard] = LRUCache("dashboards", CACHE_SIZE)
PAIRS: LRUCache[pd.DataFrame] = LRUCache("pairs", STUDY_ENTRIES)
READERS: LRUCache[studies_svc.CurrentRatingsReader] = LRUCache("readers", STUDY_ENTRIES)
PLANNED: LRUCache[dict[str, int]] = LRUCache("planned", STUDY_ENTRIES)
#: Hits and misses of the dashboard cache (what the tests and benchmarks read).
CACHE_STATS = {"hits": 0, "misses": 0}


def clear_cache() -> None:
    """Forget every cached dashboard, pairs frame, ratings reader and planned count."""
    for cache in (DASHBOARDS, PAIRS, READERS, PLANNED):
        cache.clear()


def study_pairs(study: Study) -> pd.DataFrame:
    """The pairs of *study* (:func:`medsim_annot.services.studies.pairs_frame`)."""
    return studies_svc.pairs_frame(study)


def completion(study: Study) -> pd.DataFrame:
    """Progress per annotator: ``annotator``, ``active``, ``imported`` (their ratings were
    imported from another tool: no code was ever theirs), ``done``, ``total``, ``share``
    (0..1)."""
    a = annotators_svc.annotators(study)
    out = a[[C.ANNOTATOR, "active", "done", "total"]].copy()
    out.insert(2, "imported", out[C.ANNOTATOR].isin(set(imported_annotators(study))))
    out["share"] = np.where(
        out["total"] > 0, out["done"] / out["total"].where(out["total"] > 0, 1), 0.0
    )
    return out


def imported_annotators(study: Study) -> list[str]:
    """The annotators of *study* whose ratings were imported from another tool without a
    time of their own (EHR-Rel files, ratings files without ``rated_at``): their order is the
    file's and their time the import's, so their order- and time-based checks are left out.
    An imported file that gives each rating its time keeps the checks. Only an imported
    study (``imported_from`` in its config: every importer sets it) has imported ratings;
    others cost no query."""
    if "imported_from" not in study.config:
        return []
    with session_scope(study.engine) as s:
        return studies_store.imported_annotators(s, study.id)


def planned_ratings(study: Study) -> dict[str, int]:
    """``pair_id`` to the number of annotators whose queue holds the pair (duplicate and
    withdrawn slots left out): the ratings planned for it. Kept in :data:`PLANNED` under the
    study, its ratings version and its queue state (annotators, the sum of their queue
    versions and the highest slot id, which move when a slot is added, withdrawn or
    restored), so an added annotator
    or a tie-break slot is seen at once (100,000 pairs x 3 on SQLite: the count takes about
    0.4 s, the key a few ms)."""
    with session_scope(study.engine) as s:
        state = studies_store.queue_state(s, study.id)
    url = study.engine.url.render_as_string(hide_password=True)
    key = (url, study.id, str(study.created_at), ratings_version(study), state)

    def count() -> dict[str, int]:
        with session_scope(study.engine) as s:
            return dict(studies_store.planned_raters(s, study.id))

    return PLANNED.get_or_make(key, count)


def ratings_version(study: Study) -> tuple[int, int]:
    """The study's ratings version (count, highest rating id): the cache key."""
    return studies_svc.ratings_version(study)


def load_current(study: Study) -> pd.DataFrame:
    """Current ratings of *study* including duplicate slots: the frame of
    :func:`medsim_annot.services.studies.current_ratings`, read column-wise where the
    database allows it — at 100,000s of ratings, building a Python object per value on the
    DBAPI path costs more than the query."""
    return studies_svc.current_ratings(study, include_duplicates=True)


def _read_both(
    engine: Engine,
    pool: ThreadPoolExecutor,
    pairs: Callable[[], pd.DataFrame],
    ratings: Callable[[], pd.DataFrame],
) -> tuple[Future[pd.DataFrame], pd.DataFrame]:
    """The current ratings, and the pairs as a Future of a read in *pool*. Where the
    database does the reads' work in its own process
    (:func:`medsim_annot.storage.arrow.reads_in_server`; PostgreSQL, best of 4 at 300,000
    ratings: 1.07 s at once against 1.48 s one after the other) both reads run at once;
    elsewhere (SQLite, whose concurrent reads in one process slowed each other: 0.33 s
    against 0.30 s one after the other) the pairs are read once the ratings are, while the
    agreement statistics, which need no pairs, are computed
    (:func:`~medsim_annot.services.dashboard.compute.compute_dashboard`)."""
    if not arrow_store.reads_in_server(engine):
        history = ratings()
        return pool.submit(pairs), history
    later = pool.submit(pairs)
    return later, ratings()


def study_dashboard(
    study: Study,
    *,
    bootstrap: int = 0,
    majority: str = "strict",
    use_cache: bool = True,
) -> Dashboard:
    """The dashboard of a stored study, cached in :data:`DASHBOARDS` (see the module's
    docstring for the key and size). A saved rating changes the version, so a cached result
    is never stale.

    With the cache, the pairs are kept per study (they never change) and the current
    ratings by a :class:`~medsim_annot.services.studies.CurrentRatingsReader`, which after a
    new rating reads only the ratings saved since; ``use_cache=False`` reads everything.
    The rater checks' settings are read as stored now, not as the handle holds them (a page
    keeps its handle across a fragment's reruns, and the settings form is in it)."""
    engine = study.engine
    info = study
    version = ratings_version(study)
    url = engine.url.render_as_string(hide_password=True)
    # The rater checks' settings and check pairs change without a new rating: in the key.
    settings = quality_svc.study_settings(study.reloaded())
    answers = quality_svc.check_answers(study)
    imported = imported_annotators(study)
    key = (
        url,
        study.name,
        study.id,
        version,
        int(bootstrap),
        majority,
        settings,
        tuple(sorted(answers.items())),
        tuple(imported),
        # The dashboard holds sentences (reasons, notes, warnings) in the language it was
        # computed in: one language's dashboard is never another's.
        current_language(),
    )
    if use_cache:
        found = DASHBOARDS.get(key)
        if found is not None:
            CACHE_STATS["hits"] += 1
            return found
    CACHE_STATS["misses"] += 1
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pairs-read") as pool:
        if use_cache:
            study_key = (url, info.id, str(info.created_at))
            reader = READERS.get_or_make(
                study_key, lambda: studies_svc.CurrentRatingsReader(info.id, info.scale, engine)
            )
            pairs, history = _read_both(
                engine,
                pool,
                lambda: PAIRS.get_or_make(study_key, lambda: study_pairs(study)),
                lambda: reader.read(version),
            )
        else:
            pairs, history = _read_both(
                engine,
                pool,
                lambda: study_pairs(study),
                lambda: load_current(study),
            )
        current = (
            history[history["slot"] != "duplicate"].reset_index(drop=True)
            if "slot" in history.columns
            else history
        )
        dash = compute_dashboard(
            pairs,
            current,
            info.scale,
            history=history,
            study=study.name,
            version=version,
            bootstrap=bootstrap,
            majority=majority,
            agreement_pairs=agreement_svc.design_agreement_pairs(info.config, current),
            check_answers=answers,
            check_settings=settings,
            imported=imported,
        )
    notes = list(info.config.get("notes", ()))
    if info.config.get("tiebreak") and not dash.agreement_basis:
        notes.append(t(agreement_svc.TIEBREAK_WITHOUT_CALIBRATION))
    dash.notes = tuple(notes)
    if use_cache:
        DASHBOARDS.put(key, dash)
    return dash
