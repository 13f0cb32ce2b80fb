"""The whole dashboard as one self-contained HTML file (plotly.js inline, no internet
needed). The page is assembled from named parts: the header (title, provenance, headline
figures), the charts, then the tables section by section."""

from __future__ import annotations

import datetime as dt
import html as _html
from dataclasses import dataclass, field

import pandas as pd
from plotly.graph_objects import Figure

import medsim_annot
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import plots
from medsim_annot.services.dashboard.store import completion, study_dashboard
from medsim_annot.services.stopping import audit_status
from medsim_annot.services.study_handle import Study

STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
    ".tbl{border-collapse:collapse;font-size:13px}.tbl td,.tbl th{padding:3px 8px;"
    "border-bottom:1px solid #ddd;text-align:right}"
)


def _table_html(frame: pd.DataFrame, digits: int = 2) -> str:
    if frame is None or frame.empty:
        return "<p><em>nothing to show</em></p>"
    return frame.to_html(
        index=False,
        escape=True,
        na_rep="–",
        float_format=lambda x: f"{x:.{digits}f}",
        border=0,
        classes="tbl",
    )


def _quality_over_time(study: Study, rep: _Report) -> list[str]:
    """The quality-over-time section (alerts with their evidence, windows) and one timeline
    per doctor among the report's charts."""
    q = drift_svc.study_quality_over_time(study)
    s = q.settings
    out = [
        "<h2>Quality over time</h2>",
        f"<p>Windows of {s.window} ratings in the order they were made; a drift alert when a "
        f"window is more than {s.margin:.0%} below the doctor's first {s.baseline_windows} "
        "window(s) and its 95% interval lies below theirs.</p>",
        *(f"<p>{_html.escape(n)}</p>" for n in q.notes),
        *(f"<p><b>Drift:</b> {_html.escape(r)}</p>" for r in q.readings()),
        _table_html(q.alerts.drop(columns=["evidence"]))
        if len(q.alerts)
        else "<p>No drift alert.</p>",
    ]
    for who in sorted(set(q.windows["annotator"])):
        rep.figures.append(
            (
                f"Quality over time: {who}",
                plots.quality_timeline_figure(
                    q.windows, who, revisions=q.revisions, alerts=q.alerts
                ),
            )
        )
    return out


@dataclass
class _Report:
    """The report's parts, in page order: :attr:`header`, :attr:`figures` (title, chart),
    :attr:`sections` (the tables)."""

    header: list[str] = field(default_factory=list)
    figures: list[tuple[str, Figure]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)

    def figures_html(self) -> list[str]:
        out = []
        for i, (title, fig) in enumerate(self.figures):
            out.append(f"<h2>{_html.escape(title)}</h2>")
            out.append(
                fig.to_html(
                    full_html=False,
                    # plotly.js once, with the first chart; the others reuse it.
                    include_plotlyjs="inline" if i == 0 else False,
                    default_width="100%",
                    default_height="420px",
                )
            )
        return out

    def page(self, title: str) -> str:
        return (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{_html.escape(title)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(self.header)
            + "\n".join(self.figures_html())
            + "\n".join(self.sections)
            + "</body></html>"
        )


def html_report(study: Study, *, bootstrap: int = 0, now: dt.datetime | None = None) -> str:
    """The study's QA report as one self-contained HTML page (plotly.js inline, no
    internet needed): headline, completion, the published tables, the charts, rater
    quality and the disagreement list."""
    dash = study_dashboard(study, bootstrap=bootstrap)
    comp = completion(study)
    when = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    rep = _Report()
    rep.header += [
        f"<h1>QA report: {_html.escape(study.name)}</h1>",
        f"<p>Scale <b>{_html.escape(dash.scale.name)}</b> ({dash.scale.level}); ratings "
        f"version {dash.version[0]} / {dash.version[1]}; medsim-annot "
        f"{medsim_annot.__version__}; generated {when}.</p>",
        _table_html(pd.DataFrame([dash.headline()])),
    ]
    rep.sections += ["<h2>Completion</h2>", _table_html(comp)]
    rep.figures.append(("Completion per annotator", plots.completion_figure(comp)))
    if dash.audit is not None:
        audit, confusion = dash.audit_table(), dash.confusion()
        rep.sections += [
            "<h2>Automatic labels vs majority (AAAI 2020 Table 3 layout)</h2>",
            _table_html(audit),
            "<h3>Confusion matrix</h3>",
            confusion.to_html(escape=True, border=0, classes="tbl"),
        ]
        rep.figures += [
            ("Audit per group", plots.audit_figure(audit)),
            ("Automatic label vs majority", plots.confusion_figure(confusion)),
        ]
    seq = audit_status(study)
    if seq is not None:
        rep.sections += [
            "<h2>Sequential audit</h2>",
            f"<p>Stopping {'on' if seq.enabled else 'off'}: a group stops being served when the "
            f"half-width of its accuracy interval is at most {seq.target:g}, after at least "
            f"{seq.min_positives} positive and {seq.min_negatives} negative verdicts. "
            f"Intervals: {_html.escape(seq.method)}.</p>",
            _table_html(seq.groups, digits=3),
        ]
        rep.figures.append(
            ("Sequential audit per group", plots.sequential_audit_figure(seq.groups, seq.target))
        )
    pairwise = dash.pairwise_alpha()
    rep.sections += [
        "<h2>Agreement (EHR-Rel Table 3 layout)</h2>",
        _table_html(dash.summary()),
        "<h3>Chance-corrected coefficients (standard error, 95% interval; Gwet 2014)</h3>",
        *(f"<p>{_html.escape(n)}</p>" for n in dash.agreement_notes()),
        _table_html(dash.coefficients(), digits=3),
        "<h2>Pairwise agreement (EHR-Rel Table 2 layout)</h2>",
        pairwise.to_html(
            escape=True, border=0, classes="tbl", na_rep="–", float_format=lambda x: f"{x:.2f}"
        ),
        _table_html(dash.per_annotator()),
    ]
    rep.figures.append(("Pairwise Krippendorff's alpha", plots.pairwise_heatmap(pairwise)))
    ms = dash.mean_scores()
    if len(ms):
        rep.figures.append(
            ("Distribution of mean scores", plots.mean_score_histogram(ms, dash.scale))
        )
    rep.sections += [
        "<h2>Rater quality</h2>",
        _table_html(dash.quality_table()),
        "<h2>Check pairs, rushed answers and pace</h2>",
        *(f"<p><b>Warning:</b> {_html.escape(w)}</p>" for w in dash.check_warnings),
        _table_html(dash.pace_table()),
        *_quality_over_time(study, rep),
        "<h2>Disagreements</h2>",
        _table_html(dash.disagreements()),
    ]
    return rep.page(f"QA report {study.name}")
