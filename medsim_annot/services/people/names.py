"""Names people type: study names, annotator names and SSO identities.

Study names reach file names (exports, reports) and both kinds of names are shown on the
admin pages, so they are one line of printable text: a study name may not hold ``/``, ``\\``,
``..`` or control characters, an annotator name no control characters. File names are never
built from a name directly but from :func:`file_slug` (python-slugify: ASCII letters, digits
and dashes only).
"""

from __future__ import annotations

from slugify import slugify

from data_schemas import has_control_chars
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t

#: Longest study or annotator name (the columns are VARCHAR(200)).
NAME_MAX_CHARS = 200


def _common(kind: str, name: str | None) -> str:
    """*name* stripped; refused when empty, too long or holding a control character (*kind*:
    ``study`` or ``annotator``, each with its own sentences)."""
    study = kind == "study"
    name = (name or "").strip()
    if not name:
        raise UsageProblem(t("a study needs a name") if study else t("an annotator needs a name"))
    if len(name) > NAME_MAX_CHARS:
        raise UsageProblem(
            t("a study name has at most {n} characters", n=NAME_MAX_CHARS)
            if study
            else t("an annotator name has at most {n} characters", n=NAME_MAX_CHARS)
        )
    if has_control_chars(name):
        raise UsageProblem(
            t(
                "the study name {name} contains a line break, tab or other control character",
                name=repr(name),
            )
            if study
            else t(
                "the annotator name {name} contains a line break, tab or other control character",
                name=repr(name),
            )
        )
    return name


def check_study_name(name: str | None) -> str:
    """*name* stripped, or :class:`UsageProblem` if it is empty, too long, or holds ``/``,
    ``\\``, ``..`` or a control character.

    >>> check_study_name("  Cardiology 2026 ")
    'Cardiology 2026'
    >>> check_study_name("../etc")
    Traceback (most recent call last):
    ...
    medsim_annot.errors.UsageProblem: a study name may not contain '/', '\\' or '..': '../etc'
    """
    name = _common("study", name)
    if "/" in name or "\\" in name or ".." in name:
        raise UsageProblem(
            t("a study name may not contain '/', '\\' or '..': {name}", name=repr(name))
        )
    return name


def check_annotator_name(name: str | None) -> str:
    """*name* stripped, or :class:`UsageProblem` if it is empty, too long or holds a control
    character."""
    return _common("annotator", name)


def file_slug(name: str, *, fallback: str = "study") -> str:
    """A file-name-safe form of *name*: lower-case ASCII letters, digits and dashes.

    >>> file_slug("Étude: cardiology/2026"), file_slug("…", fallback="study")
    ('etude-cardiology-2026', 'study')
    """
    return slugify(name or "", max_length=80) or fallback


SUB_PREFIX = "sub:"  # a subject id written explicitly (needed when it contains an "@")


def normalise_identity(identity: str) -> str:
    """E-mail addresses compare case-insensitively; subject ids (``sub:ID`` or a bare id
    without ``@``) exactly."""
    identity = (identity or "").strip()
    if identity.startswith(SUB_PREFIX):
        return identity
    return identity.lower() if "@" in identity else identity


#: Longest SSO identity (an e-mail address has at most 320 characters).
IDENTITY_MAX_CHARS = 320


def check_identity(identity: str | None) -> str | None:
    """The stored form of an SSO identity an admin typed (:func:`normalise_identity`), ``None``
    for an empty one (no link), or :class:`UsageProblem` when it is longer than
    :data:`IDENTITY_MAX_CHARS` or holds a control character.

    >>> check_identity(" Ann@Hospital.example "), check_identity("  ")
    ('ann@hospital.example', None)
    """
    if not (identity and identity.strip()):
        return None
    ident = normalise_identity(identity)
    if len(ident) > IDENTITY_MAX_CHARS or any(ord(ch) < 32 for ch in ident):
        raise UsageProblem(
            t(
                "an SSO identity is an e-mail address or subject id (≤ {n} chars)",
                n=IDENTITY_MAX_CHARS,
            )
        )
    return ident
