"""Allowed values of a string option, stated once with a line of help each.

In the spirit of scikit-learn's ``StrOptions``: a ``Literal`` type names the values for the
type checker, and one :class:`StrOptions` registry built from it gives the check (one
exception type, one message), the CLI choices and the help text, so adding a value is one
edit and no check or help line can disagree with another.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, get_args

from .errors import UnknownOptionError


def either(values: tuple[str, ...], *, quote: bool = True) -> str:
    """``'a', 'b' or 'c'``: *values* as a sentence lists them.

    >>> either(("strict", "decisive"))
    "'strict' or 'decisive'"
    >>> either(("CSV", "TSV", "Parquet"), quote=False)
    'CSV, TSV or Parquet'
    """
    shown = [f"'{v}'" if quote else v for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


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
            raise UnknownOptionError(f"{self.name} must be {either(self.values)}, not '{value}'")
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
