"""Plotly figures of the QA dashboard, built from the tables of
:class:`medsim_annot.services.dashboard.Dashboard` (no statistics here: only drawing).
Used by the dashboard page (``st.plotly_chart``) and the HTML report."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from data_schemas.scales import Scale

_LAYOUT = dict(margin=dict(l=40, r=20, t=50, b=40), template="plotly_white")


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
            text=[f"{d} / {t}" for d, t in zip(completion["done"], completion["total"])],
            textposition="auto",
            marker_color="#2a9d8f",
        )
    )
    fig.update_layout(
        title="Completion per annotator",
        xaxis=dict(title="% of queue rated", range=[0, 100]),
        **_LAYOUT,
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
            name=metric,
            x=_labels(audit_table["group"]),
            y=audit_table[metric],
            error_y=err,
            marker_color=color,
        )
    fig.update_layout(
        title="Automatic labels vs majority, per group",
        barmode="group",
        yaxis=dict(range=[0, 1.05]),
        **_LAYOUT,
    )
    return fig


def confusion_figure(confusion: pd.DataFrame) -> go.Figure:
    """Heatmap of the confusion matrix automatic label x majority (counts)."""
    z = confusion.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(confusion.columns),
            y=list(confusion.index),
            text=confusion.to_numpy().astype(int),
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
        )
    )
    fig.update_layout(
        title="Automatic label vs majority", yaxis=dict(autorange="reversed"), **_LAYOUT
    )
    return fig


def pairwise_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Heatmap of pairwise Krippendorff's alpha (EHR-Rel Table 2)."""
    z = matrix.to_numpy(dtype=float)
    text = np.where(
        np.isnan(z), "", np.vectorize(lambda x: f"{x:.2f}", otypes=[str])(np.nan_to_num(z))
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
            colorbar=dict(title="alpha"),
        )
    )
    fig.update_layout(
        title="Pairwise Krippendorff's alpha", yaxis=dict(autorange="reversed"), **_LAYOUT
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
        )
    )
    fig.update_layout(
        title="Distribution of mean scores",
        xaxis_title="mean rating",
        yaxis_title="pairs",
        bargap=0.05,
        **_LAYOUT,
    )
    return fig


def quality_figure(quality: pd.DataFrame) -> go.Figure:
    """Bars of the don't-know share and IAA-1 per annotator; outliers in red."""
    colors = ["#d62828" if o else "#457b9d" for o in quality.get("outlier", [False] * len(quality))]
    fig = go.Figure()
    fig.add_bar(
        name="IAA-1", x=_labels(quality["annotator"]), y=quality["iaa_1"], marker_color=colors
    )
    fig.add_bar(
        name="don't-know share",
        x=_labels(quality["annotator"]),
        y=quality["dont_know_share"],
        marker_color="#adb5bd",
    )
    fig.update_layout(title="Rater quality", barmode="group", **_LAYOUT)
    return fig


def sequential_audit_figure(groups: pd.DataFrame, target: float) -> go.Figure:
    """Accuracy and precision of the automatic labels per group of a sequential audit, with
    their Wilson score 95% intervals as error bars (the ``groups`` frame of
    :func:`medsim_annot.services.stopping.audit_status`); a stopped group's bars are
    labelled in the x axis."""
    fig = go.Figure()
    x = [f"{g} ({s})" for g, s in zip(_labels(groups["group"]), groups["status"], strict=True)]
    for metric, color in (("accuracy", "#264653"), ("precision", "#e9c46a")):
        v = groups[metric].to_numpy(dtype=float)
        fig.add_bar(
            name=metric,
            x=x,
            y=v,
            error_y=dict(
                type="data",
                symmetric=False,
                array=groups[f"{metric}_high"].to_numpy(dtype=float) - v,
                arrayminus=v - groups[f"{metric}_low"].to_numpy(dtype=float),
            ),
            marker_color=color,
        )
    fig.update_layout(
        title=f"Sequential audit: estimates with Wilson 95% intervals (target ±{target:g})",
        barmode="group",
        yaxis=dict(range=[0, 1.05]),
        **_LAYOUT,
    )
    return fig


def adjudication_reasons_figure(reasons: pd.DataFrame) -> go.Figure:
    """Bars of the current decisions per reason (every reason of the taxonomy, zeros too)."""
    fig = go.Figure()
    fig.add_bar(x=_labels(reasons["reason"]), y=reasons["decisions"], marker_color="#457b9d")
    fig.update_layout(
        title="Adjudication reasons", xaxis_title="reason", yaxis_title="decisions", **_LAYOUT
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
            "agreement with majority",
        ),
        ("check_accuracy", "check_ci_low", "check_ci_high", "#2a9d8f", "check-pair accuracy"),
    ):
        v = w[metric].to_numpy(dtype=float)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=v,
                mode="lines+markers",
                name=name,
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
            name="don't-know share",
            line=dict(color="#e9c46a", dash="dot"),
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
                    name="drift alert",
                    marker=dict(color="#d62828", size=12, symbol="x"),
                )
            )
    for _, r in (revisions if revisions is not None else pd.DataFrame()).iterrows():
        at = pd.Timestamp(r["at"])
        at = at.tz_convert("UTC").tz_localize(None) if at.tzinfo is not None else at
        fig.add_vline(x=at, line_dash="dash", line_color="#6c757d")
        fig.add_annotation(
            x=at, y=1.04, text=f"guideline v{int(r['version'])}", showarrow=False, yref="y"
        )
    fig.update_layout(
        title=f"Quality over time: {html.escape(str(annotator), quote=False)}",
        yaxis=dict(title="share", range=[0, 1.08]),
        xaxis=dict(title="last rating of the window (UTC)"),
        **_LAYOUT,
    )
    return fig
