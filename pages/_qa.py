"""Helpers of the QA pages (dashboard, export): the admin guard and engine from
:mod:`pages._ui`, the cached dashboard (keyed by study and ratings version, so a new rating
invalidates it) and CSV download buttons. No SQL and no statistics here."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from medsim_annot.services import dashboard as dashboard_svc
from medsim_annot.services import studies as studies_svc
from pages._ui import (  # noqa: F401 (re-exported for the QA pages)
    download_csv,
    download_name,
    engine,
    plain_markdown,
    require_admin,
)


@st.cache_data(ttl=3600, max_entries=16, show_spinner="Computing the agreement figures…")
def _dashboard(url: str, study: str, version: tuple[int, int], bootstrap: int):
    # url and version are the cache key; the service keeps its own cache with the same key.
    return dashboard_svc.study_dashboard(study, bootstrap=bootstrap, engine=engine())


@st.cache_data(ttl=3600, max_entries=4, show_spinner="Building the HTML report…")
def _report(url: str, study: str, version: tuple[int, int], bootstrap: int) -> bytes:
    return dashboard_svc.html_report(study, bootstrap=bootstrap, engine=engine()).encode("utf-8")


@st.cache_data(ttl=3600, max_entries=8, show_spinner="Fitting the model of the doctors…")
def _model_quality(url: str, study: str, version: tuple[int, int], method: str) -> dict:
    dash = dashboard_svc.study_dashboard(study, engine=engine())
    return dash.model_quality(method)


def _url() -> str:
    return engine().url.render_as_string(hide_password=True)


def load_dashboard(study: str, bootstrap: int = 0):
    """The study's dashboard; recomputed only when its ratings version changes."""
    version = dashboard_svc.ratings_version(study, engine=engine())
    return _dashboard(_url(), study, version, int(bootstrap))


def load_model_quality(study: str, method: str) -> dict:
    """The dashboard's model of the doctors (Dawid–Skene or MACE); recomputed only when the
    study's ratings version changes."""
    version = dashboard_svc.ratings_version(study, engine=engine())
    return _model_quality(_url(), study, version, method)


def load_report(study: str, bootstrap: int = 0) -> bytes:
    version = dashboard_svc.ratings_version(study, engine=engine())
    return _report(_url(), study, version, int(bootstrap))


def study_names() -> list[str]:
    return [s["study"] for s in studies_svc.list_studies(engine=engine())]


def pick_study(key: str) -> str | None:
    """A study picker; shows a hint and returns None when there are no studies."""
    names = study_names()
    if not names:
        st.info(
            "There are no studies yet: create one on the Study setup page or run `medsim demo`."
        )
        return None
    return st.selectbox("Study", names, key=key)


def table(frame: pd.DataFrame, name: str, key: str, *, index: bool = False, **kwargs) -> None:
    """Show *frame* and a button to download it as CSV."""
    st.dataframe(frame, hide_index=not index, width="stretch", **kwargs)
    download_csv(f"Download {name} (CSV)", frame, f"{name}.csv", key, index=index)
