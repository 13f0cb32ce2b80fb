"""The QA dashboard's figures and tables, computed by the agreement services (never by
statistics of its own), so ``medsim agreement``/``medsim audit``, the dashboard page and
the HTML report always show the same numbers.

One module per job:

* :mod:`.tables` — :class:`Dashboard`, the results and their published table layouts
  (Schulz & Juric, AAAI 2020, Table 3; Schulz et al., COLING 2020, Tables 2 and 3, Figure 1)
  and the crowd-kit model of the doctors, fitted once per method and dashboard;
* :mod:`.readings` — plain-language sentences about each annotator;
* :mod:`.compute` — :func:`compute_dashboard`, every table from frames (tests, benchmarks),
  declared as named steps (:func:`~.compute.dashboard_steps`);
* :mod:`.schedule` — the tiny scheduler that runs those steps, beside each other where they
  may be (it knows nothing of the dashboard);
* :mod:`.store` — :func:`study_dashboard` (a stored study, cached), :func:`completion`
  (annotators' progress) and :func:`planned_ratings` (the ratings planned per pair; both
  never cached: cheap queries) and the caches;
* :mod:`.cache` — the one least-recently-used cache helper (a second caller of a value
  being made waits for it);
* :mod:`.warm` — the studies' first Dashboard figures, computed in the background right
  after a server start (``serve.py``), into the same caches;
* :mod:`.report` — :func:`html_report`, the whole dashboard as one HTML file.
"""

from __future__ import annotations

from medsim_annot.services.dashboard.compute import BOOTSTRAP_SEED, compute_dashboard
from medsim_annot.services.dashboard.readings import CONSISTENCY_CONCERN, DONT_KNOW_CONCERN
from medsim_annot.services.dashboard.report import html_report
from medsim_annot.services.dashboard.store import (
    CACHE_SIZE,
    CACHE_STATS,
    clear_cache,
    completion,
    load_current,
    planned_ratings,
    ratings_version,
    study_dashboard,
    study_pairs,
)
from medsim_annot.services.dashboard.tables import DISAGREEMENT_KINDS, Dashboard
from medsim_annot.services.gold.table import FLAGS
from medsim_annot.stats.aggregate import MODEL_METHODS

__all__ = [
    "BOOTSTRAP_SEED",
    "CACHE_SIZE",
    "CACHE_STATS",
    "CONSISTENCY_CONCERN",
    "DISAGREEMENT_KINDS",
    "DONT_KNOW_CONCERN",
    "FLAGS",
    "MODEL_METHODS",
    "Dashboard",
    "clear_cache",
    "completion",
    "compute_dashboard",
    "html_report",
    "load_current",
    "planned_ratings",
    "ratings_version",
    "study_dashboard",
    "study_pairs",
]
