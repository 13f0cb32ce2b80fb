"""The interval of a proportion: Wilson's score interval, used by the rater checks
(accuracy on check pairs) and by the stopping rule of the sequential audit
(:mod:`medsim_annot.design.adaptive`)."""

from __future__ import annotations

import functools
import math

from scipy.stats import norm


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (the same figures as statsmodels'
    ``proportion_confint(method="wilson")``, which the tests compare; written out here
    because the stopping rule evaluates it after every rating).

    Notes
    -----
    .. math:: \\frac{\\hat p + \\frac{z^2}{2n} \\pm z\\sqrt{\\frac{\\hat p(1-\\hat p)}{n}
              + \\frac{z^2}{4n^2}}}{1 + \\frac{z^2}{n}}

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. *JASA* 22(158), 209–212. https://doi.org/10.1080/01621459.1927.10502953

    Examples
    --------
    Newcombe (1998), Table I, 81/263: 0.2553 to 0.3662 (R: ``prop.test(81, 263,
    correct=FALSE)``).

    >>> [round(x, 4) for x in wilson_interval(81, 263)]
    [0.2553, 0.3662]
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n <= 0:
        return (0.0, 1.0)
    n = int(n)
    p = int(successes) / n
    z = _z(confidence)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = wilson_half_width(p, n, confidence=confidence)
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_half_width(p: float, n: int, *, confidence: float = 0.95) -> float:
    """Half the width of the Wilson interval at observed proportion *p* with *n* trials.

    >>> round(wilson_half_width(0.5, 384), 4)
    0.0498
    """
    if n <= 0:
        return 0.5
    z = _z(confidence)
    return z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))


@functools.lru_cache(maxsize=16)
def _z(confidence: float) -> float:
    return float(norm.ppf(0.5 + confidence / 2))
