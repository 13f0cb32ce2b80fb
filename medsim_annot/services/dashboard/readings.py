"""Plain-language readings of the rater-quality figures: one or a few sentences per
annotator that a QA lead can act on (no statistics here, only wording of figures computed
by :mod:`medsim_annot.stats.quality`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from data_schemas import columns as C
from medsim_annot.i18n import fmt_decimal, fmt_int, fmt_percent, t
from medsim_annot.stats import RaterQuality

#: A "don't know" share above this (one answer in ten) is worth mentioning.
DONT_KNOW_CONCERN = 0.10
#: Identical answers on repeated pairs below this share read as inconsistent.
CONSISTENCY_CONCERN = 0.80


def _fmt(x, digits=2) -> str:
    return (
        t("n/a") if x is None or (isinstance(x, float) and np.isnan(x)) else fmt_decimal(x, digits)
    )


def _share(x) -> str:
    return t("n/a") if x is None or (isinstance(x, float) and np.isnan(x)) else fmt_percent(x)


def reading(r: dict, per: pd.DataFrame, q: RaterQuality) -> str:
    """One plain-language sentence (or a few) about annotator ``r["annotator"]``, in the
    current language (the name as typed)."""
    name = r[C.ANNOTATOR]
    notes = []
    share = r.get("dont_know_share", np.nan)
    others = per.loc[per[C.ANNOTATOR] != name, "dont_know_share"]
    if share is not None and not np.isnan(share) and share > DONT_KNOW_CONCERN:
        notes.append(
            t(
                '{name} answered "don\'t know" (or no decision) for {share} of their pairs '
                "(others: {others} on average).",
                name=name,
                share=fmt_percent(share),
                others=fmt_percent(others.mean()),
            )
            if len(others)
            else t(
                '{name} answered "don\'t know" for {share} of their pairs.',
                name=name,
                share=fmt_percent(share),
            )
        )
    if r.get("outlier"):
        mu = per.loc[per[C.ANNOTATOR] != name, "iaa_1"].mean()
        notes.append(
            t(
                "{name} agrees clearly less with the others than they do with each other "
                "(IAA-1 {own} vs {others}): worth a word about the guideline.",
                name=name,
                own=_fmt(r.get("iaa_1")),
                others=_fmt(mu),
            )
        )
    run = int(r.get("longest_run") or 0)
    if run:
        rr = q.runs[q.runs[C.ANNOTATOR] == name].sort_values("length", ascending=False).iloc[0]
        notes.append(
            t(
                "{name} gave the same rating ('{rating}') to {n} pairs in a row (from pair "
                "{first}): check for straight-lining.",
                name=name,
                rating=rr[C.RATING],
                n=fmt_int(run),
                first=rr["first_pair_id"],
            )
        )
    nd = int(r.get("n_duplicates") or 0)
    consistent = False
    if nd:
        agree = r.get("exact_agreement")
        if agree is not None and not np.isnan(agree) and agree < CONSISTENCY_CONCERN:
            notes.append(
                t(
                    "{name} rated {n} pairs twice and gave the same answer only {share} of "
                    "the time.",
                    name=name,
                    n=fmt_int(nd),
                    share=fmt_percent(agree),
                )
            )
        else:
            consistent = True
            notes.append(
                t(
                    "{name} rated {n} pairs twice and was consistent ({share} identical).",
                    name=name,
                    n=fmt_int(nd),
                    share=_fmt(agree, 0) if agree is None else _share(agree),
                )
            )
    if not notes or (consistent and len(notes) == 1):
        notes.insert(0, t("{name}: no concerns.", name=name))
    return " ".join(notes)
