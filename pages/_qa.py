"""Helpers of the QA pages (dashboard, export): the admin guard and engine from
:mod:`pages._ui`, the study's dashboard and HTML report and CSV download buttons. No SQL and
no statistics here.

There is one dashboard cache, the service's
(:func:`medsim_annot.services.dashboard.study_dashboard`, keyed by database, study and ratings
version, so a new rating invalidates it; it reads only the ratings saved since the last
version); the pages keep no second copy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from medsim_annot.i18n import fmt_decimal, t
from medsim_annot.services import dashboard as dashboard_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.dashboard import labels
from medsim_annot.services.study_handle import Study, open_study
from pages._ui import (  # noqa: F401 (re-exported for the QA pages)
    download_csv,
    download_name,
    engine,
    plain_markdown,
)


def load_dashboard(study: Study, bootstrap: int = 0):
    """The study's dashboard; recomputed only when its ratings version changes."""
    with st.spinner(t("Computing the agreement figures…")):
        return dashboard_svc.study_dashboard(study, bootstrap=int(bootstrap))


def load_model_quality(dash: dashboard_svc.Dashboard, method: str) -> dict:
    """The model of the doctors (Dawid–Skene or MACE) of the dashboard the page shows: fitted
    once per method and kept with that (cached) dashboard, so no second dashboard is
    computed for it and a new rating (a new dashboard) fits it again."""
    with st.spinner(t("Fitting the model of the doctors…")):
        return dash.model_quality(method)


def load_report(study: Study, bootstrap: int = 0, lang: str | None = None) -> bytes:
    """The study's HTML report in *lang* (built on the cached dashboard; completion is
    current). A deferred download builds it outside the page's run, where no language is
    set: the page passes the language it is drawn in."""
    return dashboard_svc.html_report(study, bootstrap=int(bootstrap), lang=lang).encode("utf-8")


def study_names() -> list[str]:
    return [s.study for s in studies_svc.list_studies(engine=engine())]


def pick_study(key: str) -> Study | None:
    """A study picker: the chosen study, resolved once for this run (the services take the
    handle); shows a hint and returns None when there are no studies."""
    names = study_names()
    if not names:
        st.info(
            t("There are no studies yet: create one on the Study setup page or run `medsim demo`.")
        )
        return None
    return open_study(st.selectbox(t("Study"), names, key=key), engine=engine())


def _number_text(value, whole: bool) -> str:
    """A number as the tables show it: "—" when missing, a count (*whole*) as a whole
    number, else to 3 decimals, in the page's language (``0,870`` in German)."""
    return labels.number_text(value, whole)


def english_numbers() -> bool:
    """Whether the page's language writes numbers as English does (``1,234.5``): then a
    table keeps its number columns as numbers (sortable) and a Styler writes them."""
    return fmt_decimal(1234.5, 1) == "1,234.5"


def styled(frame: pd.DataFrame) -> tuple[pd.DataFrame | Styler, list[str]]:
    """*frame* as shown, and the number columns now shown as text: numbers to 3 decimals,
    a missing value of any column as "—". (Streamlit draws a missing cell as "None" whatever
    a Styler says, so a number column with a gap is shown as text, right-aligned.) In a
    language that writes numbers otherwise (German ``0,870`` and ``1.200``) every number
    column is shown as text written the language's way."""
    numbers = [c for c in frame.select_dtypes("number").columns]
    english = english_numbers()
    gappy = [c for c in numbers if frame[c].isna().any() or not english]
    shown = frame.copy() if gappy or frame.isna().to_numpy().any() else frame
    for c in gappy:
        whole = bool(np.all(np.mod(frame[c].dropna().to_numpy(dtype=float), 1) == 0))
        shown[c] = [_number_text(v, whole) for v in frame[c].tolist()]
    others = [c for c in frame.columns if c not in numbers]
    for c in others:
        if frame[c].isna().any():
            shown[c] = frame[c].astype(object).where(frame[c].notna(), "—")
    rest = [c for c in numbers if c not in gappy]
    if rest and not shown.index.has_duplicates and not shown.columns.has_duplicates:
        return shown.style.format(precision=3, subset=rest), gappy
    return shown, gappy


def display_headers(
    frame: pd.DataFrame, names: frozenset[str] = frozenset()
) -> tuple[pd.DataFrame, dict[str, str]]:
    """*frame* with its headers (and index name) in the page's language, and the map from
    each column to its header (:func:`medsim_annot.services.dashboard.labels.header`); the
    columns named in *names* (people) are kept as typed. Two columns whose headers are the
    same word in a language keep them apart with the column's name."""
    shown: dict[str, str] = {}
    for c in frame.columns:
        h = labels.header(c, names)
        shown[str(c)] = f"{h} ({c})" if h in shown.values() and h != str(c) else h
    index_name = frame.index.name
    if all(k == v for k, v in shown.items()) and (
        index_name is None or labels.header(index_name, names) == index_name
    ):
        return frame, shown
    renamed = frame.rename(columns=lambda c: shown[str(c)])
    if index_name is not None:
        renamed.index = renamed.index.rename(labels.header(index_name, names))
    return renamed, shown


def table(
    frame: pd.DataFrame,
    name: str,
    key: str,
    *,
    index: bool = False,
    hide: list[str] | tuple[str, ...] = (),
    names: frozenset[str] | set[str] = frozenset(),
    csv: pd.DataFrame | None = None,
    **kwargs,
) -> None:
    """Show *frame* and a button to download it as CSV. A missing value shows as "—"
    (not "None": the pairwise matrix's diagonal, a statistic with too few ratings); the
    values themselves are shown and downloaded as they are. Columns in *hide* are left out
    of the table shown (not of the download). The headers shown are in the page's language
    (the CSV keeps the column names); *names* are columns named after people, kept as
    typed; *column_config* is keyed by column name. *csv*, when given, is downloaded instead
    of *frame* (a page that shows some cells in its language downloads the service's
    frame as it is)."""
    kept, shown = display_headers(
        labels.cells(frame.drop(columns=[c for c in hide if c in frame.columns])),
        frozenset(names),
    )
    view, as_text = styled(kept)
    given = kwargs.pop("column_config", None) or {}
    config = {shown.get(str(c), str(c)): v for c, v in given.items()}
    for c in as_text:  # numbers shown as text stay right-aligned, like the others
        config[c] = {**(config.get(c) or {}), "alignment": "right"}
    st.dataframe(
        view, column_config=config or None, hide_index=not index, width="stretch", **kwargs
    )
    download_csv(
        t("Download {name} (CSV)", name=labels.table_name(name)),
        frame if csv is None else csv,
        f"{name}.csv",
        key,
        index=index,
    )
