"""The dashboard's predictions panel (admin only): a model's scores narrow the audit's
intervals (prediction-powered inference) and sit beside the doctors as a blinded extra
rater. Thin: widgets → ``services.predictions`` → render. The scores are the study's stored
predictions (latest version) or an uploaded file, read for this panel only; annotators
never see them."""

from __future__ import annotations

import streamlit as st

from data_schemas.errors import InputError, OptionError
from medsim_annot.i18n import N_, t
from medsim_annot.io import upload_types
from medsim_annot.services import predictions as predictions_svc
from medsim_annot.services import stored_predictions as stored_svc
from medsim_annot.services.dashboard import labels
from medsim_annot.services.study_handle import Study
from pages import _qa
from pages._ui import plain_markdown, show_problems, upload_base_name, upload_copy

KEY = "dashboard_predictions_"
#: The intervals the audit can report, as the page names them.
METHOD_NAMES = {"ppi": "PPI++", "classical": N_("classical")}


def _shown(frame):
    """*frame* as shown: headers in the page's language, numbers written its way."""
    shown, _ = _qa.display_headers(labels.cells(frame))
    view, _ = _qa.styled(shown)
    return view


def panel(study: Study) -> None:
    st.header(t("Predictions: prediction-powered audit and the model as a rater"))
    st.caption(
        t(
            "Upload a model's score for every pair (e.g. `medsim score` output, or another "
            "builder's 0/1 labels). The audit's intervals then combine the doctors' verdicts "
            "with the score on every pair (PPI++, Angelopoulos et al. 2023): valid whatever "
            "the model is worth, narrower when it is worth something, and the classical "
            "interval when it is not. Beside the doctors, the model is ranked by "
            "leave-one-out Spearman rho and put to the alternative-annotator test (Calderon "
            "et al., ACL 2025). The study's stored predictions are used when it has some "
            "(Study setup → Predictions); an uploaded file is read for this panel only. "
            "Doctors never see either."
        )
    )
    stored = stored_svc.stored_predictions(study)
    use_stored = False
    if stored is not None:
        label = t("stored: {name} v{version}", name=stored.name, version=stored.attrs["version"])
        source = st.radio(
            t("Scores"), [label, t("upload a file")], horizontal=True, key=KEY + "source"
        )
        use_stored = source == label
    if use_stored and stored is not None:
        predictions, name = stored, f"{stored.name} v{stored.attrs['version']}"
    else:
        up = st.file_uploader(t("Scores file"), type=upload_types(), key=KEY + "file")
        if up is None:
            return
        name = upload_base_name(up.name)
        try:
            with upload_copy(up.name, up.getvalue()) as path:
                columns = predictions_svc.score_columns(path)
                column = (
                    st.selectbox(t("Score column"), columns, key=KEY + "column")
                    if len(columns) > 1
                    else columns[0]
                )
                predictions = predictions_svc.load_predictions(path, score_column=column)
        except InputError as exc:
            show_problems(exc, t("{name} cannot be used:", name=name), key=KEY + "problems")
            return
    c1, c2, c3 = st.columns(3)
    method = c1.segmented_control(
        t("Interval reported"),
        list(predictions_svc.METHODS),
        default="ppi",
        format_func=lambda m: t(METHOD_NAMES.get(str(m), str(m))),
        key=KEY + "method",
        help=t("Both are always shown; this one is the interval the audit reports."),
    )
    target = c2.number_input(
        t("Target half-width (0 = none)"),
        min_value=0.0,
        max_value=0.49,
        value=0.0,
        step=0.01,
        key=KEY + "target",
    )
    epsilon = c3.number_input(
        t("Alt-test epsilon"),
        min_value=0.0,
        max_value=0.95,
        value=predictions_svc.DEFAULT_EPSILON,
        step=0.05,
        key=KEY + "epsilon",
        help=t("0.2 for expert annotators, 0.15 skilled, 0.1 crowd workers (the authors' values)."),
    )
    try:
        out = predictions_svc.study_predictions(
            study,
            predictions,
            method=method or "ppi",
            epsilon=float(epsilon),
            target_ci=float(target) or None,
            file=name,
        )
    except InputError as exc:
        show_problems(exc, t("{name} cannot be used:", name=name), key=KEY + "problems")
        return
    except OptionError as exc:
        st.error(plain_markdown(str(exc)))
        return
    if out.audit is not None:
        st.subheader(t("Prediction-powered audit"))
        st.dataframe(_shown(out.audit), hide_index=True, width="stretch", key=KEY + "audit")
    for note in out.audit_notes:
        st.caption(note)
    if out.model is not None:
        st.subheader(t("The model as a blinded extra rater"))
        st.text(out.model_sentence or "")
        st.dataframe(_shown(out.model), hide_index=True, width="stretch", key=KEY + "model")
    for note in out.model_notes:
        st.caption(note)
