"""Published reference values: every expected value in the tests that comes from a paper is
written here once, with the paper, the table (or section) and the page.

Pages: the published page range of the article, and where in it the figure is (table,
section). The papers in ../shared/papers are text extracts without page breaks, so the page
of a table inside an article is not given, and a source not in ../shared/papers whose pages
were not checked has an empty ``pages``.
Values the project computed itself (regression snapshots) are not here but in
``tests/snapshots.py``, named ``SNAPSHOT_*``.

Also collected in ../shared/reference/stats-reference.md (sections named below).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Source:
    """A publication: the citation, its DOI or address, and its page range."""

    citation: str
    link: str
    pages: str


KRIPPENDORFF_2011 = Source(
    "Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School "
    "for Communication Departmental Papers 43, University of Pennsylvania",
    "https://repository.upenn.edu/asc_papers/43",
    "",  # page not checked against the original (not in ../shared/papers)
)
SHROUT_FLEISS_1979 = Source(
    "Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater "
    "reliability. Psychological Bulletin, 86(2)",
    "https://doi.org/10.1037/0033-2909.86.2.420",
    "pp. 420-428",
)
SCHULZ_2020_COLING = Source(
    "Schulz, C., Levy-Kramer, J., Van Assel, C., Kepes, M., & Hammerla, N. (2020). Biomedical "
    "Concept Relatedness - A large EHR-based benchmark. Proceedings of COLING 2020",
    "https://doi.org/10.18653/v1/2020.coling-main.577",
    "pp. 6565-6575",
)
AGRESTI_2007 = Source(
    "Agresti, A. (2007). An Introduction to Categorical Data Analysis, 2nd ed. Wiley",
    "",
    "",  # page not checked against the book (not in ../shared/papers)
)


@dataclass(frozen=True)
class Published:
    """A published value (or table of values): what it is, the source and where in it."""

    value: object
    source: Source
    where: str

    def cite(self) -> str:
        pages = f" ({self.source.pages})" if self.source.pages else ""
        return f"{self.source.citation}, {self.where}{pages}"


# ---- Krippendorff (2011): the worked example, 4 observers x 12 units --------------------
_NAN = np.nan
K2011_DATA = Published(
    np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, _NAN, _NAN, _NAN],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _NAN, 3],
            [_NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _NAN],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _NAN],
        ]
    ),
    KRIPPENDORFF_2011,
    "worked example 'nominal data, any number of observers, missing data' (observers A-D x "
    "units 1-12), reused for every level",
)
K2011_ALPHA = Published(
    {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797},
    KRIPPENDORFF_2011,
    "alpha of the worked example at each level of measurement",
)

# ---- Shrout & Fleiss (1979): 6 targets x 4 judges ---------------------------------------
SF1979_DATA = Published(
    np.array(
        [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
        dtype=float,
    ),
    SHROUT_FLEISS_1979,
    "Table 2 (4 judges rating 6 targets)",
)
SF1979_ICC3 = Published(
    # Table 4 prints two decimals (.71, .91); the third is the exact value of the Table 2
    # data (any correct ICC(3,1)/ICC(3,k) gives it; R psych::ICC agrees).
    {"C1": 0.715, "Ck": 0.909, "C1_printed": 0.71, "Ck_printed": 0.91},
    SHROUT_FLEISS_1979,
    "Table 4, ICC(3,1) and ICC(3,k) = McGraw & Wong's ICC(C,1) and ICC(C,k)",
)

# ---- Schulz et al. (COLING 2020): EHR-RelA ------------------------------------------------
EHR_REL_A_SHAPE = Published(
    {"items": 111, "annotators": 5},
    SCHULZ_2020_COLING,
    "section 4 ('EHR-RelA consists of 111 concept pairs'), 5 doctors per pair (section 3)",
)
EHR_REL_A_PAIRWISE_ALPHA = Published(
    {
        ("A", "B"): 0.77,
        ("A", "C"): 0.69,
        ("A", "D"): 0.70,
        ("A", "E"): 0.52,
        ("B", "C"): 0.65,
        ("B", "D"): 0.73,
        ("B", "E"): 0.40,
        ("C", "D"): 0.68,
        ("C", "E"): 0.57,
        ("D", "E"): 0.50,
    },
    SCHULZ_2020_COLING,
    "Table 2 (section 4.1), pairwise Krippendorff's alpha, EHR-RelA rows",
)
EHR_REL_A_PER_DOCTOR = Published(
    # doctor: (mean ordinal alpha, mean quadratic kappa, mean Spearman rho) over 4 pairings
    {
        "A": (0.67, 0.74, 0.70),
        "B": (0.64, 0.70, 0.69),
        "C": (0.65, 0.72, 0.67),
        "D": (0.65, 0.69, 0.68),
        "E": (0.50, 0.61, 0.60),
    },
    SCHULZ_2020_COLING,
    "Table 2 (section 4.1), average alpha, kappa and rho per annotator, EHR-RelA",
)
EHR_REL_A_TABLE3 = Published(
    {"alpha": 0.64, "mean_rho": 0.67, "icc_c1": 0.72, "icc_ck": 0.93, "kendall_w": 0.73},
    SCHULZ_2020_COLING,
    "Table 3 (section 4.1), EHR-RelA row (Avg rho, ICC(C,1), ICC(C,k), Kendall's W); "
    "alpha 0.64 in the text of section 4.1",
)

# ---- Schulz et al. (COLING 2020): EHR-RelB, the other set ----------------------------------
EHR_REL_B_HUMAN_UPPER_BOUND = Published(
    {"inclusive": 0.88, "exclusive": 0.70},
    SCHULZ_2020_COLING,
    "section 6, human upper bound of EHR-RelB (not published for EHR-RelA)",
)

# ---- Agresti (2007): McNemar's test data ---------------------------------------------------
AGRESTI_PRESIDENT_APPROVAL = Published(
    np.array([[794, 150], [86, 570]]),
    AGRESTI_2007,
    "Table 8.1, approval of the president in two surveys (approve/disapprove x 2)",
)
