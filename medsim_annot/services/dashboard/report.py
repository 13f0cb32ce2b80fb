"""The whole dashboard as one self-contained HTML file (plotly.js inline, no internet
needed). The page is assembled from named parts: the header (title, provenance, headline
figures), the charts, then the tables section by section. Every word is in the report's
language (``medsim report --lang de``; the page's language on the dashboard), set as
``<html lang>``; the tables' headers too, their numbers written the language's way."""

from __future__ import annotations

import datetime as dt
import html as _html
from dataclasses import dataclass, field

import pandas as pd
from plotly.graph_objects import Figure

import medsim_annot
from medsim_annot import i18n
from medsim_annot.i18n import fmt_date, fmt_decimal, fmt_int, fmt_percent, t
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import plots
from medsim_annot.services.dashboard.labels import cells, header, interval
from medsim_annot.services.dashboard.store import completion, planned_ratings, study_dashboard
from medsim_annot.services.stopping import audit_status
from medsim_annot.services.study_handle import Study

STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
    ".tbl{border-collapse:collapse;font-size:13px}.tbl td,.tbl th{padding:3px 8px;"
    "border-bottom:1px solid #ddd;text-align:right}"
)


def _table_html(
    frame: pd.DataFrame,
    digits: int = 2,
    *,
    index: bool = False,
    names: frozenset[str] = frozenset(),
) -> str:
    """*frame* as an HTML table: headers in the report's language (people's names, in
    *names*, as typed), numbers written its way."""
    if frame is None or frame.empty:
        return "<p><em>" + _html.escape(t("nothing to show")) + "</em></p>"
    shown = cells(frame).rename(columns=lambda c: header(c, names))
    if frame.index.name is not None:
        shown.index = shown.index.rename(header(frame.index.name, names))
    english = i18n.current_language() == i18n.SOURCE
    ints = shown.select_dtypes("integer").columns
    if len(ints) and not english and not shown.columns.has_duplicates:
        shown = shown.astype({c: object for c in ints})
        for c in ints:
            shown[c] = [fmt_int(v) for v in shown[c]]
    return shown.to_html(
        index=index,
        escape=True,
        na_rep="–",
        float_format=(lambda x: f"{x:.{digits}f}")
        if english
        else (lambda x: fmt_decimal(x, digits)),
        border=0,
        classes="tbl",
    )


def _quality_over_time(study: Study, rep: _Report) -> list[str]:
    """The quality-over-time section (alerts with their evidence, windows) and one timeline
    per doctor among the report's charts."""
    q = drift_svc.study_quality_over_time(study)
    s = q.settings
    out = [
        _h(2, t("Quality over time")),
        _p(
            t(
                "Windows of {window} ratings in the order they were made; a drift alert when a "
                "window is more than {margin} below the doctor's first {n} window(s) and its "
                "95% interval lies below theirs.",
                window=fmt_int(s.window),
                margin=fmt_percent(s.margin),
                n=fmt_int(s.baseline_windows),
            )
        ),
        *(_p(n) for n in q.notes),
        *(_p(t("Drift: {reading}", reading=r)) for r in q.readings()),
        _table_html(q.alerts.drop(columns=["evidence"]))
        if len(q.alerts)
        else _p(t("No drift alert.")),
    ]
    for who in sorted(set(q.windows["annotator"])):
        rep.figures.append(
            (
                t("Quality over time: {name}", name=who),
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
        lang = i18n.current_language()
        return (
            f"<!DOCTYPE html><html lang='{lang}' dir='{i18n.direction(lang)}'><head>"
            "<meta charset='utf-8'>"
            f"<title>{_html.escape(title)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(self.header)
            + "\n".join(self.figures_html())
            + "\n".join(self.sections)
            + "</body></html>"
        )


def html_report(
    study: Study,
    *,
    bootstrap: int = 0,
    now: dt.datetime | None = None,
    lang: str | None = None,
) -> str:
    """The study's QA report as one self-contained HTML page (plotly.js inline, no
    internet needed): headline, completion, the published tables, the charts, rater
    quality and the disagreement list; in *lang* (default: the current language, English
    on the command line)."""
    with i18n.language(lang or i18n.current_language()):
        return _html_report(study, bootstrap=bootstrap, now=now)


def _h(level: int, text: str) -> str:
    return f"<h{level}>{_html.escape(text)}</h{level}>"


def _p(text: str) -> str:
    return f"<p>{_html.escape(text)}</p>"


def _html_report(study: Study, *, bootstrap: int, now: dt.datetime | None) -> str:
    dash = study_dashboard(study, bootstrap=bootstrap)
    comp = completion(study)
    moment = now or dt.datetime.now(dt.UTC)
    when = moment.strftime("%Y-%m-%d %H:%M UTC")
    if i18n.current_language() != i18n.SOURCE:
        when = fmt_date(moment.astimezone(dt.UTC).replace(tzinfo=None), time=True) + " UTC"
    rep = _Report()
    rep.header += [
        _h(1, t("QA report: {study}", study=study.name)),
        _p(
            t(
                "Scale {scale} ({level}); ratings version {count} / {last}; medsim-annot "
                "{version}; generated {when}.",
                scale=dash.scale.name,
                level=dash.scale.level,
                count=fmt_int(dash.version[0]),
                last=fmt_int(dash.version[1]),
                version=medsim_annot.__version__,
                when=when,
            )
        ),
        _table_html(pd.DataFrame([dash.headline(planned_ratings(study))])),
    ]
    rep.sections += [_h(2, t("Completion")), _table_html(comp)]
    rep.figures.append((t("Completion per annotator"), plots.completion_figure(comp)))
    if dash.audit is not None:
        audit, confusion = dash.audit_table(), dash.confusion()
        rep.sections += [
            _h(2, t("Automatic labels vs majority (AAAI 2020 Table 3 layout)")),
            _table_html(audit),
            _h(3, t("Confusion matrix")),
            _table_html(confusion.rename(index=lambda r: header(r)), index=True),
        ]
        rep.figures += [
            (t("Audit per group"), plots.audit_figure(audit)),
            (t("Automatic label vs majority"), plots.confusion_figure(confusion)),
        ]
    seq = audit_status(study)
    if seq is not None:
        rep.sections += [
            _h(2, t("Sequential audit")),
            _p(
                t(
                    "Stopping on: a group stops being served when the half-width of its "
                    "accuracy interval is at most {target}, after at least {positives} "
                    "positive and {negatives} negative verdicts. Intervals: {method}.",
                    target=fmt_decimal(seq.target),
                    positives=fmt_int(seq.min_positives),
                    negatives=fmt_int(seq.min_negatives),
                    method=interval(seq.method),
                )
                if seq.enabled
                else t(
                    "Stopping off: a group stops being served when the half-width of its "
                    "accuracy interval is at most {target}, after at least {positives} "
                    "positive and {negatives} negative verdicts. Intervals: {method}.",
                    target=fmt_decimal(seq.target),
                    positives=fmt_int(seq.min_positives),
                    negatives=fmt_int(seq.min_negatives),
                    method=interval(seq.method),
                )
            ),
            _table_html(seq.groups, digits=3),
        ]
        rep.figures.append(
            (t("Sequential audit per group"), plots.sequential_audit_figure(seq.groups, seq.target))
        )
    pairwise = dash.pairwise_alpha()
    people = frozenset(map(str, pairwise.columns))
    rep.sections += [
        _h(2, t("Agreement (EHR-Rel Table 3 layout)")),
        _table_html(dash.summary()),
        _h(3, t("Chance-corrected coefficients (standard error, 95% interval; Gwet 2014)")),
        *(_p(n) for n in dash.agreement_notes()),
        _table_html(dash.coefficients(), digits=3),
        _h(2, t("Pairwise agreement (EHR-Rel Table 2 layout)")),
        _table_html(pairwise, index=True, names=people),
        _table_html(dash.per_annotator()),
    ]
    rep.figures.append((t("Pairwise Krippendorff's alpha"), plots.pairwise_heatmap(pairwise)))
    ms = dash.mean_scores()
    if len(ms):
        rep.figures.append(
            (t("Distribution of mean scores"), plots.mean_score_histogram(ms, dash.scale))
        )
    rep.sections += [
        _h(2, t("Rater quality")),
        *([_p(dash.imported_note())] if dash.imported else []),
        _table_html(dash.quality_table()),
        _h(2, t("Check pairs, rushed answers and pace")),
        *(_p(t("Warning: {text}", text=w)) for w in dash.check_warnings),
        _table_html(dash.pace_table()),
        *_quality_over_time(study, rep),
        _h(2, t("Disagreements")),
        _table_html(dash.disagreements()),
    ]
    return rep.page(t("QA report {study}", study=study.name))
