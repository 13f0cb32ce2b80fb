"""The **study texts** contract: a study's own texts in one language — the guideline and the
scale's question, option labels and option descriptions — given by the admin for the doctors
who work in that language. Any field left empty falls back to the study's own text for that
field (:meth:`StudyTexts.apply`); the term pairs are data and are never translated.

A texts file is YAML or JSON of this shape (option values as the scale stores them)::

    question: Könnten diese beiden Begriffe in Konsiliarberichten austauschbar sein?
    guideline: |
      ### Sind diese beiden Begriffe gleich?
      ...
    options:
      same: {label: Gleich, description: Die beiden Begriffe bedeuten dasselbe.}
      not_same: {label: Nicht gleich}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._text import tr
from .errors import InputError, Problem
from .scales import Scale, read_settings_file


class OptionText(BaseModel):
    """One option's label and description in the language (empty: the study's own)."""

    model_config = ConfigDict(extra="forbid")
    label: str = ""
    description: str = ""


class StudyTexts(BaseModel):
    """The study's texts in one language; every field is optional."""

    model_config = ConfigDict(extra="forbid")
    question: str = ""
    guideline: str = ""
    #: Option value (as the scale stores it, written as text) -> its texts.
    options: dict[str, OptionText] = Field(default_factory=dict)

    @field_validator("options", mode="before")
    @classmethod
    def _keys_as_text(cls, value: Any) -> Any:
        # YAML reads ``0:`` as a number: option values are matched as text.
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
        return value

    @property
    def empty(self) -> bool:
        """Whether no field holds a text (every field falls back)."""
        return not (
            self.question.strip()
            or self.guideline.strip()
            or any(o.label.strip() or o.description.strip() for o in self.options.values())
        )

    def problems(self, scale: Scale) -> list[Problem]:
        """What does not fit *scale*: an option value that is not on it."""
        out = []
        for key in self.options:
            try:
                scale.canonical(key)
            except ValueError:
                allowed = ", ".join(str(Scale.display(o.value)) for o in scale.options)
                out.append(
                    Problem(
                        tr(
                            "'{value}' is not a value of the {scale} scale (allowed: {allowed})",
                            value=key,
                            scale=scale.name,
                            allowed=allowed,
                        ),
                        column=f"options.{key}",
                    )
                )
        return out

    def checked(self, scale: Scale, *, file: str | None = None) -> StudyTexts:
        """These texts with every option named by its value as *scale* stores it; raises
        :class:`~data_schemas.errors.InputError` naming every option not on the scale."""
        problems = self.problems(scale)
        if problems:
            raise InputError(problems, file)
        options = {
            str(Scale.display(scale.canonical(k))): OptionText(
                label=v.label.strip(), description=v.description.strip()
            )
            for k, v in self.options.items()
        }
        return StudyTexts(
            question=self.question.strip(), guideline=self.guideline.strip(), options=options
        )

    def option_text(self, value: Any) -> OptionText:
        """The texts of option *value* (empty when none were given)."""
        return self.options.get(str(Scale.display(value)), OptionText())

    def apply(self, scale: Scale, guideline: str) -> tuple[Scale, str]:
        """*scale* and the study's *guideline* in this language: each field that has a text
        here takes it, every other keeps the study's own. The scale returned is a copy."""
        shown = scale.model_copy(deep=True)
        if self.question.strip():
            shown.question = self.question.strip()
        own_guideline = self.guideline.strip() or guideline
        for option in shown.options:
            text = self.option_text(option.value)
            if text.label.strip():
                option.label = text.label.strip()
            if text.description.strip():
                option.description = text.description.strip()
        # A scale without a question asks its guideline's first heading: the translated one.
        shown.guideline = own_guideline
        return shown, own_guideline


def texts_from_data(data: Any, *, file: str | None = None) -> StudyTexts:
    """The texts of a parsed document; :class:`InputError` naming each bad field."""
    if data is None:
        data = {}
    try:
        return StudyTexts.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(err["msg"], column=".".join(str(p) for p in err["loc"]) or None)
            for err in exc.errors()
        ]
        raise InputError(problems, file) from None


def read_texts(path: Path, *, name: str | None = None) -> StudyTexts:
    """The texts of a YAML (``.yaml``/``.yml``) or JSON file (errors name it as *name*)."""
    shown = name or str(path)
    return texts_from_data(read_settings_file(Path(path), name=shown), file=shown)
