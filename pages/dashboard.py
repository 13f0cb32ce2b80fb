"""QA dashboard (admin): completion, the published agreement tables, rater quality, the
disagreement explorer and a one-click HTML report. Thin: widgets → one service → render."""

from __future__ import annotations

import streamlit as st

from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, current_language, fmt_decimal, fmt_int, fmt_percent, t, tn
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import dashboard as dashboard_svc
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import plots
from medsim_annot.services import quality as quality_svc
from medsim_annot.services import stopping as stopping_svc
from medsim_annot.services.adjudication import board as adjudication_svc
from medsim_annot.services.dashboard import labels
from medsim_annot.services.study_handle import Study
from pages import _practice, _predictions, _qa, _ui

#: The check-pair columns of the pace table, left out while no check pair was answered.
CHECK_COLUMNS = ("n_checks", "n_correct", "check_accuracy", "ci_low", "ci_high", "check_warning")
#: The disagreement kinds of the explorer as the page names them.
KIND_LABELS = {
    "no majority": N_("no majority"),
    "all different": N_("all different"),
    "auto-label ≠ majority": N_("auto-label ≠ majority"),
}
#: A doctor's access in the completion table.
ACCESS_LABELS = {
    "active": N_("active"),
    "code revoked": N_("code revoked"),
    "imported": N_("imported"),
}
#: The headline's reasons for a figure left out, by figure.
REASON_LABELS = {"audit": N_("audit"), "agreement": N_("agreement")}
#: The audit table's rows that are not a group of the study.
GROUP_LABELS = {"overall": N_("overall"), "all": N_("all")}
#: The model of the doctors' choices.
MODEL_LABELS = {"off": N_("off"), "dawid-skene": N_("Dawid–Skene"), "mace": N_("MACE")}


def _sequential_audit(study: Study) -> None:
    """Per group: n, accuracy and precision with Wilson intervals, pairs still needed,
    serving/stopped; the admin's switch for stopping."""
    status = stopping_svc.audit_status(study)
    if status is None:
        return
    st.header(t("Sequential audit"))
    st.caption(
        t(
            "Each group stops being served once the {method} of its accuracy is within "
            "±{target} (checked at 97.5% after every rating; Wilson 1927, Agresti & "
            "Coull 1998) and it has {positives} positives and {negatives} negatives (by "
            "automatic label) with a majority verdict. Computed on the pairs of each group "
            "whose current ratings have a strict majority; stopped groups' unrated slots are "
            "withdrawn (kept, and served again when stopping is turned off).",
            method=labels.interval(status.method, status.predictions),
            target=fmt_decimal(status.target, 2),
            positives=fmt_int(status.min_positives),
            negatives=fmt_int(status.min_negatives),
        )
    )
    switch_key = f"dashboard_stopping:{study.name}"

    @_ui.requires("admin")
    def _switch() -> None:
        stopping_svc.set_stopping(study, bool(st.session_state[switch_key]))

    st.toggle(
        t("Stop groups that reach their target"),
        value=status.enabled,
        key=switch_key,
        on_change=_switch,
        help=t(
            "Off serves every withdrawn slot again; on stops at once every group already "
            "within its target."
        ),
    )
    groups = status.groups
    _qa.table(
        groups.assign(status=[t(plots.STATUS_NAMES.get(str(v), str(v))) for v in groups["status"]])
        if "status" in groups.columns
        else groups,
        "sequential-audit",
        "dashboard_dl_sequential",
        csv=groups,
    )
    st.plotly_chart(
        plots.sequential_audit_figure(status.groups, status.target), key="dashboard_fig_sequential"
    )


def _model_of_the_doctors(dash: dashboard_svc.Dashboard) -> None:
    """Crowd-kit's Dawid–Skene or MACE fitted to the ratings, on request (nominal scales)."""
    if dash.scale.level == "nominal":
        st.subheader(t("Gold from a model of the doctors"))
        # The options are the labels shown (a widget's options are what a test reads).
        choices = {t(MODEL_LABELS.get(m, m)): m for m in ("off", *dashboard_svc.MODEL_METHODS)}
        picked = st.segmented_control(
            t("Model"),
            list(choices),
            default=t(MODEL_LABELS["off"]),
            key="dashboard_model",
            help=t(
                "Dawid–Skene (a confusion matrix per doctor) or MACE (a competence per "
                "doctor), fitted by crowd-kit to the current ratings. Majority stays the "
                "verdict."
            ),
        )
        method = choices.get(str(picked), "off") if picked else "off"
        if method != "off":
            model = _qa.load_model_quality(dash, method)
            if model["reason"]:
                st.caption(_ui.plain_markdown(model["reason"]))
            else:
                st.metric(
                    t("Pairs the model labels differently from the majority"),
                    fmt_int(model["differs"]),
                )
                _qa.table(model["raters"], f"{method}-raters", "dashboard_dl_model_raters")
                if len(model["confusion"]):
                    st.caption(t("Estimated confusion: P(doctor gives *given* | true label)."))
                    _qa.table(
                        model["confusion"], "dawid-skene-confusion", "dashboard_dl_model_conf"
                    )


def _adjudication(study: Study) -> None:
    """Adjudication progress, each rater against the adjudicated labels, the reasons."""
    adj = adjudication_svc.summary(study)
    p = adj.progress
    if not p.needed and not p.decisions:
        return  # nothing to adjudicate and nothing decided: no section of zeros
    st.header(t("Adjudication"))
    cols = st.columns(3)
    cols[0].metric(t("Pairs needing a decision"), fmt_int(p.needed))
    cols[1].metric(t("Decided"), fmt_int(p.decided))
    cols[2].metric(t("Flagged for the guideline"), fmt_int(p.flagged))
    if not p.decisions:
        st.caption(t("No pair decided yet: decide them on the Adjudicate page."))
        return
    st.caption(
        t(
            "Each rater's answers compared with the adjudicated labels of the pairs they "
            "rated. The agreement figures above stay computed on the raters' own answers: a "
            "decision is never counted as a rating."
        )
    )
    _qa.table(adj.raters, "adjudicated-agreement", "dashboard_dl_adjudicated")
    st.plotly_chart(plots.adjudication_reasons_figure(adj.reasons), key="dashboard_fig_adj_reasons")


def _disagreement_explorer(dash: dashboard_svc.Dashboard) -> None:
    """The pairs the doctors disagree on, filtered by kind and by group."""
    st.header(t("Disagreement explorer"))
    kinds = [
        k
        for k in dashboard_svc.DISAGREEMENT_KINDS
        if dash.audit is not None or k != "auto-label ≠ majority"
    ]
    # The options are the labels shown (what a test reads), mapped back to the kinds.
    kind_of = {t(KIND_LABELS.get(k, k)): k for k in kinds}
    chosen = [
        kind_of[k]
        for k in st.multiselect(
            t("Show pairs with"),
            list(kind_of),
            default=list(kind_of),
            placeholder=t("Choose kinds of disagreement"),
            key="dashboard_kinds",
        )
    ]
    groups = {}
    options = {c: v for c, v in dash.group_options().items() if v}
    if options:
        gcols = st.columns(len(options))
        for gc, (col, values) in zip(gcols, options.items()):
            every = t("(all)")
            value = gc.selectbox(labels.header(col), [every, *values], key=f"dashboard_group_{col}")
            groups[col] = "(all)" if value == every else value
    rows = dash.disagreements(chosen, groups)
    st.caption(tn("{n} pair", "{n} pairs", len(rows), n=fmt_int(len(rows))))
    shown = (
        rows.assign(
            why=[
                "; ".join(t(KIND_LABELS.get(k, k)) for k in str(w).split("; ") if k)
                for w in rows["why"]
            ]
        )
        if "why" in rows.columns and len(rows)
        else rows
    )
    _qa.table(shown, "disagreements", "dashboard_dl_disagreements", csv=rows)


def _quality_over_time(study: Study) -> None:
    """Each doctor's windows, the drift alerts with their evidence and the admin's pause;
    one timeline per doctor with the guideline revisions marked."""
    st.subheader(t("Quality over time"))
    q = drift_svc.study_quality_over_time(study)
    s = q.settings
    st.caption(
        t(
            "Windows of {window} ratings in the order they were made (and per day). A drift "
            "alert is raised when a window is more than {margin} below the doctor's own "
            "first {n} window(s) and its 95% interval lies below theirs. Guideline revisions "
            "are the dashed lines.",
            window=fmt_int(s.window),
            margin=fmt_percent(s.margin),
            n=fmt_int(s.baseline_windows),
        )
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
            t("Timeline of"),
            doctors,
            index=doctors.index(flagged[0]) if flagged else 0,
            key="dashboard_timeline_doctor",
        )
        st.plotly_chart(
            plots.quality_timeline_figure(q.windows, who, revisions=q.revisions, alerts=q.alerts),
            key="dashboard_fig_timeline",
        )
    with st.expander(t("Per day")):
        _qa.table(q.days, "quality-days", "dashboard_dl_quality_days")
    _drift_settings(study, s)


def _pause_form(study: Study, q: drift_svc.QualityOverTime) -> None:
    """Pause a flagged doctor (an event with the alert's evidence) or, in a study with
    practice pairs, send them back to practice (recalibration: their real queue closes until
    they pass a new practice round)."""
    practice = _practice.has_practice(study)
    with st.form("dashboard_pause"):
        who = st.selectbox(t("Doctor"), q.flagged, key="dashboard_pause_doctor")
        reason = st.text_input(t("Reason"), t("drift alert"), key="dashboard_pause_reason")
        cols = st.columns(2)
        if cols[0].form_submit_button(t("Pause this doctor")):
            _pause(study, q, str(who), str(reason))
        if practice and cols[1].form_submit_button(t("Send back to practice")):
            _practice.send_back(study, str(who), str(reason))


@_ui.requires("admin")
def _pause(study: Study, q: drift_svc.QualityOverTime, who: str, reason: str) -> None:
    evidence = " ".join(q.alerts[q.alerts["annotator"] == who]["evidence"].head(1))
    admin = _ui.current_admin()
    try:
        drift_svc.pause_annotator(
            study, who, by=admin.name if admin else "admin", reason=reason, evidence=evidence
        )
    except UsageProblem as exc:  # no reason given, or the doctor is gone: said, nothing stored
        st.error(_ui.plain_markdown(str(exc)))
        return
    st.success(_ui.plain_markdown(t("Paused {name} (recorded in the activity log).", name=who)))


def _drift_settings(study: Study, settings: drift_svc.DriftSettings) -> None:
    """Window size and drift margin, changed in place (logged)."""
    with st.expander(t("Quality-over-time settings")), st.form("dashboard_drift_settings"):
        window = st.number_input(
            t("Ratings per window"), 1, 10_000, int(settings.window), 10, key="dashboard_window"
        )
        margin = st.slider(
            t("Alert when a window is this far below the doctor's first windows"),
            0.01,
            0.99,
            float(settings.margin),
            0.01,
            key="dashboard_drift_margin",
        )
        if st.form_submit_button(t("Save settings")):
            _save_drift(study, int(window), float(margin))


@_ui.requires("admin")
def _save_drift(study: Study, window: int, margin: float) -> None:
    drift_svc.set_settings(study, window=window, margin=margin)
    st.rerun()


def _check_settings(study: Study, settings: quality_svc.QualitySettings) -> None:
    """The rushed threshold and the minimum accuracy on check pairs, changed in place (the
    flags change, never a rating; the change is logged)."""
    with st.expander(t("Rater-check settings")), st.form("dashboard_check_settings"):
        rushed = st.number_input(
            t("An answer faster than this many ms is rushed"),
            0,
            60000,
            int(settings.rushed_ms),
            100,
            key="dashboard_rushed_ms",
        )
        minimum = st.slider(
            t("Warn below this accuracy on check pairs (0 = never)"),
            0.0,
            1.0,
            float(settings.check_min_accuracy or 0.0),
            0.05,
            key="dashboard_check_min_accuracy",
        )
        if st.form_submit_button(t("Save settings")):
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
    st.header(t("Rater quality"))
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
    st.plotly_chart(plots.quality_figure(quality), key="dashboard_fig_quality")
    st.subheader(
        t("Check pairs, rushed answers and pace") if checks else t("Rushed answers and pace")
    )
    settings = dash.quality_settings
    if settings is not None:
        rushed = fmt_int(settings.rushed_ms)
        st.caption(
            t(
                "Rushed: faster than {ms} ms on the pair. Check pairs have a known answer "
                "and are served blind among the others; accuracy with its Wilson 95% "
                "interval. Pace: median seconds per pair, pairs per hour of time on pairs.",
                ms=rushed,
            )
            if checks
            else t(
                "Rushed: faster than {ms} ms on the pair. Pace: median seconds per pair, "
                "pairs per hour of time on pairs.",
                ms=rushed,
            )
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
            t(f.short or f.column) if f else labels.header(col),
            help=t(f.label) if f else None,
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
            tn(
                "**No ratings yet** — 0 of {n} doctor started. The figures appear here with "
                "the first ratings.",
                "**No ratings yet** — 0 of {n} doctors started. The figures appear here with "
                "the first ratings.",
                len(comp),
                n=fmt_int(len(comp)),
            ),
            icon=":material/hourglass_empty:",
        )
    st.subheader(t("Completion"))
    # A table, never markdown: annotator names are shown as typed, never as links.
    comp["access"] = (
        comp["active"]
        .map({True: t(ACCESS_LABELS["active"]), False: t(ACCESS_LABELS["code revoked"])})
        .where(~comp["imported"], t(ACCESS_LABELS["imported"]))
    )
    shown, _ = _qa.display_headers(comp[["annotator", "done", "total", "share", "access"]])
    if not _qa.english_numbers():
        shown = shown.assign(
            **{labels.header(c): [fmt_int(v) for v in comp[c]] for c in ("done", "total")}
        )
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        key="dashboard_completion",
        column_config={
            labels.header("share"): st.column_config.ProgressColumn(
                t("rated"), min_value=0.0, max_value=1.0, format="percent"
            )
        },
    )

    if not started:
        # Doctors may still be in their practice round: its section (unlock, send back)
        # comes before any real rating.
        _practice.panel(study)
        return
    boot = st.toggle(
        t("Bootstrap 95% intervals ({n} resamples)", n=fmt_int(1000)), key="dashboard_bootstrap"
    )
    dash = _qa.load_dashboard(study, 1000 if boot else 0)
    for note in dash.notes:
        st.info(_ui.plain_markdown(note))
    head = dash.headline(dashboard_svc.planned_ratings(study))
    cols = st.columns(4)
    cols[0].metric(
        t("Rated pairs"),
        f"{fmt_int(head['complete_pairs'])} / {fmt_int(head['pairs'])}",
        help=t(
            "Pairs with every planned rating (every doctor whose queue holds the pair has "
            "rated it); {two} have two ratings or more and {one} at least one.",
            two=fmt_int(head["two_rated_pairs"]),
            one=fmt_int(head["rated_pairs"]),
        ),
    )
    cols[0].caption(
        t(
            "with every planned rating; {two} with ≥ 2 ratings, {one} with ≥ 1",
            two=fmt_int(head["two_rated_pairs"]),
            one=fmt_int(head["rated_pairs"]),
        )
    )
    alpha = head["krippendorff_alpha"]
    cols[1].metric(t("Krippendorff's alpha"), t("n/a") if alpha != alpha else fmt_decimal(alpha))
    cols[2].metric(t("Pairs without majority"), fmt_int(head["no_majority"]))
    if "accuracy" in head:
        cols[3].metric(
            t("Auto-label accuracy"),
            t("n/a") if head["accuracy"] != head["accuracy"] else fmt_decimal(head["accuracy"]),
            help=t(
                "Share of pairs whose majority equals the automatic label, on the pairs with "
                "at least two decisive ratings and a majority."
            ),
        )
        cols[3].caption(
            tn(
                "on {n} pair with ≥ 2 decisive ratings",
                "on {n} pairs with ≥ 2 decisive ratings",
                head["accuracy_pairs"],
                n=fmt_int(head["accuracy_pairs"]),
            )
        )
    for what, why in dash.reasons.items():
        if what != "audit" or dash.kind == "binary":
            st.caption(
                _ui.plain_markdown(
                    t(
                        "{what}: {why}",
                        what=t(REASON_LABELS[what])
                        if what in REASON_LABELS
                        else labels.header(what),
                        why=why,
                    )
                )
            )

    # Built when clicked, outside this run: in the language the page is drawn in.
    report_language = current_language()

    def report() -> bytes:
        return _qa.load_report(study, 1000 if boot else 0, report_language)

    st.download_button(
        t("Download the HTML report"),
        _ui.admin_download(report),
        file_name=_qa.download_name(f"qa-report-{study.name}", "html"),
        mime="text/html",
        key="dashboard_report",
        type="primary",
    )

    # ---- binary: AAAI 2020 Table 3 ----------------------------------------------------------
    if dash.audit is not None:
        st.header(t("Automatic labels vs majority"))
        st.caption(
            t(
                "Per group as in Schulz & Juric (AAAI 2020) Table 3: items, share without a "
                "majority, Krippendorff's alpha, accuracy, recall, precision (similar = "
                "positive)."
            )
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
        _qa.table(
            audit.assign(
                group=[t(GROUP_LABELS[g]) if g in GROUP_LABELS else g for g in audit["group"]]
            )
            if "group" in audit.columns
            else audit,
            "audit",
            "dashboard_dl_audit",
            hide=repeated,
            csv=audit,
        )
        st.plotly_chart(plots.audit_figure(audit), key="dashboard_fig_audit")
        conf = dash.confusion()
        st.subheader(t("Confusion matrix"))
        _qa.table(
            conf.rename(index=lambda r: labels.header(r)),
            "confusion",
            "dashboard_dl_confusion",
            index=True,
            csv=conf,
        )
        st.plotly_chart(plots.confusion_figure(conf), key="dashboard_fig_confusion")

    # ---- sequential audit (studies created with --target-ci) -------------------------------
    _sequential_audit(study)

    # ---- agreement: EHR-Rel Tables 2 and 3 ---------------------------------------------------
    st.header(t("Agreement"))
    st.caption(t("Computed on the raters' own answers; adjudicators' decisions are not ratings."))
    if dash.agreement_basis:
        st.caption(_ui.plain_markdown(dash.agreement_basis))
    st.caption(
        t(
            "Overall as in Schulz et al. (COLING 2020) Table 3; ICC and Kendall's W are "
            "meaningful for graded scales."
        )
    )
    summary = dash.summary()
    _qa.table(summary, "agreement", "dashboard_dl_summary", column_config=_summary_columns(summary))
    st.subheader(t("Chance-corrected coefficients"))
    st.caption(
        t(
            "Gwet's AC1 and AC2, Fleiss' kappa, Brennan-Prediger and Conger's kappa with their "
            "standard errors and 95% intervals (Gwet 2014); missing ratings allowed."
        )
    )
    for note in dash.agreement_notes():
        st.info(_ui.plain_markdown(note))
    _qa.table(dash.coefficients(), "coefficients", "dashboard_dl_coefficients")
    st.subheader(t("Pairwise agreement"))
    pw = dash.pairwise_alpha()
    if pw.notna().to_numpy().any():  # no heatmap of empty cells
        st.plotly_chart(plots.pairwise_heatmap(pw), key="dashboard_fig_pairwise")
    _qa.table(
        pw,
        "pairwise-alpha",
        "dashboard_dl_pairwise_matrix",
        index=True,
        names=frozenset(map(str, pw.columns)),
    )
    _qa.table(dash.per_annotator(), "per-annotator", "dashboard_dl_per_annotator")
    with st.expander(t("Every pair of annotators")):
        _qa.table(dash.pairwise_table(), "pairwise", "dashboard_dl_pairwise")
    means = dash.mean_scores()
    if len(means):
        st.subheader(t("Distribution of mean scores"))
        st.plotly_chart(plots.mean_score_histogram(means, dash.scale), key="dashboard_fig_means")

    _rater_quality(study, dash)

    _quality_over_time(study)

    # ---- practice round (studies with practice pairs) -----------------------------------
    _practice.panel(study)

    _model_of_the_doctors(dash)

    _adjudication(study)

    _disagreement_explorer(dash)


@_ui.requires("admin", page=True)
def dashboard_ui() -> None:
    st.title(t("QA dashboard"))
    picked = _qa.pick_study("dashboard_study")
    if picked is None:
        st.stop()
    live = st.toggle(
        t("Refresh every {n} s", n=fmt_int(30)),
        key="dashboard_live",
        help=t("Re-read completion and, when ratings were saved, the figures."),
    )
    # The live refresh re-runs the dashboard body alone (a fragment, applied here where it is
    # called), through the role guard: a fragment's own reruns skip app.py.
    st.fragment(_ui.requires("admin")(_dashboard), run_every=30 if live else None)(picked)
    # ---- a model's scores: prediction-powered audit, model as a rater (outside the live
    # refresh)
    _predictions.panel(picked)


dashboard_ui()
