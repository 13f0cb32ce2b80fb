"""QA dashboard (admin): completion, the published agreement tables, rater quality, the
disagreement explorer and a one-click HTML report. Thin: widgets → one service → render."""

from __future__ import annotations

import streamlit as st

from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import dashboard as dashboard_svc
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import plots
from medsim_annot.services import quality as quality_svc
from medsim_annot.services import stopping as stopping_svc
from medsim_annot.services.adjudication import board as adjudication_svc
from medsim_annot.services.study_handle import Study
from pages import _charts, _practice, _predictions, _qa, _ui

#: The check-pair columns of the pace table, left out while no check pair was answered.
CHECK_COLUMNS = ("n_checks", "n_correct", "check_accuracy", "ci_low", "ci_high", "check_warning")


def _sequential_audit(study: Study) -> None:
    """Per group: n, accuracy and precision with Wilson intervals, pairs still needed,
    serving/stopped; the admin's switch for stopping."""
    status = stopping_svc.audit_status(study)
    if status is None:
        return
    st.header("Sequential audit")
    st.caption(
        f"Each group stops being served once the {status.method} of its accuracy is within "
        f"±{status.target:g} (checked at 97.5% after every rating; Wilson 1927, Agresti & "
        f"Coull 1998) and it has {status.min_positives} positives and "
        f"{status.min_negatives} negatives (by automatic label) with a majority verdict. "
        "Computed on the pairs of each group whose current ratings have a strict majority; "
        "stopped groups' unrated slots are withdrawn (kept, and served again when stopping "
        "is turned off)."
    )
    switch_key = f"dashboard_stopping:{study.name}"

    @_ui.requires("admin")
    def _switch() -> None:
        stopping_svc.set_stopping(study, bool(st.session_state[switch_key]))

    st.toggle(
        "Stop groups that reach their target",
        value=status.enabled,
        key=switch_key,
        on_change=_switch,
        help="Off serves every withdrawn slot again; on stops at once every group already "
        "within its target.",
    )
    _qa.table(status.groups, "sequential-audit", "dashboard_dl_sequential")
    _charts.plotly_chart(
        plots.sequential_audit_figure(status.groups, status.target), key="dashboard_fig_sequential"
    )


def _model_of_the_doctors(dash: dashboard_svc.Dashboard) -> None:
    """Crowd-kit's Dawid–Skene or MACE fitted to the ratings, on request (nominal scales)."""
    if dash.scale.level == "nominal":
        st.subheader("Gold from a model of the doctors")
        method = st.segmented_control(
            "Model",
            ["off", *dashboard_svc.MODEL_METHODS],
            default="off",
            key="dashboard_model",
            help="Dawid–Skene (a confusion matrix per doctor) or MACE (a competence per "
            "doctor), fitted by crowd-kit to the current ratings. Majority stays the verdict.",
        )
        if method and method != "off":
            model = _qa.load_model_quality(dash, method)
            if model["reason"]:
                st.caption(_ui.plain_markdown(model["reason"]))
            else:
                st.metric("Pairs the model labels differently from the majority", model["differs"])
                _qa.table(model["raters"], f"{method}-raters", "dashboard_dl_model_raters")
                if len(model["confusion"]):
                    st.caption("Estimated confusion: P(doctor gives *given* | true label).")
                    _qa.table(
                        model["confusion"], "dawid-skene-confusion", "dashboard_dl_model_conf"
                    )


def _adjudication(study: Study) -> None:
    """Adjudication progress, each rater against the adjudicated labels, the reasons."""
    adj = adjudication_svc.summary(study)
    p = adj.progress
    if not p.needed and not p.decisions:
        return  # nothing to adjudicate and nothing decided: no section of zeros
    st.header("Adjudication")
    cols = st.columns(3)
    cols[0].metric("Pairs needing a decision", p.needed)
    cols[1].metric("Decided", p.decided)
    cols[2].metric("Flagged for the guideline", p.flagged)
    if not p.decisions:
        st.caption("No pair decided yet: decide them on the Adjudicate page.")
        return
    st.caption(
        "Each rater's answers compared with the adjudicated labels of the pairs they rated. "
        "The agreement figures above stay computed on the raters' own answers: a decision "
        "is never counted as a rating."
    )
    _qa.table(adj.raters, "adjudicated-agreement", "dashboard_dl_adjudicated")
    _charts.plotly_chart(
        plots.adjudication_reasons_figure(adj.reasons), key="dashboard_fig_adj_reasons"
    )


def _disagreement_explorer(dash: dashboard_svc.Dashboard) -> None:
    """The pairs the doctors disagree on, filtered by kind and by group."""
    st.header("Disagreement explorer")
    kinds = [
        k
        for k in dashboard_svc.DISAGREEMENT_KINDS
        if dash.audit is not None or k != "auto-label ≠ majority"
    ]
    chosen = st.multiselect("Show pairs with", kinds, default=kinds, key="dashboard_kinds")
    groups = {}
    options = {c: v for c, v in dash.group_options().items() if v}
    if options:
        gcols = st.columns(len(options))
        for gc, (col, values) in zip(gcols, options.items()):
            groups[col] = gc.selectbox(col, ["(all)", *values], key=f"dashboard_group_{col}")
    rows = dash.disagreements(chosen, groups)
    st.caption(f"{len(rows)} pairs")
    _qa.table(rows, "disagreements", "dashboard_dl_disagreements")


def _quality_over_time(study: Study) -> None:
    """Each doctor's windows, the drift alerts with their evidence and the admin's pause;
    one timeline per doctor with the guideline revisions marked."""
    st.subheader("Quality over time")
    q = drift_svc.study_quality_over_time(study)
    s = q.settings
    st.caption(
        f"Windows of {s.window} ratings in the order they were made (and per day). A drift "
        f"alert is raised when a window is more than {s.margin:.0%} below the doctor's own "
        f"first {s.baseline_windows} window(s) and its 95% interval lies below theirs. "
        "Guideline revisions are the dashed lines."
    )
    for note in q.notes:
        st.info(_ui.plain_markdown(note))
    for reading in q.readings():
        st.warning(_ui.plain_markdown(reading))  # plain text: names the doctor as typed
    if len(q.alerts):
        _qa.table(q.alerts, "drift-alerts", "dashboard_dl_drift_alerts")
        _pause_form(study, q)
    _qa.table(q.windows, "quality-windows", "dashboard_dl_quality_windows")
    doctors = sorted(set(q.windows["annotator"]))
    if doctors:
        flagged = q.flagged
        who = st.selectbox(
            "Timeline of",
            doctors,
            index=doctors.index(flagged[0]) if flagged else 0,
            key="dashboard_timeline_doctor",
        )
        _charts.plotly_chart(
            plots.quality_timeline_figure(q.windows, who, revisions=q.revisions, alerts=q.alerts),
            key="dashboard_fig_timeline",
        )
    with st.expander("Per day"):
        _qa.table(q.days, "quality-days", "dashboard_dl_quality_days")
    _drift_settings(study, s)


def _pause_form(study: Study, q: drift_svc.QualityOverTime) -> None:
    """Pause a flagged doctor (an event with the alert's evidence) or, in a study with
    practice pairs, send them back to practice (recalibration: their real queue closes until
    they pass a new practice round)."""
    practice = _practice.has_practice(study)
    with st.form("dashboard_pause"):
        who = st.selectbox("Doctor", q.flagged, key="dashboard_pause_doctor")
        reason = st.text_input("Reason", "drift alert", key="dashboard_pause_reason")
        cols = st.columns(2)
        if cols[0].form_submit_button("Pause this doctor"):
            _pause(study, q, str(who), str(reason))
        if practice and cols[1].form_submit_button("Send back to practice"):
            _practice.send_back(study, str(who), str(reason))


@_ui.requires("admin")
def _pause(study: Study, q: drift_svc.QualityOverTime, who: str, reason: str) -> None:
    evidence = " ".join(q.alerts[q.alerts["annotator"] == who]["evidence"].head(1))
    admin = _ui.current_admin()
    drift_svc.pause_annotator(
        study, who, by=admin.name if admin else "admin", reason=reason, evidence=evidence
    )
    st.success(_ui.plain_markdown(f"Paused {who} (recorded in the activity log)."))


def _drift_settings(study: Study, settings: drift_svc.DriftSettings) -> None:
    """Window size and drift margin, changed in place (logged)."""
    with st.expander("Quality-over-time settings"), st.form("dashboard_drift_settings"):
        window = st.number_input(
            "Ratings per window", 1, 10_000, int(settings.window), 10, key="dashboard_window"
        )
        margin = st.slider(
            "Alert when a window is this far below the doctor's first windows",
            0.01,
            0.99,
            float(settings.margin),
            0.01,
            key="dashboard_drift_margin",
        )
        if st.form_submit_button("Save settings"):
            _save_drift(study, int(window), float(margin))


@_ui.requires("admin")
def _save_drift(study: Study, window: int, margin: float) -> None:
    drift_svc.set_settings(study, window=window, margin=margin)
    st.rerun()


def _check_settings(study: Study, settings: quality_svc.QualitySettings) -> None:
    """The rushed threshold and the minimum accuracy on check pairs, changed in place (the
    flags change, never a rating; the change is logged)."""
    with st.expander("Rater-check settings"), st.form("dashboard_check_settings"):
        rushed = st.number_input(
            "An answer faster than this many ms is rushed",
            0,
            60000,
            int(settings.rushed_ms),
            100,
            key="dashboard_rushed_ms",
        )
        minimum = st.slider(
            "Warn below this accuracy on check pairs (0 = never)",
            0.0,
            1.0,
            float(settings.check_min_accuracy or 0.0),
            0.05,
            key="dashboard_check_min_accuracy",
        )
        if st.form_submit_button("Save settings"):
            quality_svc.set_settings(
                study,
                rushed_ms=int(rushed),
                check_min_accuracy=float(minimum) or None,
                clear_min_accuracy=not minimum,
            )
            st.rerun()


def _rater_quality(study: Study, dash: dashboard_svc.Dashboard) -> None:
    """Rater quality, then check pairs (only when some were answered), rushed answers and
    pace, the rater-check settings and straight-lining runs."""
    st.header("Rater quality")
    if dash.imported:
        st.info(_ui.plain_markdown(dash.imported_note()))
    pace = dash.pace_table()
    checks = "n_checks" in pace.columns and bool(pace["n_checks"].fillna(0).sum())
    quality = dash.quality_table()
    if not checks:  # no check pairs answered: their columns would be empty
        pace = pace.drop(columns=[c for c in CHECK_COLUMNS if c in pace.columns])
        quality = quality.drop(columns=[c for c in CHECK_COLUMNS if c in quality.columns])
    for reading in quality["reading"]:
        st.text(f"• {reading}")  # plain text: readings name annotators
    _qa.table(quality, "rater-quality", "dashboard_dl_quality")
    _charts.plotly_chart(plots.quality_figure(quality), key="dashboard_fig_quality")
    st.subheader("Check pairs, rushed answers and pace" if checks else "Rushed answers and pace")
    settings = dash.quality_settings
    if settings is not None:
        st.caption(
            f"Rushed: faster than {settings.rushed_ms:,} ms on the pair. "
            + (
                "Check pairs have a known answer and are served blind among the others; "
                "accuracy with its Wilson 95% interval. "
                if checks
                else ""
            )
            + "Pace: median seconds per pair, pairs per hour of time on pairs."
        )
    for warning in dash.check_warnings:
        st.warning(_ui.plain_markdown(warning))  # warnings name annotators
    _qa.table(pace, "rater-checks", "dashboard_dl_rater_checks")
    if settings is not None:
        _check_settings(study, settings)
    if len(dash.runs()):
        _qa.table(dash.runs(), "straight-lining-runs", "dashboard_dl_runs")


def _summary_columns(summary) -> dict:
    """The agreement summary in columns that fit the page: the counts under their own names,
    each coefficient under its short header (α, HUB incl., …) with its full name as the
    header's help. The CSV download keeps the full column names."""
    full = {f.column: f for f in agreement_svc.SUMMARY_FIGURES}
    config = {}
    for col in summary.columns:
        f = full.get(col)
        # No fixed width: each column is as wide as its header and values ("HUB incl." was
        # cut to "HU…" at width "small").
        config[col] = st.column_config.Column(
            (f.short or f.column) if f else col, help=f.label if f else None
        )
    return config


def _dashboard(study: Study) -> None:
    """Everything the live refresh re-reads: completion, the figures (from the cached
    dashboard, recomputed only when ratings were saved), adjudication, disagreements."""
    # ---- completion (cheap, never cached: always current) --------------------------------
    comp = dashboard_svc.completion(study)
    started = int((comp["done"] > 0).sum())
    if not started:
        # One card, not a page of empty tables, axes and heatmaps.
        st.info(
            f"**No ratings yet** — 0 of {len(comp)} doctors started. The figures appear here "
            "with the first ratings.",
            icon=":material/hourglass_empty:",
        )
    st.subheader("Completion")
    # A table, never markdown: annotator names are shown as typed, never as links.
    comp["access"] = (
        comp["active"]
        .map({True: "active", False: "code revoked"})
        .where(~comp["imported"], "imported")
    )
    st.dataframe(
        comp[["annotator", "done", "total", "share", "access"]],
        hide_index=True,
        width="stretch",
        key="dashboard_completion",
        column_config={
            "share": st.column_config.ProgressColumn(
                "rated", min_value=0.0, max_value=1.0, format="percent"
            )
        },
    )

    if not started:
        # Doctors may still be in their practice round: its section (unlock, send back)
        # comes before any real rating.
        _practice.panel(study)
        return
    boot = st.toggle("Bootstrap 95% intervals (1,000 resamples)", key="dashboard_bootstrap")
    dash = _qa.load_dashboard(study, 1000 if boot else 0)
    for note in dash.notes:
        st.info(_ui.plain_markdown(note))
    head = dash.headline(dashboard_svc.planned_ratings(study))
    cols = st.columns(4)
    cols[0].metric(
        "Rated pairs",
        f"{head['complete_pairs']} / {head['pairs']}",
        help="Pairs with every planned rating (every doctor whose queue holds the pair has "
        f"rated it); {head['two_rated_pairs']} have two ratings or more and "
        f"{head['rated_pairs']} at least one.",
    )
    cols[0].caption(
        f"with every planned rating; {head['two_rated_pairs']} with ≥ 2 ratings, "
        f"{head['rated_pairs']} with ≥ 1"
    )
    alpha = head["krippendorff_alpha"]
    cols[1].metric("Krippendorff's alpha", "n/a" if alpha != alpha else f"{alpha:.2f}")
    cols[2].metric("Pairs without majority", head["no_majority"])
    if "accuracy" in head:
        cols[3].metric(
            "Auto-label accuracy",
            "n/a" if head["accuracy"] != head["accuracy"] else f"{head['accuracy']:.2f}",
            help="Share of pairs whose majority equals the automatic label, on the pairs with "
            "at least two decisive ratings and a majority.",
        )
        cols[3].caption(f"on {head['accuracy_pairs']} pairs with ≥ 2 decisive ratings")
    for what, why in dash.reasons.items():
        if what != "audit" or dash.kind == "binary":
            st.caption(_ui.plain_markdown(f"{what}: {why}"))

    st.download_button(
        "Download the HTML report",
        _ui.admin_download(lambda: _qa.load_report(study, 1000 if boot else 0)),
        file_name=_qa.download_name(f"qa-report-{study.name}", "html"),
        mime="text/html",
        key="dashboard_report",
        type="primary",
    )

    # ---- binary: AAAI 2020 Table 3 ----------------------------------------------------------
    if dash.audit is not None:
        st.header("Automatic labels vs majority")
        st.caption(
            "Per group as in Schulz & Juric (AAAI 2020) Table 3: items, share without a "
            "majority, Krippendorff's alpha, accuracy, recall, precision (similar = positive)."
        )
        audit = dash.audit_table()
        # `group` already names each row's group columns: shown once, so that α, accuracy,
        # precision and recall fit on screen (the CSV keeps every column).
        names = [str(c) for c in audit.columns]
        repeated = (
            names[names.index("group") + 1 : names.index("items")]  # the group columns
            if "group" in names and "items" in names
            else []
        )
        _qa.table(audit, "audit", "dashboard_dl_audit", hide=repeated)
        _charts.plotly_chart(plots.audit_figure(audit), key="dashboard_fig_audit")
        conf = dash.confusion()
        st.subheader("Confusion matrix")
        _qa.table(conf, "confusion", "dashboard_dl_confusion", index=True)
        _charts.plotly_chart(plots.confusion_figure(conf), key="dashboard_fig_confusion")

    # ---- sequential audit (studies created with --target-ci) -------------------------------
    _sequential_audit(study)

    # ---- agreement: EHR-Rel Tables 2 and 3 ---------------------------------------------------
    st.header("Agreement")
    st.caption("Computed on the raters' own answers; adjudicators' decisions are not ratings.")
    if dash.agreement_basis:
        st.caption(_ui.plain_markdown(dash.agreement_basis))
    st.caption(
        "Overall as in Schulz et al. (COLING 2020) Table 3; ICC and Kendall's W are "
        "meaningful for graded scales."
    )
    summary = dash.summary()
    _qa.table(summary, "agreement", "dashboard_dl_summary", column_config=_summary_columns(summary))
    st.subheader("Chance-corrected coefficients")
    st.caption(
        "Gwet's AC1 and AC2, Fleiss' kappa, Brennan-Prediger and Conger's kappa with their "
        "standard errors and 95% intervals (Gwet 2014); missing ratings allowed."
    )
    for note in dash.agreement_notes():
        st.info(_ui.plain_markdown(note))
    _qa.table(dash.coefficients(), "coefficients", "dashboard_dl_coefficients")
    st.subheader("Pairwise agreement")
    pw = dash.pairwise_alpha()
    if pw.notna().to_numpy().any():  # no heatmap of empty cells
        _charts.plotly_chart(plots.pairwise_heatmap(pw), key="dashboard_fig_pairwise")
    _qa.table(pw, "pairwise-alpha", "dashboard_dl_pairwise_matrix", index=True)
    _qa.table(dash.per_annotator(), "per-annotator", "dashboard_dl_per_annotator")
    with st.expander("Every pair of annotators"):
        _qa.table(dash.pairwise_table(), "pairwise", "dashboard_dl_pairwise")
    means = dash.mean_scores()
    if len(means):
        st.subheader("Distribution of mean scores")
        _charts.plotly_chart(
            plots.mean_score_histogram(means, dash.scale), key="dashboard_fig_means"
        )

    _rater_quality(study, dash)

    _quality_over_time(study)

    # ---- practice round (studies with practice pairs) -----------------------------------
    _practice.panel(study)

    _model_of_the_doctors(dash)

    _adjudication(study)

    _disagreement_explorer(dash)


@_ui.requires("admin", page=True)
def dashboard_ui() -> None:
    st.title("QA dashboard")
    picked = _qa.pick_study("dashboard_study")
    if picked is None:
        st.stop()
    live = st.toggle(
        "Refresh every 30 s",
        key="dashboard_live",
        help="Re-read completion and, when ratings were saved, the figures.",
    )
    # The live refresh re-runs the dashboard body alone (a fragment, applied here where it is
    # called), through the role guard: a fragment's own reruns skip app.py.
    st.fragment(_ui.requires("admin")(_dashboard), run_every=30 if live else None)(picked)
    # ---- a model's scores: prediction-powered audit, model as a rater (outside the live
    # refresh)
    _predictions.panel(picked)


dashboard_ui()
