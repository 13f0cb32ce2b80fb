"""Regression snapshots: values the project's own code computed from published data, kept so
a change in them is noticed. They are NOT published figures (those are in
``tests/published.py``, with their source); a snapshot may change when a computation is
corrected, and the commit that changes it says why.
"""

from __future__ import annotations

# EHR-RelA (../shared/data/ehr-rel/EHR-RelA.tsv), computed by medsim_annot.stats. The paper
# publishes the human upper bound only for EHR-RelB (0.88 / 0.70, see
# tests.published.EHR_REL_B_HUMAN_UPPER_BOUND) and no IAA-1 at all.
SNAPSHOT_EHR_REL_A_HUMAN_UPPER_BOUND = {"inclusive": 0.91, "exclusive": 0.82}
SNAPSHOT_EHR_REL_A_MEAN_IAA_1 = 0.6686
# Kendall's W of EHR-RelA *without* the tie correction (the paper's 0.73 needs the correction;
# uncorrected it is about 0.44, the figure this snapshot pins).
SNAPSHOT_EHR_REL_A_KENDALL_W_UNCORRECTED = 0.44
