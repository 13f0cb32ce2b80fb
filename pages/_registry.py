"""The one list of the app's pages: file, sidebar title, icon, role, main heading, URL path.

``app.py`` builds its ``st.navigation`` from it; the browser, accessibility and page tests
and ``benchmarks/bench_admin_pages.py`` read it instead of listing the pages again. Data only
(no streamlit), so tests and benchmarks import it without starting a page.

A new page is its file in ``pages/`` plus one :class:`Page` line in :data:`PAGES` (and its
test); ``tests/test_page_registry.py`` fails when a page file is not registered. Files whose
name starts with ``_`` are helpers, not pages.
"""

from __future__ import annotations

from dataclasses import dataclass

from medsim_annot.i18n import N_, t

ROLES = ("annotator", "adjudicator", "admin")


@dataclass(frozen=True)
class Page:
    """One page of the app.

    *file* is its file in ``pages/``; *title* its sidebar link; *role* who gets it (the first
    page of a role is the one it lands on); *heading* its main heading (``None``: the page has
    none, the Annotate widget greets the doctor instead); *also* other roles that get it."""

    file: str
    title: str
    icon: str
    role: str
    heading: str | None
    #: Other roles that also get the page, after their own pages (a study admin adjudicates
    #: from their own session).
    also: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The sidebar title in the current language (*title* is the English one, the key
        tests and :func:`page` use)."""
        return t(self.title)

    @property
    def shown_heading(self) -> str | None:
        """The main heading in the current language."""
        return t(self.heading) if self.heading else None

    @property
    def path(self) -> str:
        """The page's script as ``st.Page`` takes it (relative to the app's folder)."""
        return f"pages/{self.file}"

    @property
    def url_path(self) -> str:
        """The page's URL path (``st.Page``'s default: the file name without ``.py``)."""
        return self.file.removesuffix(".py")


# Titles and headings are English here (marked for the catalogue); shown with t() (Page.label,
# Page.shown_heading).
PAGES: tuple[Page, ...] = (
    Page("annotate.py", N_("Annotate"), ":material/edit_note:", "annotator", None),
    Page(
        "adjudicate.py",
        N_("Adjudicate"),
        ":material/gavel:",
        "adjudicator",
        N_("Adjudicate"),
        ("admin",),
    ),
    Page("setup.py", N_("Study setup"), ":material/tune:", "admin", N_("Study setup")),
    Page("dashboard.py", N_("Dashboard"), ":material/monitoring:", "admin", N_("QA dashboard")),
    Page("activity.py", N_("Activity"), ":material/history:", "admin", N_("Activity")),
    Page("export.py", N_("Export"), ":material/download:", "admin", N_("Gold export")),
    Page(
        "scoring.py",
        N_("Embedding scoring"),
        ":material/calculate:",
        "admin",
        N_("Embedding scoring"),
    ),
)


def pages_for(role: str) -> list[Page]:
    """The pages of *role*, in sidebar order (the first is where the role lands): its own,
    then those it shares with another role."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
    return [p for p in PAGES if p.role == role] + [p for p in PAGES if role in p.also]


def admin_pages() -> list[Page]:
    """The admin's own pages (not those shared with another role, like Adjudicate)."""
    return [p for p in PAGES if p.role == "admin"]


def page(title: str) -> Page:
    """The page titled *title* in the sidebar."""
    for p in PAGES:
        if p.title == title:
            return p
    raise KeyError(f"no page titled {title!r} in pages/_registry.py")


def internal_names() -> set[str]:
    """Every name a page can be listed under, lower case: its title (as ``app.py`` lists it)
    and its file name without ``.py`` (as Streamlit's legacy multipage mode lists the files
    of ``pages/``). A visitor who has not signed in must see none of them."""
    return {p.title.lower() for p in PAGES} | {p.url_path.lower() for p in PAGES}
