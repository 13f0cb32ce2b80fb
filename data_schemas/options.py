"""Allowed values of a setting, stated once: string options and number ranges.

In the spirit of scikit-learn's ``StrOptions`` and ``Interval``: a ``Literal`` type names the
values for the type checker, and one :class:`StrOptions` registry built from it gives the
check, the CLI choices and the help text, so adding a value is one edit and no check or help
line can disagree with another. A :class:`NumberRange` does the same for a number (its
bounds, which sides are closed, whole or not). Every setting is declared once below; each
check raises the one :class:`~data_schemas.errors.OptionError` type, with a message that
names the setting as ``label (name)`` — the command line shows the flag instead of the
name, the pages show the message as it is.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Literal, get_args

from ._text import N_, tr
from .errors import OptionError, UnknownOptionError


def either(values: tuple[str, ...], *, quote: bool = True) -> str:
    """``'a', 'b' or 'c'``: *values* as a sentence lists them.

    >>> either(("strict", "decisive"))
    "'strict' or 'decisive'"
    >>> either(("CSV", "TSV", "Parquet"), quote=False)
    'CSV, TSV or Parquet'
    """
    shown = [f"'{v}'" if quote else v for v in values]
    if len(shown) == 1:
        return shown[0]
    return tr("{items} or {last}", items=", ".join(shown[:-1]), last=shown[-1])


@dataclass(frozen=True)
class StrOptions:
    """The allowed values of the option *name*, each with its help line (in order)."""

    name: str
    help: Mapping[str, str]

    @classmethod
    def of(cls, literal: Any, name: str, help: Mapping[str, str]) -> StrOptions:
        """The registry of a ``Literal`` type; *help* must explain exactly its values."""
        values = get_args(literal)
        if tuple(help) != values:
            raise ValueError(f"help of {name} covers {tuple(help)}, the type allows {values}")
        return cls(name, dict(help))

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(self.help)

    def __contains__(self, value: object) -> bool:
        return value in self.help

    def __iter__(self) -> Iterator[str]:
        return iter(self.help)

    def check(self, value: object) -> str:
        """*value* when allowed, else :class:`~data_schemas.errors.UnknownOptionError`.

        >>> MAJORITY_RULES.check("decisive")
        'decisive'
        >>> MAJORITY_RULES.check("loose")
        Traceback (most recent call last):
        ...
        data_schemas.errors.UnknownOptionError: majority must be 'strict' or 'decisive', not 'loose'
        """
        value = value.value if isinstance(value, Enum) else value
        if value not in self.help:
            raise UnknownOptionError(
                tr(
                    "{setting} must be {allowed}, not '{value}'",
                    setting=self.name,
                    allowed=either(self.values),
                    value=value,
                ),
                self.name,
            )
        return str(value)

    def describe(self) -> str:
        """The help of every value on one line.

        >>> MAJORITY_RULES.describe()
        'strict: > half of ratings cast; decisive: > half of decisive ratings.'
        """
        return "; ".join(f"{v}: {h}" for v, h in self.help.items()) + "."


#: How a pair's majority is counted: among every rating cast (a no-decision rating counts
#: and never wins) or among the decisive ratings only.
MajorityRule = Literal["strict", "decisive"]
MAJORITY_RULES = StrOptions.of(
    MajorityRule,
    "majority",
    {"strict": "> half of ratings cast", "decisive": "> half of decisive ratings"},
)

#: Which interval a prediction-powered audit reports as its ``*_ci`` (both are always
#: computed): the prediction-powered one or the doctors' labels alone.
AuditMethod = Literal["ppi", "classical"]
AUDIT_METHODS = StrOptions.of(
    AuditMethod,
    "method",
    {
        "ppi": "the PPI++ interval (doctors' labels plus the predictions on every pair)",
        "classical": "the interval of the doctors' labels alone (Wilson for proportions)",
    },
)

#: How the next pair of a group is chosen: uniformly at random, or drawn with a probability
#: growing with the model's uncertainty (active serving; needs stored predictions).
Sampling = Literal["uniform", "active"]
SAMPLINGS = StrOptions.of(
    Sampling,
    "sampling",
    {
        "uniform": "every pair of a group equally likely to be served",
        "active": "pairs the model is least sure about drawn more often, estimate reweighted",
    },
)


#: What an adjudicator is shown of the raters beside their answers and comments: a pseudonym
#: stable within the study (Rater A, B, C, ... by the order annotators were added) or the
#: doctor's name. Pseudonymous unless a study admin chooses otherwise.
RaterNames = Literal["pseudonymous", "named"]
RATER_NAMES = StrOptions.of(
    RaterNames,
    "rater names",
    {
        "pseudonymous": "adjudicators see Rater A, B, C (stable per study)",
        "named": "adjudicators see each doctor's name",
    },
)


def _num(x: float) -> str:
    """*x* as a person writes it: ``0.5``, ``1``, ``1e-06``."""
    return f"{x:g}"


Closed = Literal["both", "left", "right", "neither"]


@dataclass(frozen=True)
class NumberRange:
    """The allowed values of the number setting *name*: between *low* and *high* (either may
    be ``None``: unbounded), *closed* on the sides named (as scikit-learn's ``Interval``),
    whole numbers only when *integer*. *label* says what the setting is, in words.

    >>> TARGET_CI.check(0.05)
    0.05
    >>> TARGET_CI.check(0.7)
    Traceback (most recent call last):
    ...
    data_schemas.errors.OptionError: target half-width (target_ci) must be strictly between \
0 and 0.5, not 0.7
    >>> TARGET_CI.describe()
    'strictly between 0 and 0.5'
    """

    name: str
    label: str
    low: float | None = None
    high: float | None = None
    closed: Closed = "both"
    integer: bool = False

    def _low_in(self) -> bool:
        return self.closed in ("both", "left")

    def _high_in(self) -> bool:
        return self.closed in ("both", "right")

    def describe(self) -> str:
        """The allowed values in words (``strictly between 0 and 0.5``)."""
        if self.low is None and self.high is None:
            return tr("a whole number") if self.integer else tr("a number")
        lo = "" if self.low is None else _num(self.low)
        hi = "" if self.high is None else _num(self.high)
        if self.high is None:
            if self.integer and self._low_in():
                return tr("a whole number of at least {low}", low=lo)
            bound = tr("{low} or more", low=lo) if self._low_in() else tr("more than {low}", low=lo)
        elif self.low is None:
            bound = (
                tr("{high} or less", high=hi)
                if self._high_in()
                else tr("less than {high}", high=hi)
            )
        elif lo == hi and self.closed == "both":
            bound = lo
        else:
            bound = {
                "both": tr("between {low} and {high}", low=lo, high=hi),
                "neither": tr("strictly between {low} and {high}", low=lo, high=hi),
                "left": tr("at least {low} and below {high}", low=lo, high=hi),
                "right": tr("above {low} and at most {high}", low=lo, high=hi),
            }[self.closed]
        return tr("a whole number {bound}", bound=bound) if self.integer else bound

    def within(self, *, low: float | None = None, high: float | None = None) -> NumberRange:
        """This setting with a bound known only at the call (e.g. the number of annotators)."""
        return replace(
            self,
            low=self.low if low is None else low,
            high=self.high if high is None else high,
        )

    def __contains__(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        x = float(value)
        if not math.isfinite(x) or (self.integer and not x.is_integer()):
            return False
        if self.low is not None and not (x >= self.low if self._low_in() else x > self.low):
            return False
        return self.high is None or (x <= self.high if self._high_in() else x < self.high)

    def check(self, value: Any) -> Any:
        """*value* when allowed, else :class:`~data_schemas.errors.OptionError`."""
        if value not in self:
            real = isinstance(value, numbers.Real) and not isinstance(value, bool)
            shown = _num(float(value)) if real else repr(value)
            raise OptionError(
                tr(
                    "{label} ({setting}) must be {allowed}, not {value}",
                    label=tr(self.label),
                    setting=self.name,
                    allowed=self.describe(),
                    value=shown,
                ),
                self.name,
            )
        return value


#: Every number setting, by name (filled by :func:`_setting`).
NUMBER_SETTINGS: dict[str, NumberRange] = {}


def _setting(
    name: str,
    label: str,
    low: float | None = None,
    high: float | None = None,
    closed: Closed = "both",
    *,
    integer: bool = False,
) -> NumberRange:
    if name in NUMBER_SETTINGS:
        raise ValueError(f"the setting {name} is declared twice")
    NUMBER_SETTINGS[name] = NumberRange(name, label, low, high, closed, integer)
    return NUMBER_SETTINGS[name]


# Study design and the sequential audit.
SAMPLE_PER_GROUP = _setting(
    "sample_per_group", N_("pairs sampled per group and label"), 0, integer=True
)
TARGET_CI = _setting("target_ci", N_("target half-width"), 0, 0.5, "neither")
MIN_POSITIVES = _setting("min_positives", N_("positives a group needs first"), 0, integer=True)
MIN_NEGATIVES = _setting("min_negatives", N_("negatives a group needs first"), 0, integer=True)
PER_ITEM = _setting("per_item", N_("annotators per pair"), 1, integer=True)
CALIBRATION = _setting("calibration", N_("calibration pairs"), 0, integer=True)
DUPLICATES = _setting("duplicates", N_("share of repeated pairs"), 0, 1)
TIEBREAK_TOLERANCE = _setting("tiebreak_tolerance", N_("tiebreak tolerance"), 0)
ERROR_RATE = _setting("error", N_("a doctor's error rate"), 0, 1)
DONT_KNOW_RATE = _setting("dont_know", N_("a doctor's don't-know rate"), 0, 1)
DISAGREEMENT = _setting("disagreement", N_("share of pairs that get a tiebreak"), 0, 1)
CHECK_RATE = _setting("check_rate", N_("check rate"), 0, 1, "neither")
CHECK_MIN_ACCURACY = _setting("check_min_accuracy", N_("minimum accuracy on check pairs"), 0, 1)
COST_PER_RATING = _setting("cost_per_rating", N_("cost of one doctor rating"), 0, closed="neither")
# The practice gate (docs/practice.md): exact agreement with the reference answers over the
# last PRACTICE_MIN_PAIRS practice answers must reach PRACTICE_THRESHOLD.
PRACTICE_MIN_PAIRS = _setting(
    "practice_min_pairs", N_("practice pairs before the gate"), 1, integer=True
)
PRACTICE_THRESHOLD = _setting("practice_threshold", N_("practice accuracy threshold"), 0, 1)
# Statistics.
CONFIDENCE = _setting("confidence", N_("confidence level"), 0, 1, "neither")
EPSILON = _setting("epsilon", N_("alt-test margin"), 0, 1, "left")
BOOTSTRAP = _setting("bootstrap", N_("bootstrap resamples"), 0, integer=True)
RUSHED_THRESHOLD = _setting("rushed_ms", N_("rushed threshold in milliseconds"), 0, integer=True)
PACE_PAUSE = _setting("pause_ms", N_("pause in ms"), 0, closed="right")
CHECK_TOLERANCE = _setting("check_tolerance", N_("check answer tolerance"), 0)
QUALITY_WINDOW = _setting("window", N_("ratings per quality window"), 1, integer=True)
DRIFT_MARGIN = _setting("drift_margin", N_("drift margin"), 0, 1, "neither")
BASELINE_WINDOWS = _setting(
    "baseline_windows", N_("windows in a doctor's baseline"), 1, integer=True
)
# Exports and builders.
MIN_RATINGS = _setting("min_ratings", N_("minimum ratings per pair"), 1, integer=True)
TEST_SIZE = _setting("test_size", N_("share of the test split"), 0, 1, "neither")
SEED = _setting("seed", N_("random seed"), integer=True)
TOP = _setting("top", N_("number of pairs"), 1, integer=True)
MAX_PER_CONCEPT = _setting("max_per_concept", N_("pairs per concept"), 1, integer=True)
THRESHOLD = _setting("threshold", N_("largest edit distance of an easy pair"), 0)
