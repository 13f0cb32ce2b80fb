"""Errors of the use-case layer (bad input files raise data_schemas.errors.InputError)."""


class UsageProblem(ValueError):
    """A request that cannot be carried out as asked: unknown study, a name already taken,
    conflicting options. The CLI prints it as one sentence and exits with code 2."""


class StaleRating(UsageProblem):
    """A save carried the version of a rating that is no longer the slot's current one: the
    pair was changed in another window. ``current`` holds what the slot holds now (keys
    ``rating``, ``unclear``, ``comment``, ``version``) so the page can show it."""

    def __init__(self, current: dict[str, object]):
        super().__init__("this pair was changed in another window — here is the current answer")
        self.current = current


class SessionEnded(UsageProblem):
    """The access code (or sign-in) this session was opened with has been replaced or revoked
    since: every later read and save is refused until the annotator signs in again."""


class StoreUnavailable(RuntimeError):
    """The store could not be read or written, even after retrying transient errors (disk
    full, a read-only file, PostgreSQL restarting). Nothing was saved; the caller keeps the
    answer and tries again later."""


class PracticeLocked(UsageProblem):
    """The annotator's real queue is closed: the study has practice pairs and they have not
    met the practice gate yet (nor been unlocked by an admin). Nothing real is served or
    stored until then (docs/practice.md)."""
