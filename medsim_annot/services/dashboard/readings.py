"""Plain-language readings of the rater-quality figures: one or a few sentences per
annotator that a QA lead can act on (no statistics here, only wording of figures computed
by :mod:`medsim_annot.stats.quality`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from data_schemas import columns as C
from medsim_annot.stats import RaterQuality

#: A "don't know" share above this (one answer in ten) is worth mentioning.
DONT_KNOW_CONCERN = 0.10
#: Identical answers on repeated pairs below this share read as inconsistent.
CONSISTENCY_CONCERN = 0.80


def _fmt(x, digits=2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def reading(r: dict, per: pd.DataFrame, q: RaterQuality) -> str:
    """One plain-language sentence (or a few) about annotator ``r["annotator"]``."""
    name = r[C.ANNOTATOR]
    notes = []
    share = r.get("dont_know_share", np.nan)
    others = per.loc[per[C.ANNOTATOR] != name, "dont_know_share"]
    if share is not None and not np.isnan(share) and share > DONT_KNOW_CONCERN:
        notes.append(
            f'{name} answered "don\'t know" (or no decision) for {share:.0%} of their '
            f"pairs (others: {others.mean():.0%} on average)."
            if len(others)
            else f'{name} answered "don\'t know" for {share:.0%} of their pairs.'
        )
    if r.get("outlier"):
        mu = per.loc[per[C.ANNOTATOR] != name, "iaa_1"].mean()
        notes.append(
            f"{name} agrees clearly less with the others than they do with each other "
            f"(IAA-1 {_fmt(r.get('iaa_1'))} vs {_fmt(mu)}): worth a word about the "
            "guideline."
        )
    run = int(r.get("longest_run") or 0)
    if run:
        rr = q.runs[q.runs[C.ANNOTATOR] == name].sort_values("length", ascending=False).iloc[0]
        notes.append(
            f"{name} gave the same rating ('{rr[C.RATING]}') to {run} pairs in a row "
            f"(from pair {rr['first_pair_id']}): check for straight-lining."
        )
    nd = int(r.get("n_duplicates") or 0)
    if nd:
        agree = r.get("exact_agreement")
        if agree is not None and not np.isnan(agree) and agree < CONSISTENCY_CONCERN:
            notes.append(
                f"{name} rated {nd} pairs twice and gave the same answer only "
                f"{agree:.0%} of the time."
            )
        else:
            notes.append(
                f"{name} rated {nd} pairs twice and was consistent "
                f"({_fmt(agree, 0) if agree is None else f'{agree:.0%}'} identical)."
            )
    if not notes or (nd and len(notes) == 1 and "consistent" in notes[0]):
        notes.insert(0, f"{name}: no concerns.")
    return " ".join(notes)
