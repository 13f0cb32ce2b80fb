"""What an adjudicator is shown of the raters: pseudonyms by default, names when the study
says so.

An adjudicator is not blind to the raters' answers and comments, but need not know who gave
them: by default each doctor appears as *Rater A*, *Rater B*, ... — the letter follows the
order the annotators were added to the study, so a doctor keeps their letter on every pair
and in every session of that study, and a doctor added later gets the next letter. A study
admin may show names instead (:func:`set_rater_names`, the study setting ``rater names``,
:data:`~data_schemas.options.RATER_NAMES`); the choice is kept in the study's config under
``adjudication.rater_names``, logged as an event, and recorded in every gold export's
manifest (``adjudication.rater_names``).

Not hidden by a pseudonym: what a doctor writes in a comment, and how they answer — an
adjudicator who knows the raters' habits may still recognise one.
"""

from __future__ import annotations

from data_schemas.options import RATER_NAMES
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import events as events_store
from medsim_annot.storage import session_scope
from medsim_annot.storage import studies as store

DEFAULT = "pseudonymous"


def rater_names(config: dict) -> str:
    """The setting in a study's *config*: ``pseudonymous`` (the default) or ``named``."""
    value = (config.get("adjudication") or {}).get("rater_names", DEFAULT)
    return RATER_NAMES.check(value)


def set_rater_names(study: Study, value: str) -> str:
    """Set whether *study*'s adjudicators see the raters' names (``named``) or pseudonyms
    (``pseudonymous``); records an event. The rest of the config is kept as stored now."""
    value = RATER_NAMES.check(value)
    info = study.reloaded()
    config = dict(info.config)
    config["adjudication"] = {**dict(config.get("adjudication") or {}), "rater_names": value}
    with session_scope(study.engine) as s:
        store.set_config(s, info.id, config)
        events_store.add_event(
            s, "adjudication_rater_names", study_id=info.id, detail={"rater_names": value}
        )
    return value


def pseudonym(index: int) -> str:
    """``Rater A`` ... ``Rater Z``, ``Rater AA``, ``Rater AB``, ... for *index* 0, 1, ...

    >>> [pseudonym(i) for i in (0, 1, 25, 26, 27, 701, 702)]
    ['Rater A', 'Rater B', 'Rater Z', 'Rater AA', 'Rater AB', 'Rater ZZ', 'Rater AAA']
    """
    letters = ""
    n = index + 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(ord("A") + r) + letters
    return f"Rater {letters}"


def shown_names(study: Study) -> dict[str, str]:
    """How the adjudicators of *study* see each annotator: name -> pseudonym, or the name
    itself when the study shows names (the setting as the handle holds it)."""
    with session_scope(study.engine) as s:
        names = store.annotator_names(s, study.id)
    if rater_names(study.config) == "named":
        return {n: n for n in names.values()}
    return {names[i]: pseudonym(k) for k, i in enumerate(sorted(names))}


def as_shown(pair: dict, shown: dict[str, str]) -> dict:
    """*pair* (:meth:`.board.Board.pair`) with each rater named as *shown* says; under
    pseudonyms the raters come in letter order (not by name, which would give names away)."""
    named = all(k == v for k, v in shown.items())
    raters = [
        {**r, "annotator": shown.get(r["annotator"], r["annotator"] if named else "Rater ?")}
        for r in pair["raters"]
    ]
    if not named:
        raters.sort(key=lambda r: (len(r["annotator"]), r["annotator"]))
    return {**pair, "raters": raters}
