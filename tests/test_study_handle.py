"""The Study handle: a name is resolved once (:func:`open_study`), and the handle carries what
the services need (id, scale, config, engine)."""

from __future__ import annotations

import pytest

from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import studies as svc
from medsim_annot.services.demo import demo_pairs
from medsim_annot.services.study_handle import Study, open_study
from medsim_annot.storage import get_engine, session_scope
from medsim_annot.storage import studies as store


def test_open_study_names_the_known_studies(db_url):
    with pytest.raises(UsageProblem, match=r"no study named 'x' \(there are no studies yet\)"):
        open_study("x")
    svc.create_study("b", demo_pairs(), BINARY, ["ann"])
    svc.create_study("a", demo_pairs(), BINARY, ["ann"])
    with pytest.raises(UsageProblem, match=r"no study named 'x' \(known studies: a, b\)"):
        open_study("x")


def test_the_handle_carries_the_study_and_its_engine(db_url):
    engine = get_engine()
    svc.create_study("s", demo_pairs(), BINARY, ["ann"], config={"seed": 3}, engine=engine)
    study = open_study("s", engine=engine)
    assert isinstance(study, Study)
    assert (study.name, study.scale.name, study.config) == ("s", BINARY.name, {"seed": 3})
    assert study.engine is engine and study.created_at is not None
    assert study == open_study("s", engine=engine) and len({study, open_study("s")}) == 1
    assert len(svc.pairs_frame(study)) == len(demo_pairs())


def test_the_handle_is_a_snapshot_until_reloaded(db_url):
    svc.create_study("s", demo_pairs(), BINARY, ["ann"], config={"seed": 3})
    study = open_study("s")
    with session_scope(study.engine) as s:
        store.set_config(s, study.id, {"seed": 4})
    assert study.config == {"seed": 3}
    fresh = study.reloaded()
    assert fresh.config == {"seed": 4} and (fresh.id, fresh.engine) == (study.id, study.engine)
    with pytest.raises(AttributeError):
        study.name = "t"  # type: ignore[misc]
