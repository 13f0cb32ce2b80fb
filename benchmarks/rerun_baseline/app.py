"""Entry point of the rerun baseline (benchmarks only): signs in the annotator whose access
code is in MEDSIM_BENCH_ACCESS_CODE and runs the pre-widget Annotate page."""

from __future__ import annotations

import os

import streamlit as st

from medsim_annot.services.people.annotators import authenticate_annotator
from pages import _ui

st.set_page_config(page_title="medsim-annot baseline", layout="centered")
if _ui.role() != "annotator":
    _ui.sign_in_annotator(authenticate_annotator(os.environ["MEDSIM_BENCH_ACCESS_CODE"]))
st.session_state[_ui.ROUTED] = True
st.navigation(
    [st.Page("annotate_page.py", title="Annotate", default=True)], position="hidden"
).run()
