"""The one error type for bad input: it names the file, the row and the column."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._text import tr, trn


@dataclass
class Problem:
    """One thing wrong with an input file.

    ``row`` is the 1-based line number in the file as a person sees it in an editor
    (the header is line 1, so the first data row is line 2); ``None`` when the problem
    concerns the whole file or a whole column.
    """

    message: str
    row: int | None = None
    column: str | None = None

    def describe(self, file: str | None = None) -> str:
        where = []
        if file:
            where.append(str(file))
        if self.row is not None:
            where.append(tr("row {row}", row=self.row))
        if self.column is not None:
            where.append(tr("column '{column}'", column=self.column))
        prefix = ", ".join(where)
        return (
            tr("{where}: {problem}", where=prefix, problem=self.message) if prefix else self.message
        )


@dataclass
class InputError(Exception):
    """Bad input. Carries every problem found (not only the first) and the file name."""

    problems: list[Problem] = field(default_factory=list)
    file: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.summary())

    @classmethod
    def single(
        cls,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> InputError:
        return cls([Problem(message, row, column)], file)

    def with_file(self, file: str) -> InputError:
        return InputError(self.problems, self.file or str(file))

    def renamed(self, old: str, new: str) -> InputError:
        """The same problems with the file *old* called *new* (in the file name and in
        every message), e.g. an upload's temporary copy called by the name it was sent as."""
        problems = [Problem(p.message.replace(old, new), p.row, p.column) for p in self.problems]
        file = new if self.file in (None, old) else str(self.file).replace(old, new)
        return InputError(problems, file)

    def summary(self, limit: int = 1) -> str:
        """One clear sentence (the first problem), plus a count of the others."""
        if not self.problems:
            return tr("{file}: invalid input", file=self.file) if self.file else tr("invalid input")
        first = self.problems[0].describe(self.file)
        more = len(self.problems) - limit
        if more > 0:
            first += " " + trn("(and {n} more problem)", "(and {n} more problems)", more, n=more)
        return first

    def lines(self) -> list[str]:
        return [p.describe(self.file) for p in self.problems]

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.summary()


class OptionError(ValueError):
    """A value outside a setting's allowed values (the registries of
    :mod:`data_schemas.options`): a request that cannot be carried out as asked, printed as
    one sentence. ``setting`` is the setting's name (``target_ci``), the name a service
    message uses; the command line shows its flag (``--target-ci``) instead."""

    def __init__(self, message: str, setting: str | None = None):
        super().__init__(message)
        self.setting = setting


class UnknownOptionError(OptionError):
    """A string outside an option's allowed values (:class:`data_schemas.options.StrOptions`)."""
