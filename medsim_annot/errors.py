"""Errors of the use-case layer (bad input files raise data_schemas.errors.InputError)."""


class UsageProblem(ValueError):
    """A request that cannot be carried out as asked: unknown study, a name already taken,
    conflicting options. The CLI prints it as one sentence and exits with code 2."""
