"""The Dashboard's figures warmed after a server start (issue 38, section 1): what the page
shows from the kept dashboards and planned counts always equals the plain computation (no
cache, planned ratings counted afresh) after any change — new ratings, an added annotator,
the sequential audit's stops and its switch, the rater checks' settings —, on SQLite and
PostgreSQL; the warm-up keeps exactly what the page asks for; an admin arriving during a
warm-up waits for it instead of computing a second time."""

from __future__ import annotations

import itertools
import math
import threading
import time
import uuid
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_schemas.scales import BINARY
from medsim_annot import i18n
from medsim_annot.services import annotation as A
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import quality as quality_svc
from medsim_annot.services import stopping as stopping_svc
from medsim_annot.services.dashboard import store as dstore
from medsim_annot.services.dashboard import warm
from medsim_annot.services.dashboard.cache import LRUCache
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.people.admins import add_admin
from medsim_annot.services.people.annotators import add_annotator, authenticate_annotator
from medsim_annot.services.people.language import set_admin_language
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import get_engine, session_scope
from medsim_annot.storage import studies as studies_store

DOCTORS = ("ann", "bob", "cyd")
PER_GROUP = 6


def _pairs() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "pair_id": f"{g}{i}",
                "term_1": f"{g}-a{i}",
                "term_2": f"{g}-b{i}",
                "auto_label": i % 2,
                "dataset": g,
            }
            for g in ("easy", "hard")
            for i in range(PER_GROUP)
        ]
    )


def _create(name: str) -> dict[str, int]:
    """A binary study with a sequential audit that stops a group early (wide target, two
    positives and two negatives): slots get withdrawn and restored."""
    res = create_designed_study(
        name,
        _pairs(),
        BINARY,
        list(DOCTORS),
        DesignOptions(
            group_by=["dataset"], seed=3, target_ci=0.45, min_positives=2, min_negatives=2
        ),
    )
    return {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators
    }


def _rate_next(annotator_id: int, value: str) -> bool:
    state = A.queue_state(annotator_id)
    if state.complete:
        return False
    view = A.get_pair(annotator_id, state.first_unrated)
    A.submit_rating(annotator_id, view.position, value, expected_version=view.version)
    return True


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def _shown(name: str) -> tuple[dict, pd.DataFrame]:
    """What the page shows: the kept dashboard's headline with the kept planned counts."""
    study = open_study(name)
    dash = dsvc.study_dashboard(study)
    return dash.headline(dsvc.planned_ratings(study)), dash.summary()


def _plain(name: str) -> tuple[dict, pd.DataFrame]:
    """The same computed afresh: no cache, the planned ratings counted now."""
    study = open_study(name)
    with session_scope(study.engine) as s:
        planned = dict(studies_store.planned_raters(s, study.id))
    dash = dsvc.study_dashboard(study, use_cache=False)
    return dash.headline(planned), dash.summary()


def _check(name: str) -> None:
    (shown, shown_summary), (plain, plain_summary) = _shown(name), _plain(name)
    assert shown.keys() == plain.keys()
    for k in shown:
        assert _same(shown[k], plain[k]), (k, shown[k], plain[k])
    pd.testing.assert_frame_equal(shown_summary, plain_summary)


#: Counts the examples of the property test (their studies' names sort newest first).
_EXAMPLE = itertools.count()

OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("rate"), st.integers(0, 3), st.sampled_from(["same", "not_same", "dont_know"])
        ),
        st.tuples(st.just("rate_many"), st.integers(1, 8)),
        st.just(("add_annotator",)),
        st.tuples(st.just("stopping"), st.booleans()),
        st.tuples(st.just("rushed_ms"), st.integers(0, 5000)),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_a_shown_figure_always_equals_the_plain_computation(backend_url, ops):
    # Each example's study sorts before the earlier examples' (the picker's order, which the
    # warm-up follows), so warming one study warms this one: the store keeps every example's.
    name = f"warm-{10**6 - next(_EXAMPLE):07d}-{uuid.uuid4().hex[:6]}"
    ids = _create(name)
    _rate_next(ids["ann"], "same")
    dsvc.clear_cache()
    assert warm.warm_dashboards(get_engine(), limit=1) == [name]
    _check(name)
    people = list(ids.values())
    for op in ops:
        if op[0] == "rate":
            _rate_next(people[op[1] % len(people)], op[2])
        elif op[0] == "rate_many":
            for k in range(op[1]):
                _rate_next(people[k % len(people)], "same" if k % 3 else "not_same")
        elif op[0] == "add_annotator":
            added = add_annotator(open_study(name), f"dr{len(people)}")
            people.append(authenticate_annotator(added.access_code).annotator_id)
        elif op[0] == "stopping":
            stopping_svc.set_stopping(open_study(name), op[1])
        else:
            quality_svc.set_settings(open_study(name), rushed_ms=op[1])
        _check(name)


def test_the_warm_up_keeps_what_the_page_asks_for(backend_url):
    ids = _create("warmed")
    _create("no-ratings-yet")
    for k in range(5):
        _rate_next(ids[DOCTORS[k % 3]], "same")
    dsvc.clear_cache()
    assert warm.warm_store() == ["warmed"]  # a study without ratings has no figures to warm
    hits = dsvc.CACHE_STATS["hits"]
    study = open_study("warmed")
    dsvc.study_dashboard(study)
    assert dsvc.CACHE_STATS["hits"] == hits + 1
    kept = dstore.PLANNED.keys()
    assert kept and all(k[1] == study.id for k in kept)
    planned_hits = dstore.PLANNED.hits
    dsvc.planned_ratings(study)
    assert dstore.PLANNED.hits == planned_hits + 1
    # A new rating changes no slot: the planned counts stay kept, the figures are computed.
    _rate_next(ids["bob"], "not_same")
    dsvc.planned_ratings(study)
    assert dstore.PLANNED.hits == planned_hits + 2
    _check("warmed")


def test_the_warm_up_speaks_the_admins_languages(backend_url):
    ids = _create("warmed")
    _rate_next(ids["ann"], "same")
    add_admin("lead", password="a long enough password 1")
    set_admin_language("lead", "de")
    assert warm.warm_languages(get_engine()) == ["en", "de"]
    dsvc.clear_cache()
    warm.warm_store()
    study = open_study("warmed")
    for lang in ("de", "en"):
        hits = dsvc.CACHE_STATS["hits"]
        with i18n.language(lang):
            dsvc.study_dashboard(study)
        assert dsvc.CACHE_STATS["hits"] == hits + 1, lang


def test_no_store_no_warm_up(tmp_path, monkeypatch):
    missing = tmp_path / "none" / "medsim.db"
    monkeypatch.setenv("MEDSIM_DATABASE_URL", f"sqlite:///{missing}")
    assert warm.warm_store() == []
    assert not missing.exists() and not missing.parent.exists()
    assert warm.nothing_to_warm("sqlite:///:memory:")
    assert not warm.nothing_to_warm("postgresql://u@h/db")


def test_a_caller_during_the_making_waits_for_it():
    cache: LRUCache[int] = LRUCache("t", 2)
    calls: list[str] = []
    started = threading.Event()

    def slow() -> int:
        calls.append("slow")
        started.set()
        time.sleep(0.3)
        return 1

    got: list[tuple[int, bool]] = []
    first = threading.Thread(target=lambda: got.append(cache.get_or_make_told("k", slow)))
    first.start()
    started.wait(5)
    assert cache.making("k")
    second = cache.get_or_make_told("k", lambda: calls.append("second") or 2)
    first.join(5)
    assert calls == ["slow"] and second == (1, False) and got == [(1, True)]
    assert not cache.making("k")


def test_a_failed_making_lets_the_waiter_make_it():
    cache: LRUCache[int] = LRUCache("t", 2)
    started = threading.Event()

    def broken() -> int:
        started.set()
        time.sleep(0.2)
        raise RuntimeError("no store")

    errors: list[BaseException] = []

    def first() -> None:
        try:
            cache.get_or_make("k", broken)
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    started.wait(5)
    assert cache.get_or_make_told("k", lambda: 7) == (7, True)
    thread.join(5)
    assert len(errors) == 1 and cache.get("k") == 7


def test_serve_py_warms_the_dashboards_in_the_background():
    text = Path(__file__).resolve().parents[1].joinpath("serve.py").read_text()
    assert "warm_in_background(warmup.AFTER_SERVING, dashboards=True)" in text
