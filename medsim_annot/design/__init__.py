"""Study design: which pairs are rated, by whom and in which order (pure functions, no DB).

- :func:`stratified_sample` — P positives and N negatives per group (Schulz et al. 2020, §3.3:
  30 + 30 per dataset).
- :func:`balanced_k_of_n` — each item rated by k of n annotators with equal load and equal
  pairwise overlap as far as the numbers allow (EHR-Rel: 3 of 5).
- :func:`plan_study` — the queues for :func:`medsim_annot.services.studies.create_study`:
  calibration set, k-of-n (or all-rate-all) main items, swapped duplicates, seeded shuffle.
"""

from .assignment import Slot, StudyPlan, add_duplicates, balanced_k_of_n, plan_study
from .sampling import SampleResult, stratified_sample

__all__ = [
    "SampleResult",
    "Slot",
    "StudyPlan",
    "add_duplicates",
    "balanced_k_of_n",
    "plan_study",
    "stratified_sample",
]
