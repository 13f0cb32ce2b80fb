"""Plotly figures of the QA dashboard, built from the tables of
:class:`medsim_annot.services.dashboard.Dashboard` (no statistics here: only drawing).
Used by the dashboard page (``st.plotly_chart``) and the HTML report."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from babel.numbers import get_decimal_symbol, get_group_symbol

from data_schemas.scales import Scale
from medsim_annot.i18n import N_, current_language, fmt_decimal, fmt_int, t
from medsim_annot.i18n.languages import formatting_locale

_BASE = dict(margin=dict(l=40, r=20, t=50, b=40), template="plotly_white")

#: The names of the metrics drawn as bars or lines (legend and hover).
METRIC_NAMES = {
    "accuracy": N_("accuracy"),
    "recall": N_("recall"),
    "precision": N_("precision"),
    "alpha": N_("alpha"),
}


def separators() -> str:
    """Plotly's ``separators`` for the current language: its decimal mark, then its group
    mark (``",."`` in German: axes and hovers show ``0,87`` and ``1.200``)."""
    loc = formatting_locale(current_language())
    return get_decimal_symbol(loc) + get_group_symbol(loc)


#: Dates on a time axis, written with numbers the way each language orders them (plotly's
#: own dates name the months in English): German 27.11.2026, Spanish 27/11/2026.
DATE_FORMATS = {"de": "%d.%m.%Y", "es": "%d/%m/%Y"}


def date_axis() -> dict:
    """A time axis's tick and hover formats in the current language; English (plotly's own
    format) needs none. Other languages, the pseudo ones too, get numbers only."""
    lang = current_language()
    if lang == "en":
        return {}
    day = DATE_FORMATS.get(lang, "%Y-%m-%d")
    return {"tickformat": day, "hoverformat": day + " %H:%M"}


def _layout() -> dict:
    """The layout every figure shares, with the number format of the current language."""
    return {**_BASE, "separators": separators()}


#: Rows of the audit table that are not a group of the study.
GROUP_NAMES = {"overall": N_("overall"), "all": N_("all")}
#: The rows and columns of the confusion matrix (:meth:`Dashboard.confusion`).
CONFUSION_NAMES = {
    "auto: similar (1)": N_("auto: similar (1)"),
    "auto: not similar (0)": N_("auto: not similar (0)"),
    "majority: similar": N_("majority: similar"),
    "majority: not similar": N_("majority: not similar"),
    "no majority": N_("no majority"),
}
#: A group's state in the sequential audit.
STATUS_NAMES = {"serving": N_("serving"), "stopped": N_("stopped")}


def _labels(values) -> list[str]:
    """Category labels (annotator names, groups) escaped for plotly, whose text understands a
    subset of HTML including live ``<a href>`` links: shown as typed, never as markup
    (a name must not become a link)."""
    return [html.escape(str(v), quote=False) for v in values]


def completion_figure(completion: pd.DataFrame) -> go.Figure:
    """Horizontal bars: ratings done / assigned per annotator."""
    fig = go.Figure(
        go.Bar(
            y=_labels(completion["annotator"]),
            x=completion["share"] * 100,
            orientation="h",
            text=[
                f"{fmt_int(d)} / {fmt_int(n)}"
                for d, n in zip(completion["done"], completion["total"])
            ],
            textposition="auto",
            marker_color="#2a9d8f",
            hovertemplate=t("%{y}: %{x:.0f}% of the queue rated") + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=t("Completion per annotator"),
        xaxis=dict(title=t("% of queue rated"), range=[0, 100]),
        **_layout(),
    )
    return fig


def audit_figure(audit_table: pd.DataFrame) -> go.Figure:
    """Grouped bars of accuracy, recall and precision per group (AAAI 2020 Table 3), with
    bootstrap intervals as error bars when present."""
    fig = go.Figure()
    for metric, color in (
        ("accuracy", "#264653"),
        ("recall", "#2a9d8f"),
        ("precision", "#e9c46a"),
        ("alpha", "#e76f51"),
    ):
        err = None
        lo, hi = f"{metric}_ci_low", f"{metric}_ci_high"
        if lo in audit_table.columns:
            v = audit_table[metric].to_numpy(dtype=float)
            err = dict(
                type="data",
                symmetric=False,
                array=audit_table[hi].to_numpy(dtype=float) - v,
                arrayminus=v - audit_table[lo].to_numpy(dtype=float),
            )
        fig.add_bar(
            name=t(METRIC_NAMES[metric]),
            x=_labels(t(GROUP_NAMES[g]) if g in GROUP_NAMES else g for g in audit_table["group"]),
            y=audit_table[metric],
            error_y=err,
            marker_color=color,
            hovertemplate="%{x}<br>%{fullData.name}: %{y:.2f}<extra></extra>",
        )
    fig.update_layout(
        title=t("Automatic labels vs majority, per group"),
        barmode="group",
        yaxis=dict(range=[0, 1.05]),
        **_layout(),
    )
    return fig


def confusion_figure(confusion: pd.DataFrame) -> go.Figure:
    """Heatmap of the confusion matrix automatic label x majority (counts)."""
    z = confusion.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[t(CONFUSION_NAMES.get(str(c), str(c))) for c in confusion.columns],
            y=[t(CONFUSION_NAMES.get(str(c), str(c))) for c in confusion.index],
            text=[[fmt_int(v) for v in row] for row in confusion.to_numpy().astype(int)],
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            hovertemplate="%{y} · %{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=t("Automatic label vs majority"), yaxis=dict(autorange="reversed"), **_layout()
    )
    return fig


def pairwise_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Heatmap of pairwise Krippendorff's alpha (EHR-Rel Table 2)."""
    z = matrix.to_numpy(dtype=float)
    text = np.where(
        np.isnan(z), "", np.vectorize(lambda x: fmt_decimal(x), otypes=[str])(np.nan_to_num(z))
    )
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=_labels(matrix.columns),
            y=_labels(matrix.index),
            text=text,
            texttemplate="%{text}",
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            colorbar=dict(title=t("alpha")),
            hovertemplate="%{y} · %{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=t("Pairwise Krippendorff's alpha"), yaxis=dict(autorange="reversed"), **_layout()
    )
    return fig


def mean_score_histogram(means: pd.Series, scale: Scale | None = None) -> go.Figure:
    """Distribution of the pairs' mean ratings (EHR-Rel Figure 1)."""
    fig = go.Figure(
        go.Histogram(
            x=means.to_numpy(dtype=float),
            nbinsx=None,
            xbins=dict(size=0.2) if scale is None or scale.numeric else None,
            marker_color="#457b9d",
            hovertemplate=t("mean rating %{x}: %{y} pairs") + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=t("Distribution of mean scores"),
        xaxis_title=t("mean rating"),
        yaxis_title=t("pairs"),
        bargap=0.05,
        **_layout(),
    )
    return fig


def quality_figure(quality: pd.DataFrame) -> go.Figure:
    """Bars of the don't-know share and IAA-1 per annotator; outliers in red."""
    colors = ["#d62828" if o else "#457b9d" for o in quality.get("outlier", [False] * len(quality))]
    fig = go.Figure()
    hover = "%{x}<br>%{fullData.name}: %{y:.2f}<extra></extra>"
    fig.add_bar(
        name=t("IAA-1"),
        x=_labels(quality["annotator"]),
        y=quality["iaa_1"],
        marker_color=colors,
        hovertemplate=hover,
    )
    fig.add_bar(
        name=t("don't-know share"),
        x=_labels(quality["annotator"]),
        y=quality["dont_know_share"],
        marker_color="#adb5bd",
        hovertemplate=hover,
    )
    fig.update_layout(title=t("Rater quality"), barmode="group", **_layout())
    return fig


def sequential_audit_figure(groups: pd.DataFrame, target: float) -> go.Figure:
    """Accuracy and precision of the automatic labels per group of a sequential audit, with
    their Wilson score 95% intervals as error bars (the ``groups`` frame of
    :func:`medsim_annot.services.stopping.audit_status`); a stopped group's bars are
    labelled in the x axis."""
    fig = go.Figure()
    x = [
        t("{group} ({status})", group=g, status=t(STATUS_NAMES.get(str(s), str(s))))
        for g, s in zip(_labels(groups["group"]), groups["status"], strict=True)
    ]
    for metric, color in (("accuracy", "#264653"), ("precision", "#e9c46a")):
        v = groups[metric].to_numpy(dtype=float)
        fig.add_bar(
            name=t(METRIC_NAMES[metric]),
            x=x,
            y=v,
            hovertemplate="%{x}<br>%{fullData.name}: %{y:.3f}<extra></extra>",
            error_y=dict(
                type="data",
                symmetric=False,
                array=groups[f"{metric}_high"].to_numpy(dtype=float) - v,
                arrayminus=v - groups[f"{metric}_low"].to_numpy(dtype=float),
            ),
            marker_color=color,
        )
    fig.update_layout(
        title=t(
            "Sequential audit: estimates with Wilson 95% intervals (target ±{target})",
            target=fmt_decimal(target, 2),
        ),
        barmode="group",
        yaxis=dict(range=[0, 1.05]),
        **_layout(),
    )
    return fig


def adjudication_reasons_figure(reasons: pd.DataFrame) -> go.Figure:
    """Bars of the current decisions per reason (every reason of the taxonomy, zeros too)."""
    fig = go.Figure()
    fig.add_bar(
        x=_labels(reasons["reason"]),
        y=reasons["decisions"],
        marker_color="#457b9d",
        hovertemplate=t("%{x}: %{y} decisions") + "<extra></extra>",
    )
    fig.update_layout(
        title=t("Adjudication reasons"),
        xaxis_title=t("reason"),
        yaxis_title=t("decisions"),
        **_layout(),
    )
    return fig


def quality_timeline_figure(
    windows: pd.DataFrame,
    annotator: str,
    *,
    revisions: pd.DataFrame | None = None,
    alerts: pd.DataFrame | None = None,
) -> go.Figure:
    """One doctor's quality over time: agreement with the other raters' majority and
    accuracy on check pairs per window (with their Wilson intervals), the don't-know share,
    the guideline revisions as dashed vertical lines and the drift alerts as red markers.
    *windows*: :data:`medsim_annot.stats.drift.WINDOW_COLUMNS` rows; x is each window's last
    rating (UTC)."""
    w = windows[windows["annotator"] == annotator].sort_values("end")
    x = pd.to_datetime(w["end"])
    fig = go.Figure()
    for metric, lo, hi, color, name in (
        (
            "majority_agreement",
            "agreement_ci_low",
            "agreement_ci_high",
            "#264653",
            N_("agreement with majority"),
        ),
        ("check_accuracy", "check_ci_low", "check_ci_high", "#2a9d8f", N_("check-pair accuracy")),
    ):
        v = w[metric].to_numpy(dtype=float)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=v,
                mode="lines+markers",
                name=t(name),
                hovertemplate="%{x}<br>%{fullData.name}: %{y:.0%}<extra></extra>",
                line=dict(color=color),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=w[hi].to_numpy(dtype=float) - v,
                    arrayminus=v - w[lo].to_numpy(dtype=float),
                    thickness=1,
                ),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=w["dont_know_share"],
            mode="lines",
            name=t("don't-know share"),
            line=dict(color="#e9c46a", dash="dot"),
            hovertemplate="%{x}<br>%{fullData.name}: %{y:.0%}<extra></extra>",
        )
    )
    if alerts is not None and len(alerts):
        a = alerts[(alerts["annotator"] == annotator) & (alerts["metric"] == "majority_agreement")]
        hit = w[w["window"].isin(a["window"])]
        if len(hit):
            fig.add_trace(
                go.Scatter(
                    x=pd.to_datetime(hit["end"]),
                    y=hit["majority_agreement"],
                    mode="markers",
                    name=t("drift alert"),
                    marker=dict(color="#d62828", size=12, symbol="x"),
                )
            )
    for _, r in (revisions if revisions is not None else pd.DataFrame()).iterrows():
        at = pd.Timestamp(r["at"])
        at = at.tz_convert("UTC").tz_localize(None) if at.tzinfo is not None else at
        fig.add_vline(x=at, line_dash="dash", line_color="#6c757d")
        fig.add_annotation(
            x=at,
            y=1.04,
            text=t("guideline v{version}", version=int(r["version"])),
            showarrow=False,
            yref="y",
        )
    fig.update_layout(
        title=t("Quality over time: {name}", name=html.escape(str(annotator), quote=False)),
        yaxis=dict(title=t("share"), range=[0, 1.08]),
        xaxis=dict(title=t("last rating of the window (UTC)"), **date_axis()),
        **_layout(),
    )
    return fig
