"""Warm the studies' dashboards right after a server start, in the background.

The first Dashboard after a start otherwise computes everything in the admin's click: at
100,000 pairs x 3 ratings the read of 300,000 ratings and every figure (about 1 s on two
cores), the planned ratings (0.5 s) and the completion table, 2.2-2.9 s before the headline.
``serve.py`` starts :func:`warm_store` in a background thread
(:func:`medsim_annot.warmup.warm_in_background`) before its synchronous imports, whose one
core it overlaps; it computes, study
by study (at most :data:`~medsim_annot.services.dashboard.store.STUDY_ENTRIES`, the studies
with ratings, in the Dashboard picker's order, whose first study is the one the page opens
on), exactly what the page asks for first: :func:`~.store.study_dashboard` (no bootstrap,
strict majority; in English and in each language an admin chose, :func:`warm_languages`),
:func:`~.store.planned_ratings`, then each study's quality over time.

Nothing computed here is a figure of its own: each result is kept in the page's own caches
under the page's own key (the ratings version, the rater checks' settings, the check pairs,
the queue state…), so a kept value is shown only while it still belongs to the current data.
A rating saved after the warm-up makes the next Dashboard compute again, but with the pairs
and the ratings already read (only the ratings saved since are read: the "after a new rating"
figure of ``make bench``).

An admin who opens the Dashboard while its warm-up still computes that study waits for the
rest of that computation (the caches make a second caller wait for the first,
:class:`~medsim_annot.services.dashboard.cache.LRUCache`), never for a second computation
beside it: at worst the click costs what it cost without the warm-up. A study whose warm-up
fails is skipped (the page computes it, and shows its error, as before).
"""

from __future__ import annotations

import logging
from pathlib import Path

from medsim_annot import i18n
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import store as store_svc
from medsim_annot.services.dashboard.store import (
    STUDY_ENTRIES,
    planned_ratings,
    ratings_version,
    study_dashboard,
)
from medsim_annot.services.study_handle import Study, open_study
from medsim_annot.storage import Engine, get_engine, session_scope
from medsim_annot.storage import languages as languages_store
from medsim_annot.storage import studies as studies_store

_log = logging.getLogger(__name__)


def studies_to_warm(engine: Engine, limit: int = STUDY_ENTRIES) -> list[Study]:
    """The studies with at least one rating, in the Dashboard picker's order (by name), at
    most *limit* of them (the caches keep :data:`STUDY_ENTRIES` studies' pairs and
    ratings)."""
    with session_scope(engine) as s:
        names = studies_store.study_names(s)
    out: list[Study] = []
    for name in names:
        if len(out) >= limit:
            break
        study = open_study(name, engine=engine)
        if ratings_version(study)[0]:
            out.append(study)
    return out


def warm_languages(engine: Engine) -> list[str]:
    """English (the pages' language when neither the admin nor the browser names another),
    then every other language an admin chose (stored with the admin): a dashboard holds
    sentences and is kept per language."""
    with session_scope(engine) as s:
        stored = languages_store.admin_languages(s)
    out = [i18n.SOURCE]
    for lang in stored:
        chosen = i18n.choose(lang)
        if chosen not in out:
            out.append(chosen)
    return out


def warm_dashboards(engine: Engine | None = None, limit: int = STUDY_ENTRIES) -> list[str]:
    """Compute and keep the Dashboard's first figures of the studies to warm
    (:func:`studies_to_warm`), in each language of :func:`warm_languages`: first each
    study's dashboard (English first; another language reuses the pairs and ratings read)
    and planned ratings (the headline), then each study's quality over time. Returns the
    names of the studies whose dashboard was warmed; a study that fails is logged and
    skipped."""
    engine = engine or get_engine()
    warmed: list[str] = []
    studies = studies_to_warm(engine, limit)
    languages = warm_languages(engine) if studies else []
    for study in studies:
        try:
            for lang in languages:
                with i18n.language(lang):
                    study_dashboard(study)
            planned_ratings(study)
        except Exception:  # the page computes it again, and shows the error
            _log.warning("dashboard warm-up of study %r failed", study.name, exc_info=True)
            continue
        warmed.append(study.name)
    for study in studies:
        for lang in languages:
            try:
                with i18n.language(lang):
                    drift_svc.study_quality_over_time(study)
            except Exception:
                _log.warning("quality warm-up of study %r failed", study.name, exc_info=True)
    return warmed


def nothing_to_warm(url: str) -> bool:
    """Whether the store at *url* cannot hold a study yet: an embedded SQLite file that does
    not exist (opening it would create it; the first page does that) or one in memory."""
    if not url.startswith("sqlite"):
        return False
    path = url.split(":///", 1)[-1].split("?", 1)[0]
    return path in ("", ":memory:") or not Path(path).exists()


def warm_store(url: str | None = None) -> list[str]:
    """:func:`warm_dashboards` on the store at *url* (``MEDSIM_DATABASE_URL`` when not
    given), never raising (a store that cannot be opened is logged: the pages say so);
    nothing when the store holds nothing yet (:func:`nothing_to_warm`)."""
    url = store_svc.store_url(url)
    if nothing_to_warm(url):
        return []
    try:
        return warm_dashboards(get_engine(url))
    except Exception:
        _log.warning("dashboard warm-up failed", exc_info=True)
        return []
