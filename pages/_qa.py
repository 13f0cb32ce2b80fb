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

from medsim_annot.services import dashboard as dashboard_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.study_handle import Study, open_study
from pages._ui import (  # noqa: F401 (re-exported for the QA pages)
    download_csv,
    download_name,
    engine,
    plain_markdown,
)


def load_dashboard(study: Study, bootstrap: int = 0):
    """The study's dashboard; recomputed only when its ratings version changes."""
    with st.spinner("Computing the agreement figures…"):
        return dashboard_svc.study_dashboard(study, bootstrap=int(bootstrap))


def load_model_quality(dash: dashboard_svc.Dashboard, method: str) -> dict:
    """The model of the doctors (Dawid–Skene or MACE) of the dashboard the page shows: fitted
    once per method and kept with that (cached) dashboard, so no second dashboard is
    computed for it and a new rating (a new dashboard) fits it again."""
    with st.spinner("Fitting the model of the doctors…"):
        return dash.model_quality(method)


def load_report(study: Study, bootstrap: int = 0) -> bytes:
    """The study's HTML report (built on the cached dashboard; completion is current)."""
    return dashboard_svc.html_report(study, bootstrap=int(bootstrap)).encode("utf-8")


def study_names() -> list[str]:
    return [s.study for s in studies_svc.list_studies(engine=engine())]


def pick_study(key: str) -> Study | None:
    """A study picker: the chosen study, resolved once for this run (the services take the
    handle); shows a hint and returns None when there are no studies."""
    names = study_names()
    if not names:
        st.info(
            "There are no studies yet: create one on the Study setup page or run `medsim demo`."
        )
        return None
    return open_study(st.selectbox("Study", names, key=key), engine=engine())


def _number_text(value, whole: bool) -> str:
    """A number as the tables show it: "—" when missing, a count (*whole*) as a whole
    number, else to 3 decimals."""
    if pd.isna(value):
        return "—"
    return str(int(value)) if whole else f"{float(value):.3f}"


def styled(frame: pd.DataFrame) -> tuple[pd.DataFrame | Styler, list[str]]:
    """*frame* as shown, and the number columns now shown as text: numbers to 3 decimals,
    a missing value of any column as "—". (Streamlit draws a missing cell as "None" whatever
    a Styler says, so a number column with a gap is shown as text, right-aligned.)"""
    numbers = list(frame.select_dtypes("number").columns)
    gappy = [c for c in numbers if frame[c].isna().any()]
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


def table(
    frame: pd.DataFrame,
    name: str,
    key: str,
    *,
    index: bool = False,
    hide: list[str] | tuple[str, ...] = (),
    **kwargs,
) -> None:
    """Show *frame* and a button to download it as CSV. A missing value shows as "—"
    (not "None": the pairwise matrix's diagonal, a statistic with too few ratings); the
    values themselves are shown and downloaded as they are. Columns in *hide* are left out
    of the table shown (not of the download)."""
    view, as_text = styled(frame.drop(columns=[c for c in hide if c in frame.columns]))
    config = dict(kwargs.pop("column_config", None) or {})
    for c in as_text:  # numbers shown as text stay right-aligned, like the others
        config[c] = {**(config.get(c) or {}), "alignment": "right"}
    st.dataframe(
        view, column_config=config or None, hide_index=not index, width="stretch", **kwargs
    )
    download_csv(f"Download {name} (CSV)", frame, f"{name}.csv", key, index=index)
