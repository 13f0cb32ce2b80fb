"""Agreement, audit and rater-quality statistics (pure numpy/pandas; no database).

Every function takes a **ratings frame** (``pair_id``, ``annotator``, ``value``: float code,
NaN for a no-decision rating; see :func:`data_schemas.ratings.to_ratings_frame`) or its
:class:`CodedRatings` (the same ratings as integer codes, built once per read by
:func:`coded_ratings` and shared by the statistics of one report) and a scale
or a level of measurement, and returns plain values, dataclasses or frames. Degenerate input
(one annotator, a constant rater, no overlap, no pairable item) gives NaN with a reason.
"""

from ._frame import CodedRatings, Estimate, coded_ratings, ratings_from_matrix, slot_matrix
from .alpha import alpha_by_group, grouped_alpha, krippendorff_alpha
from .audit import AuditResult, audit_labels, confusion_scores
from .bootstrap import ConfidenceInterval, bootstrap_ci
from .checks import check_accuracy, pace, rushed, rushed_rate
from .icc import ICCResult, intraclass_corr
from .kendall import kendall_w
from .majority import majority_vote
from .pairwise import cohen_kappa, pairwise_agreement, per_annotator_means, spearman_rho
from .quality import (
    RaterQuality,
    dont_know_share,
    intra_rater_consistency,
    outlier_annotators,
    rater_quality,
    straight_lining,
)
from .report import COUNT_FIGURES, SUMMARY_FIGURES, AgreementReport, Figure, agreement_report
from .simlex import SimLexAgreement, simlex_agreement

__all__ = [
    "COUNT_FIGURES",
    "SUMMARY_FIGURES",
    "AgreementReport",
    "AuditResult",
    "CodedRatings",
    "ConfidenceInterval",
    "Estimate",
    "Figure",
    "ICCResult",
    "RaterQuality",
    "SimLexAgreement",
    "agreement_report",
    "alpha_by_group",
    "audit_labels",
    "bootstrap_ci",
    "check_accuracy",
    "coded_ratings",
    "cohen_kappa",
    "confusion_scores",
    "dont_know_share",
    "grouped_alpha",
    "intra_rater_consistency",
    "intraclass_corr",
    "kendall_w",
    "krippendorff_alpha",
    "majority_vote",
    "outlier_annotators",
    "pace",
    "pairwise_agreement",
    "per_annotator_means",
    "rater_quality",
    "ratings_from_matrix",
    "rushed",
    "rushed_rate",
    "simlex_agreement",
    "slot_matrix",
    "spearman_rho",
    "straight_lining",
]
