"""Embedding scoring (admin): score a study's verified subset or an uploaded pairs file with
word embeddings, sentence-transformers models and lexical baselines, then evaluate them with
the papers' metrics and significance tests. Thin: every number comes from
medsim_annot.services.scoring (the same functions as `medsim score` / `medsim evaluate`).
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from data_schemas import columns as C
from data_schemas.errors import InputError
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, fmt_decimal, fmt_int, t
from medsim_annot.io import read_table, upload_types
from medsim_annot.services import scoring
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.gold import filters as filters_svc
from medsim_annot.services.gold import table as table_svc
from medsim_annot.services.study_handle import open_study
from pages._ui import (
    download_csv,
    engine,
    plain_markdown,
    requires,
    show_problems,
    upload_base_name,
    upload_copy,
)

KEY = "scoring_"
LEXICAL = {
    N_("Normalised Levenshtein (rapidfuzz)"): "levenshtein",
    N_("Character n-gram TF-IDF cosine"): "char-ngram",
}
VERIFIED = N_("Verified subset of a study")
UPLOAD = N_("Upload a pairs or gold file")
DOCTORS = N_("Doctors' verdict")
AUTOMATIC = N_("Automatic label")
TASKS = {"binary": N_("binary"), "graded": N_("graded")}
#: Headers of the tables shown (the CSV downloads keep the column names).
SHOWN_COLUMNS = {
    "method": N_("method"),
    "file": N_("file"),
    "metric": N_("metric"),
    "covered": N_("covered"),
    "coverage": N_("coverage"),
    "auc": N_("auc"),
    "accuracy": N_("accuracy"),
    "threshold": N_("threshold"),
    "rho": N_("rho"),
    "rho_low": N_("rho_low"),
    "rho_high": N_("rho_high"),
    "better_than": N_("better_than"),
    "worse_than": N_("worse_than"),
    "better_than_methods": N_("better_than_methods"),
    "worse_than_methods": N_("worse_than_methods"),
    "method_a": N_("method_a"),
    "method_b": N_("method_b"),
    "statistic": N_("statistic"),
    "p_value": N_("p_value"),
    "p_adjusted": N_("p_adjusted"),
    "table": N_("table"),
    "significant": N_("significant"),
    "better": N_("better"),
    "difference": N_("difference"),
    "low": N_("low"),
    "high": N_("high"),
    "confidence": N_("confidence"),
    "pair_id": N_("pair_id"),
    "term_1": N_("term_1"),
    "term_2": N_("term_2"),
    "gold": N_("gold"),
    "score": N_("score"),
    "predicted": N_("predicted"),
    "error": N_("error"),
    "rank_error": N_("rank_error"),
    "gold_rank": N_("gold_rank"),
    "score_rank": N_("score_rank"),
}


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """*frame* with the headers in the person's language (display only)."""
    return frame.rename(
        columns={c: t(SHOWN_COLUMNS[c]) for c in frame.columns if c in SHOWN_COLUMNS}
    )


@st.cache_data(ttl=60, show_spinner=False)
def _available(folder: str | None) -> pd.DataFrame:
    return scoring.list_embeddings(folder, installed=True)


def _pairs_and_gold() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The pairs to score, their gold and what they were chosen by (study and filters, or
    the uploaded file): a study's verified subset or an uploaded file (stops the page until
    there are some)."""
    st.subheader(t("1. Pairs and gold"))
    source = st.radio(
        t("Pairs to score"),
        [VERIFIED, UPLOAD],
        format_func=t,
        horizontal=True,
        key=KEY + "source",
    )
    pairs: pd.DataFrame | None = None
    gold_frame: pd.DataFrame | None = None
    if source.startswith("Verified"):
        studies = [s.study for s in studies_svc.list_studies(engine=engine())]
        if not studies:
            st.info(
                t("There are no studies yet. Create one on the Study setup page, or upload a file.")
            )
            st.stop()
        study = st.selectbox(t("Study"), studies, key=KEY + "study")
        table = table_svc.study_gold_table(open_study(study, engine=engine()))
        has_auto = C.AUTO_LABEL in table.table.columns and table.table[C.AUTO_LABEL].notna().any()
        binary = table.scale.level == "nominal"
        cols = st.columns(3)
        only_verified = cols[0].checkbox(
            t("Only verified pairs (majority = automatic label)"),
            value=binary and has_auto,
            disabled=not (binary and has_auto),
            key=KEY + "verified",
        )
        require_majority = cols[1].checkbox(
            t("Require a majority"), value=binary, disabled=not binary, key=KEY + "majority"
        )
        gold_choice = cols[2].radio(
            t("Gold"),
            [DOCTORS, AUTOMATIC] if has_auto else [DOCTORS],
            format_func=t,
            key=KEY + "goldchoice",
        )
        kept, steps = filters_svc.apply_filters(
            table.table,
            only_verified=only_verified and binary and has_auto,
            require_majority=require_majority and binary,
            has_auto_label=has_auto,
        )
        st.write(
            t(
                "{kept} of {n} pairs kept",
                kept=fmt_int(len(kept)),
                n=fmt_int(len(table.table)),
            )
            + "".join(
                f" · {filters_svc.filter_name(s['filter'])}: "
                f"{fmt_int(s['before'])} → {fmt_int(s['after'])}"
                for s in steps
            )
        )
        pairs = kept[[C.PAIR_ID, C.TERM_1, C.TERM_2]].reset_index(drop=True)
        gold_frame = (
            kept if gold_choice == DOCTORS else kept[[C.PAIR_ID, C.TERM_1, C.TERM_2, C.AUTO_LABEL]]
        )
        basis: dict = {
            "study": study,
            "only_verified": bool(only_verified),
            "require_majority": bool(require_majority),
            "gold": gold_choice,
        }
    else:
        upload = st.file_uploader(
            t("Pairs file with auto_label, a gold export, or an EHR-Rel file"),
            type=upload_types(),
            key=KEY + "upload",
        )
        if upload is None:
            st.stop()
        basis = {"file": upload.name, "sha256": hashlib.sha256(upload.getvalue()).hexdigest()}
        try:
            # A private copy under the base name only, deleted as soon as it is read.
            with upload_copy(upload.name, upload.getvalue()) as path:
                gold_frame = read_table(path)
                pairs = scoring.read_pairs(path)[[C.PAIR_ID, C.TERM_1, C.TERM_2]]
            scoring.gold_from_frame(gold_frame, file=upload.name)
        except InputError as exc:
            show_problems(
                exc,
                t("{file} cannot be used:", file=upload_base_name(upload.name)),
                key="scoring_problems",
            )
            st.stop()
    if pairs is None or gold_frame is None or not len(pairs):
        st.warning(t("No pairs to score with these filters."))
        st.stop()
    return pairs, gold_frame, basis


def _frame_digest(frame: pd.DataFrame) -> str:
    """A digest of a frame's content, so a result is also tied to the ratings behind it."""
    digest = hashlib.sha256("\x1f".join(map(str, frame.columns)).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _result_key(
    basis: dict,
    pairs: pd.DataFrame,
    gold_frame: pd.DataFrame,
    chosen: list[str],
    lexical: list[str],
    word_metrics: list[str],
) -> str:
    """What a result was computed from: the study and filters (or the file), the pairs and
    gold themselves, and the methods and metrics. A kept result is shown only while all of
    these are still the ones on the page."""
    parts = {
        "basis": basis,
        "pairs": _frame_digest(pairs),
        "gold": _frame_digest(gold_frame),
        "embeddings": sorted(chosen),
        "lexical": sorted(lexical),
        "word_metrics": list(word_metrics),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _methods() -> tuple[pd.DataFrame, list[str], list[str], list[str]]:
    """The installed embeddings and models offered, and the chosen ones, lexical baselines
    and word-embedding metrics."""
    folder = scoring.embeddings_dir()
    with st.spinner(t("Looking for installed models and embeddings…")):
        available = _available(str(folder) if folder else None)
    st.caption(
        t(
            "Offered: installed sentence-transformers model packages, models already in the "
            "local Hugging Face cache (nothing is downloaded), and the files and model folders "
            "in `{folder}`.",
            folder=folder,
        )
        if folder
        else t(
            "Offered: installed sentence-transformers model packages, models already in the "
            "local Hugging Face cache (nothing is downloaded). Set `MEDSIM_EMBEDDINGS_DIR` to a "
            "folder of word2vec/GloVe/fastText files or sentence-transformers model folders to "
            "offer them too."
        )
    )
    chosen = st.multiselect(
        t("Embeddings and models"),
        list(available["name"]) if len(available) else [],
        key=KEY + "embeddings",
        placeholder=t("Choose embeddings or models"),
    )
    lexical = [v for k, v in LEXICAL.items() if st.checkbox(t(k), value=True, key=KEY + v)]
    # The word-embedding metrics apply to word embeddings only: offered once one is chosen.
    formats = (
        set(available.loc[available["name"].isin(chosen), "format"]) if len(available) else set()
    )
    word_metrics: list[str] = []
    if formats & set(scoring.WORD_FORMATS):
        word_metrics = st.multiselect(
            t("Word-embedding metrics"),
            list(scoring.metrics_for("word2vec")),
            default=list(scoring.metrics_for("word2vec")),
            key=KEY + "metrics",
            placeholder=t("Choose metrics"),
        )
    elif any(fmt in scoring.WORD_FORMATS for fmt in available.get("format", [])):
        st.caption(
            t(
                "Word-embedding metrics are offered once a word embedding (word2vec, GloVe, "
                "fastText) is chosen above."
            )
        )
    return available, chosen, lexical, word_metrics


def _score(
    pairs: pd.DataFrame,
    gold_frame: pd.DataFrame,
    available: pd.DataFrame,
    chosen: list[str],
    lexical: list[str],
    word_metrics: list[str],
    key: str,
) -> None:
    """Score every chosen method with a progress bar and evaluate them; keep the result
    under *key* (what it was computed from)."""
    bar = st.progress(0.0, text=t("starting"))
    frames: dict[str, pd.DataFrame] = {}
    jobs = [
        (row["name"], row["path"], row["format"])
        for _, row in available.iterrows()
        if row["name"] in chosen
    ] + [(m, None, m) for m in lexical]
    try:
        for i, (name, path, fmt) in enumerate(jobs):

            def progress(done, total, stage, _i=i, _name=name):
                frac = (_i + done / max(total, 1)) / len(jobs)
                bar.progress(
                    min(frac, 1.0),
                    text=t(
                        "{name}: {stage} ({done}/{total})",
                        name=_name,
                        stage=t(stage),
                        done=fmt_int(done),
                        total=fmt_int(total),
                    ),
                )

            metrics = word_metrics if fmt in scoring.WORD_FORMATS else None
            frames[name] = scoring.score_pairs(pairs, path, fmt, metrics, progress=progress)
        bar.progress(1.0, text=t("evaluating"))
        result = scoring.evaluate_scores(frames, gold_frame, n_resamples=2000)
        st.session_state[KEY + "result"] = (key, frames, result)
        bar.empty()
    except InputError as exc:
        bar.empty()
        show_problems(exc, key="scoring_run_problems")
    except UsageProblem as exc:
        bar.empty()
        st.error(plain_markdown(str(exc)))


def _results(gold_frame: pd.DataFrame, key: str) -> None:
    """The kept result: the methods table, comparisons, ROC curves, worst errors, downloads —
    only while the study or file, filters, gold and methods are those it was computed from;
    otherwise it is dropped."""
    kept = st.session_state.get(KEY + "result")
    if kept is not None and kept[0] != key:
        del st.session_state[KEY + "result"]
        st.caption(
            t(
                "The previous result was computed on other pairs, gold or methods and is no "
                "longer shown. Score again to see results for the current choice."
            )
        )
        kept = None
    if kept is not None:
        _, frames, result = kept
        st.subheader(t("3. Results"))
        st.write(
            t(
                "Task: **{task}** · gold from {source} · {n_gold} gold pairs · common subset "
                "{n_common} pairs · {n_comparisons} comparisons at α = {alpha} / {k}",
                task=t(TASKS[result.task]) if result.task in TASKS else result.task,
                source=t(result.gold_source),
                n_gold=fmt_int(result.n_gold),
                n_common=fmt_int(result.n_common),
                n_comparisons=fmt_int(result.n_comparisons),
                alpha=fmt_decimal(result.alpha),
                k=fmt_int(max(result.n_comparisons, 1)),
            )
        )
        methods = result.methods
        st.dataframe(shown(methods), hide_index=True, width="stretch")
        download_csv(t("Download results (CSV)"), methods, "methods.csv", KEY + "dl_methods")
        if len(result.comparisons):
            with st.expander(t("Pairwise comparisons")):
                st.dataframe(shown(result.comparisons), hide_index=True, width="stretch")
                download_csv(
                    t("Download comparisons (CSV)"),
                    result.comparisons,
                    "comparisons.csv",
                    KEY + "dl_comp",
                )
        if result.roc:
            fig = go.Figure()
            for name, curve in result.roc.items():
                fig.add_trace(go.Scatter(x=curve["fpr"], y=curve["tpr"], mode="lines", name=name))
            fig.add_trace(
                go.Scatter(
                    x=[0, 1],
                    y=[0, 1],
                    mode="lines",
                    name=t("chance"),
                    line={"dash": "dot", "color": "grey"},
                )
            )
            fig.update_layout(
                title=t("ROC curves"),
                xaxis_title=t("false positive rate"),
                yaxis_title=t("true positive rate"),
                height=450,
            )
            st.plotly_chart(fig, width="stretch")
        method = st.selectbox(t("Worst errors of"), list(methods["method"]), key=KEY + "errmethod")
        if method:
            errors = scoring.pair_errors(frames, gold_frame, method, result)
            st.dataframe(shown(errors), hide_index=True, width="stretch")
        for name, frame in frames.items():
            download_csv(
                t("Download scores: {name}", name=name),
                frame,
                f"scores-{name}.csv",
                KEY + "dl_" + name,
            )


@requires("admin", page=True)
def scoring_ui() -> None:
    st.title(t("Embedding scoring"))
    st.caption(
        t(
            "Which representation of medical terms agrees best with the doctors — and is the "
            "difference real? Pairs every selected method covers form the common subset; "
            "significance is Bonferroni-corrected over all pairs of methods."
        )
    )

    # ---------------------------------------------------------------- 1. pairs and gold
    pairs, gold_frame, basis = _pairs_and_gold()

    # ---------------------------------------------------------------- 2. methods
    st.subheader(t("2. Representations and metrics"))
    available, chosen, lexical, word_metrics = _methods()
    key = _result_key(basis, pairs, gold_frame, chosen, lexical, word_metrics)
    if st.button(
        t("Score and evaluate"), type="primary", key=KEY + "run", disabled=not (chosen or lexical)
    ):
        _score(pairs, gold_frame, available, chosen, lexical, word_metrics, key)

    # ---------------------------------------------------------------- 3. results
    _results(gold_frame, key)


scoring_ui()
