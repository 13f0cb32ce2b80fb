"""The **scale** contract: ordered options, the "no decision" options, the level of
measurement and the guideline text. Binary and 0–3 relatedness are two scales, not two
code paths. Custom scales are read from YAML or JSON files of the same shape.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from ._text import tr
from .errors import InputError, Problem
from .options import StrOptions

#: The level of measurement of a scale (Krippendorff 2011): what the distance between two
#: values means in alpha and which coefficients apply.
Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS = StrOptions.of(
    Level,
    "level",
    {
        "nominal": "categories without order",
        "ordinal": "ordered categories, distances unknown",
        "interval": "numbers whose differences mean something",
        "ratio": "numbers with a true zero",
    },
)


class ScaleOption(BaseModel):
    value: str | float = Field(
        description="stored value: a string for nominal scales, a number otherwise"
    )
    label: str
    key: str = Field(min_length=1, max_length=1, description="one-key shortcut")
    description: str = ""
    code: float | None = Field(
        default=None,
        description="numeric code for statistics; defaults to the value for numeric scales",
    )


class Scale(BaseModel):
    name: str = Field(min_length=1)
    options: list[ScaleOption] = Field(min_length=2)
    no_decision: list[str | float] = Field(default_factory=list)
    level: Level = "nominal"
    guideline: str = ""
    question: str = Field(
        default="",
        description="what the doctor is asked, one line shown above every pair "
        "(empty: the guideline's first heading)",
    )
    unclear_flag: bool = Field(
        default=False, description="offer the 'unclear meaning' flag (key u)"
    )
    positive: str | float | None = Field(
        default=None, description="value meaning 'similar' (matches auto_label 1)"
    )
    negative: str | float | None = Field(
        default=None, description="value meaning 'not similar' (matches auto_label 0)"
    )

    @model_validator(mode="after")
    def _check(self) -> Scale:
        values = [o.value for o in self.options]
        if len(set(map(str, values))) != len(values):
            raise ValueError(tr("option values must be unique"))
        keys = [o.key for o in self.options]
        if len(set(keys)) != len(keys):
            raise ValueError(tr("option keys must be unique"))
        if self.unclear_flag and "u" in keys:
            raise ValueError(tr("key 'u' is reserved for the unclear flag"))
        for v in self.no_decision:
            if str(v) not in set(map(str, values)):
                raise ValueError(tr("no_decision value {value} is not an option", value=repr(v)))
        for o in self.options:
            if o.code is None and isinstance(o.value, (int, float)):
                o.code = float(o.value)
        if self.level != "nominal":
            for o in self.options:
                if str(o.value) in set(map(str, self.no_decision)):
                    continue
                if o.code is None:
                    raise ValueError(
                        tr(
                            "option {value} needs a numeric value or code for a {level} scale",
                            value=repr(o.value),
                            level=self.level,
                        )
                    )
        return self

    # ---- helpers -------------------------------------------------------------------------
    @property
    def numeric(self) -> bool:
        return all(isinstance(o.value, (int, float)) for o in self.options)

    @property
    def asks(self) -> str:
        r"""The one line above every pair: :attr:`question`, else the guideline's first
        heading (a scale stored before questions existed), else nothing.

        >>> BINARY.asks
        'Could these two terms be used interchangeably in consultation notes?'
        >>> Scale(name="s", options=[{"value": "a", "label": "A", "key": "a"},
        ...     {"value": "b", "label": "B", "key": "b"}], guideline="### Same?\n\ntext").asks
        'Same?'
        """
        if self.question.strip():
            return self.question.strip()
        for line in self.guideline.splitlines():
            if line.lstrip().startswith("#"):
                return line.lstrip("# \t").strip()
        return ""

    @property
    def has_polarity(self) -> bool:
        """Whether the scale has a positive and a negative value: only then does a verdict
        map to an automatic 0/1 label (verified pairs, the audit, the binary task).

        >>> BINARY.has_polarity, RELATEDNESS_0_3.has_polarity
        (True, False)
        """
        return self.positive is not None and self.negative is not None

    def decisive_labels(self) -> dict[float, str | float]:
        """Code → option value of the decisive options (the first option of each code): the
        map from a verdict's code (a majority, a model's label) back to the scale's value.

        >>> BINARY.decisive_labels()
        {1.0: 'same', 0.0: 'not_same'}
        """
        out: dict[float, str | float] = {}
        for o in self.options:
            if o.code is not None and not self.is_no_decision(o.value):
                out.setdefault(float(o.code), o.value)
        return out

    def option(self, value) -> ScaleOption:
        key = self.canonical(value)
        for o in self.options:
            if self._same(o.value, key):
                return o
        raise KeyError(value)

    @staticmethod
    def _same(a, b) -> bool:
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return float(a) == float(b)
        return str(a) == str(b)

    def canonical(self, value):
        """The option value that *value* (a string from a file, a number, ...) stands for;
        raises ``ValueError`` naming the allowed values when it is not on the scale."""
        if isinstance(value, str):
            text = value.strip()
            for o in self.options:
                if isinstance(o.value, str) and o.value == text:
                    return o.value
            try:
                num = float(text)
            except ValueError:
                num = None
        elif isinstance(value, (int, float)):
            num = float(value)
        else:
            num = None
        if num is not None:
            for o in self.options:
                if isinstance(o.value, (int, float)) and float(o.value) == num:
                    return o.value
        allowed = ", ".join(str(self.display(o.value)) for o in self.options)
        raise ValueError(
            tr(
                "'{value}' is not a value of the {scale} scale (allowed: {allowed})",
                value=value,
                scale=self.name,
                allowed=allowed,
            )
        )

    def is_no_decision(self, value) -> bool:
        return any(self._same(v, value) for v in self.no_decision)

    def code(self, value) -> float | None:
        """Numeric code for statistics, ``None`` for a no-decision value."""
        if self.is_no_decision(value):
            return None
        return self.option(value).code

    @staticmethod
    def display(value):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> Scale:
        return cls.model_validate_json(text)

    def rating_code(self, value) -> float:
        """The code the statistics give a rating *value*: the option's code, NaN for no
        decision; raises ``ValueError`` naming the allowed values when *value* is off the
        scale (:meth:`canonical`). Every rating is coded by this method.

        >>> BINARY.rating_code("same"), BINARY.rating_code("dont_know")
        (1.0, nan)
        """
        c = self.code(self.canonical(value))
        return float("nan") if c is None else float(c)


BINARY = Scale(
    name="binary",
    level="nominal",
    options=[
        ScaleOption(
            value="same",
            label="Same",
            key="1",
            code=1,
            description="The two terms mean the same thing: they could be used "
            "interchangeably in consultation notes.",
        ),
        ScaleOption(
            value="not_same",
            label="Not same",
            key="2",
            code=0,
            description="The two terms do not mean the same thing.",
        ),
        ScaleOption(
            value="dont_know",
            label="Don't know",
            key="3",
            description="You cannot decide (unknown term, ambiguous meaning).",
        ),
    ],
    no_decision=["dont_know"],
    positive="same",
    negative="not_same",
    question="Could these two terms be used interchangeably in consultation notes?",
    guideline=(
        "### Are these two terms the same?\n\n"
        "Could the two terms be used **interchangeably in consultation notes**?\n\n"
        "- **Same** (key `1`): yes — a colleague reading the note would understand the same thing.\n"
        "- **Not same** (key `2`): no — they name different things, even if related.\n"
        "- **Don't know** (key `3`): you cannot decide; this is never counted as a vote for "
        "either side.\n\n"
        "Judge the terms as written. Do not look them up; go with your clinical reading."
    ),
)

RELATEDNESS_0_3 = Scale(
    name="relatedness-0-3",
    level="ordinal",
    unclear_flag=True,
    question="How related are these two medical concepts?",
    options=[
        ScaleOption(
            value=0,
            label="0 Unrelated",
            key="0",
            description="Completely unrelated concepts: the concepts have nothing in common "
            "and no relationship links them.",
        ),
        ScaleOption(
            value=1,
            label="1 Marginally related",
            key="1",
            description="There is a correlation between the concepts, but an established "
            "link might not exist.",
        ),
        ScaleOption(
            value=2,
            label="2 Related",
            key="2",
            description="The concepts are strongly related medically, e.g. one leads to the "
            "other (nausea leads to vomiting), or the concepts have an established "
            "link (obesity and ischemic heart disease).",
        ),
        ScaleOption(
            value=3,
            label="3 Extremely related",
            key="3",
            description="The concepts always occur together medically, or one cannot happen "
            "without the other (alcoholic liver disease and liver cirrhosis).",
        ),
    ],
    guideline=(
        "### How related are these two medical concepts?\n\n"
        "Rate on the 0–3 scale of Schulz et al. (COLING 2020), Table 1:\n\n"
        "- **0 Unrelated** — nothing in common, no relationship links them.\n"
        "- **1 Marginally related** — a correlation exists, but an established link might not.\n"
        "- **2 Related** — strongly related medically (one leads to the other, or an established "
        "link).\n"
        "- **3 Extremely related** — they always occur together, or one cannot happen without the "
        "other.\n\n"
        "Press `u` to flag a term whose meaning is unclear to you; the rating is then kept but "
        "marked."
    ),
)

SIMILARITY_0_6 = Scale(
    name="similarity-0-6",
    level="interval",
    question="How similar in meaning are these two terms?",
    options=[
        ScaleOption(
            value=i,
            label=str(i),
            key=str(i),
            description={
                0: "Not similar at all",
                3: "Somewhat similar",
                6: "Identical in meaning",
            }.get(i, ""),
        )
        for i in range(7)
    ],
    guideline=(
        "### How similar in meaning are these two terms?\n\n"
        "Rate **similarity**, not relatedness (SimLex practice): 'fever' and 'pyrexia' are "
        "similar (6); 'fever' and 'paracetamol' are related but not similar (low score).\n\n"
        "0 = not similar at all, 6 = identical in meaning."
    ),
)

BUILT_IN = {s.name: s for s in (BINARY, RELATEDNESS_0_3, SIMILARITY_0_6)}


def read_settings_file(path: Path, *, name: str):
    """The document of a small YAML (``.yaml``/``.yml``) or JSON settings file (a scale, an
    import mapping), or one error naming the file (*name*) when it cannot be parsed."""
    text = path.read_text(encoding="utf-8-sig")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            return yaml.safe_load(text)
        return json.loads(text)
    except Exception as exc:
        raise InputError.single(
            tr("cannot be parsed ({error})", error=f"{exc.__class__.__name__}: {exc}"), file=name
        ) from None


def load_scale(name_or_path: str | Path) -> Scale:
    """A built-in scale by name, or a custom scale from a YAML or JSON file."""
    key = str(name_or_path)
    if key in BUILT_IN:
        return BUILT_IN[key].model_copy(deep=True)
    path = Path(key)
    if not path.exists():
        raise InputError.single(
            tr(
                "is neither a built-in scale ({scales}) nor an existing scale file",
                scales=", ".join(BUILT_IN),
            ),
            file=key,
        )
    data = read_settings_file(path, name=key)
    try:
        return Scale.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(err["msg"], column=".".join(str(p) for p in err["loc"]) or None)
            for err in exc.errors()
        ]
        raise InputError(problems, key) from None


@functools.lru_cache(maxsize=64)
def scale_from_json(text: str) -> Scale:
    """:meth:`Scale.from_json`, parsed once per distinct text (a study's stored scale is
    read on every rating: the annotation queue, tiebreaks and stopping share this cache).
    The scale returned is shared: do not change it."""
    return Scale.from_json(text)
