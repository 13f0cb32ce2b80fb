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
AGRESTI_1990 = Source(
    "Agresti, A. (1990). Categorical Data Analysis. Wiley",
    "",
    "p. 350",  # the book is not in ../shared/papers: page as cited, not checked here
)
GWET_2014 = Source(
    "Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed. Advanced Analytics, "
    "LLC (ISBN 978-0970806284)",
    "",
    "",  # the book is not in ../shared/papers: table and page not checked here
)
IRRCAC_044 = Source(
    "irrCAC 0.4.4 (Python port of Gwet's R package irrCAC; PyPI), run apart in a throwaway "
    "virtual environment (it pins scipy==1.12.0, so it cannot join our requirements); "
    "``irrCAC.raw.CAC(ratings, weights=..., categories=...)`` with its default rounding to "
    "5 decimals",
    "https://pypi.org/project/irrCAC/0.4.4/",
    "",
)
NEWCOMBE_1998 = Source(
    "Newcombe, R. G. (1998). Two-sided confidence intervals for the single proportion: "
    "comparison of seven methods. Statistics in Medicine 17(8)",
    "https://doi.org/10.1002/(SICI)1097-0258(19980430)17:8<857::AID-SIM777>3.0.CO;2-E",
    "pp. 857-872",
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
    # Printed: Table 4 gives two decimals only (.71, .91), the published values.
    # Derived, NOT printed in the paper: .715 and .909 are ICC(3,1) and ICC(3,k) of the Table 2
    # data to three decimals (R psych::ICC gives the same), kept to check more than rounding.
    {"C1_printed": 0.71, "Ck_printed": 0.91, "C1_derived": 0.715, "Ck_derived": 0.909},
    SHROUT_FLEISS_1979,
    "Table 4, ICC(3,1) and ICC(3,k) = McGraw & Wong's ICC(C,1) and ICC(C,k) (the *_derived "
    "values are computed from Table 2, not printed)",
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

# ---- Agresti (1990): McNemar's test data ---------------------------------------------------
AGRESTI_PRESIDENT_APPROVAL = Published(
    np.array([[794, 150], [86, 570]]),
    AGRESTI_1990,
    "McNemar's test example: approval of the president's performance in two surveys "
    "(approve/disapprove x 2, 1,600 people); not Agresti (2007) Table 8.1",
)

# ---- Newcombe (1998): Wilson score intervals ------------------------------------------------
NEWCOMBE_TABLE_I = Published(
    # (successes, trials, lower, upper) of the score interval without continuity correction
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
    NEWCOMBE_1998,
    "Table I, method 3 (score interval without continuity correction), 95% intervals",
)

# ---- Gwet (2014): chance-corrected coefficients with missing ratings -----------------------
# Each value: (coefficient, standard error, (lower, upper) of the 95% t interval, upper capped
# at 1), rounded to 5 decimals as irrCAC prints them. Keys: ac1, ac2_ordinal, ac2_quadratic
# (Gwet's ordinal and quadratic weights), fleiss_kappa, brennan_prediger, conger_kappa.
GWET_4RATERS_DATA = Published(
    # units x raters (Rater1..Rater4), categories 1-5; NaN = not rated
    np.array(
        [
            [1, 1, _NAN, 1],
            [2, 2, 3, 2],
            [3, 3, 3, 3],
            [3, 3, 3, 3],
            [2, 2, 2, 2],
            [1, 2, 3, 4],
            [4, 4, 4, 4],
            [1, 1, 2, 1],
            [2, 2, 2, 2],
            [_NAN, 5, 5, 5],
            [_NAN, _NAN, 1, 1],
            [_NAN, _NAN, 3, _NAN],
        ]
    ),
    GWET_2014,
    "worked example: 4 raters x 12 units on categories 1-5 with missing ratings (shipped by irrCAC as "
    "``datasets.raw_4raters``, citing the Handbook; Krippendorff's 2011 example transposed)",
)
GWET_4RATERS_IRRCAC = Published(
    {
        # AC1 0.77544 (se 0.14295, 0.46081 to 1) and Fleiss 0.76117 (se 0.15302, 0.42438 to
        # 1) are also printed in irrCAC's own documentation (module irrCAC.raw)
        "ac1": (0.77544, 0.14295, (0.46081, 1.0)),
        "fleiss_kappa": (0.76117, 0.15302, (0.42438, 1.0)),
        "brennan_prediger": (0.77273, 0.14472, (0.45421, 1.0)),
        "conger_kappa": (0.76282, 0.14917, (0.4345, 1.0)),
        "ac2_ordinal": (0.89894, 0.1069, (0.66365, 1.0)),
        "ac2_quadratic": (0.914, 0.10396, (0.68518, 1.0)),
    },
    IRRCAC_044,
    "worked example GWET_4RATERS_DATA run through irrCAC.raw.CAC, categories [1, 2, 3, 4, 5]",
)
GWET_5OBSERVERS_DATA = Published(
    # units x observers (Observer1..Observer5), scores 0-3; NaN = not scored
    np.array(
        [
            [1, 1, 2, _NAN, 2],
            [1, 1, 0, 1, _NAN],
            [2, 3, 3, 3, _NAN],
            [_NAN, 0, 0, _NAN, 0],
            [0, 0, 0, _NAN, 0],
            [0, 0, 0, _NAN, 0],
            [1, 0, 2, _NAN, 1],
            [1, _NAN, 2, 0, _NAN],
            [2, 2, 2, _NAN, 2],
            [2, 1, 1, 1, _NAN],
            [_NAN, 1, 0, 0, _NAN],
            [0, 0, 0, 0, _NAN],
            [1, 2, 2, 2, _NAN],
            [3, 3, 2, 2, 3],
            [1, 1, 1, _NAN, 1],
        ]
    ),
    GWET_2014,
    "worked example: 5 observers x 15 units on a 0-3 scale, only observer 3 complete (shipped by irrCAC as "
    "``datasets.raw_5observers``, citing the Handbook)",
)
GWET_5OBSERVERS_IRRCAC = Published(
    {
        "ac1": (0.49662, 0.12197, (0.23502, 0.75823)),
        "fleiss_kappa": (0.45762, 0.12045, (0.19928, 0.71596)),
        "brennan_prediger": (0.48741, 0.12089, (0.22812, 0.74669)),
        "conger_kappa": (0.46927, 0.11666, (0.21906, 0.71949)),
        "ac2_ordinal": (0.78534, 0.06819, (0.63909, 0.93159)),
        "ac2_quadratic": (0.83043, 0.05825, (0.70551, 0.95536)),
    },
    IRRCAC_044,
    "worked example GWET_5OBSERVERS_DATA run through irrCAC.raw.CAC, categories [0, 1, 2, 3]",
)
EHR_REL_A_IRRCAC = Published(
    {
        "ac1": (0.68785, 0.03785, (0.61283, 0.76286)),
        "fleiss_kappa": (0.40387, 0.03953, (0.32554, 0.48221)),
        "brennan_prediger": (0.64565, 0.03818, (0.56999, 0.7213)),
        "conger_kappa": (0.40779, 0.03863, (0.33124, 0.48434)),
        "ac2_ordinal": (0.90834, 0.01606, (0.87651, 0.94017)),
        "ac2_quadratic": (0.93089, 0.01286, (0.9054, 0.95639)),
    },
    IRRCAC_044,
    "worked example: EHR-RelA (../shared/data/ehr-rel/EHR-RelA.tsv) run through "
    "irrCAC.raw.CAC, 111 pairs x doctors A-E, categories "
    "[0, 1, 2, 3]",
)

DEMO_IRRCAC = Published(
    {
        "demo-binary": {
            "ac1": (0.61417, 0.06514, (0.48491, 0.74344)),
            "fleiss_kappa": (0.61249, 0.06518, (0.48316, 0.74182)),
            "brennan_prediger": (0.61333, 0.06509, (0.48419, 0.74248)),
            "conger_kappa": (0.61322, 0.0648, (0.48465, 0.74179)),
        },
        "demo-relatedness": {
            "ac1": (0.44185, 0.08967, (0.25846, 0.62525)),
            "fleiss_kappa": (0.35407, 0.10345, (0.14249, 0.56565)),
            "brennan_prediger": (0.42222, 0.09078, (0.23655, 0.6079)),
            "conger_kappa": (0.36275, 0.09915, (0.15996, 0.56553)),
            "ac2_ordinal": (0.7451, 0.05944, (0.62352, 0.86667)),
            "ac2_quadratic": (0.79074, 0.05465, (0.67898, 0.9025)),
        },
    },
    IRRCAC_044,
    "worked example: the two demo studies as ``seed_demo`` stores them (current ratings, "
    "pairs x doctors) run through irrCAC.raw.CAC with the scale's codes as categories "
    "(binary [0, 1], relatedness [0, 1, 2, 3])",
)

# ---- Figures of the seed papers our data cannot reach --------------------------------------
# Schulz & Juric (AAAI 2020), Table 3: the NaN share, alpha, accuracy, recall and precision
# per dataset come from the doctors' ratings of the 1,200 sampled pairs, which were not
# published (../shared holds the paper's text and EHR-Rel, not those ratings), so no test can
# reproduce them; the same definitions are tested on our own data instead (majority with
# "don't know" as no decision, nominal alpha, audit of automatic labels). The printed
# proportions are not even all of the form k/60 for the 60 pairs per dataset of section 3.3
# (SAME-AS e-R and h-R print 6%: 3/60 is 5%, 4/60 is 7%), so they cannot serve as counts.
# Chiu et al. (2018), Bio-SimLex/Bio-SimVerb: IAA-1 0.72 and IAA-2 0.78 (Bio-SimLex), 0.65
# and 0.69 (Bio-SimVerb), "Inter-annotator agreement" section. They are computed from the
# individual annotators' ratings, which were not released (only the averaged scores), so no
# test can reproduce them; the IAA-1/IAA-2 definitions are tested on our data instead.
