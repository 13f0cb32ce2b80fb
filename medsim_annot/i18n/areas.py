"""Which catalogue (area) each source file's strings go to: one ``.po`` per area and language,
so that work on different parts of the app never edits the same file. The first pattern that
matches a file's path (relative to the project root) decides; every other file of the
project is in ``core``. ``tools/i18n.py`` extracts with this map; the runtime merges every
area of a language."""

from __future__ import annotations

from fnmatch import fnmatch

AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Streamlit's own few texts, translated in the page (docs/i18n.md, "Known limits").
    ("chrome", ("pages/components/document_language/*",)),
    (
        "languages",
        (
            "pages/_languages.py",
            "medsim_annot/services/people/language.py",
            "medsim_annot/services/study_texts.py",
            "data_schemas/texts.py",
        ),
    ),
    (
        "annotate",
        (
            "app.py",
            "pages/annotate.py",
            "pages/_practice.py",
            "pages/_ui.py",
            "pages/_registry.py",
            "pages/_i18n.py",
            "data_schemas/widget.py",
            "data_schemas/practice.py",
            "medsim_annot/ratings_api.py",
            "medsim_annot/services/people/*",
            "medsim_annot/services/practice/*",
            "medsim_annot/services/rating_queue.py",
            "medsim_annot/services/annotation.py",
        ),
    ),
    (
        "dashboard",
        (
            "pages/dashboard.py",
            "pages/activity.py",
            "pages/_qa.py",
            "pages/_predictions.py",
            "pages/_charts.py",
            "medsim_annot/services/dashboard/*",
            "medsim_annot/services/plots.py",
            "medsim_annot/services/activity.py",
            "medsim_annot/services/quality.py",
            "medsim_annot/services/drift.py",
            "medsim_annot/services/agreement.py",
            "medsim_annot/services/predictions.py",
            "medsim_annot/services/stored_predictions.py",
            "medsim_annot/stats/*",
        ),
    ),
    (
        "admin",
        (
            "pages/setup.py",
            "pages/adjudicate.py",
            "pages/export.py",
            "pages/scoring.py",
            "medsim_annot/services/adjudication/*",
            "medsim_annot/services/gold/*",
            "medsim_annot/services/scoring.py",
            "medsim_annot/services/studies.py",
            "medsim_annot/services/design.py",
        ),
    ),
)
DEFAULT = "core"
#: Sources scanned for messages (the CLI, the benchmarks and the tests stay English).
SOURCES = ("app.py", "pages", "medsim_annot", "data_schemas")
#: Never scanned: the command line and logs stay English.
EXCLUDED = ("medsim_annot/cli.py", "medsim_annot/commands/*", "medsim_annot/i18n/*")


def area_of(path: str) -> str:
    """The area of a source file (a path relative to the project root, ``/``-separated)."""
    for area, patterns in AREAS:
        if any(fnmatch(path, p) for p in patterns):
            return area
    return DEFAULT


def names() -> list[str]:
    """Every area, ``core`` last."""
    return [area for area, _ in AREAS] + [DEFAULT]
