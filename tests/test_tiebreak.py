"""The store side of the 2 + 1 design, through the service API with simulated
doctors on SQLite and PostgreSQL: a third rating only where the first two disagree, exactly
one tiebreak slot per such pair even when two annotators finish it at the same instant, and
the majority of every pair equal to the full three-rater majority."""

from __future__ import annotations

import threading
from collections import Counter

import pandas as pd
import pytest
import sqlalchemy as sa

from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.storage import dispose_all, get_engine

PAIRS = 24
DOCTORS = ("ann", "bob", "cyd")


def _pairs(n: int = PAIRS) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"a{i}" for i in range(n)],
            "term_2": [f"b{i}" for i in range(n)],
        }
    )


def _opinion(doctor: str, i: int) -> str:
    """The simulated doctor's answer to pair *i*: each doctor errs on a different third."""
    truth = "same" if i % 2 else "not_same"
    wrong = {"ann": i % 3 == 0, "bob": i % 3 == 1, "cyd": i % 3 == 2}[doctor]
    return ("not_same" if truth == "same" else "same") if wrong else truth


def _create(n: int = PAIRS, seed: int = 7) -> dict[str, int]:
    res = create_designed_study(
        "two-plus-one",
        _pairs(n),
        BINARY,
        list(DOCTORS),
        DesignOptions(per_item=2, tiebreak=True, seed=seed),
    )
    assert res.config["tiebreak"] == {"tolerance": 0.0}
    return {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators
    }


def _index(view) -> int:
    term = view.term_1 if view.term_1.startswith("a") else view.term_2
    return int(term[1:])


def _rows(url: str) -> pd.DataFrame:
    with get_engine(url).connect() as conn:
        got = conn.exec_driver_sql(
            "SELECT i.pair_id, an.name, a.kind, r.value FROM ratings r "
            "JOIN assignments a ON a.id = r.assignment_id "
            "JOIN items i ON i.id = r.item_id JOIN annotators an ON an.id = r.annotator_id"
        ).all()
    return pd.DataFrame(got, columns=["pair_id", "annotator", "kind", "value"])


def _tiebreaks(url: str) -> Counter:
    with get_engine(url).connect() as conn:
        return Counter(
            r[0]
            for r in conn.exec_driver_sql(
                "SELECT i.pair_id FROM assignments a JOIN items i ON i.id = a.item_id "
                "WHERE a.kind = 'tiebreak'"
            ).all()
        )


@pytest.fixture
def fresh(backend_url):
    dispose_all()
    yield backend_url
    dispose_all()


def test_majority_equals_three_rater_majority(fresh):
    ids = _create()
    initial = {n: A.queue_state(a).total for n, a in ids.items()}
    # Round-robin: each doctor rates their next pair, until nobody has anything left.
    while True:
        moved = False
        for name in DOCTORS:
            state = A.queue_state(ids[name])
            if state.complete:
                continue
            view = A.get_pair(ids[name], state.first_unrated)
            res = A.submit_rating(
                ids[name],
                view.position,
                _opinion(name, _index(view)),
                expected_version=view.version,
            )
            assert res.saved
            moved = True
        if not moved:
            break
    rows = _rows(fresh)
    assert len(rows) < 3 * PAIRS  # doctors' time saved
    per_pair = rows.groupby("pair_id")["value"].agg(list)
    tb = _tiebreaks(fresh)
    for pid, values in per_pair.items():
        i = int(pid[1:])
        full = Counter(_opinion(d, i) for d in DOCTORS).most_common(1)[0][0]
        assert Counter(values).most_common(1)[0][0] == full
        first_two_agree = len(values) == 2 and values[0] == values[1]
        assert tb.get(pid, 0) == (0 if first_two_agree else 1)
        assert len(values) == (2 if first_two_agree else 3)
    assert sum(tb.values()) > 0
    # a tiebreak slot is a new position past the end; positions stay unique per annotator
    with get_engine(fresh).connect() as conn:
        dup = conn.exec_driver_sql(
            "SELECT annotator_id, position, COUNT(*) FROM assignments "
            "GROUP BY annotator_id, position HAVING COUNT(*) > 1"
        ).all()
    assert dup == []
    # queues grew by exactly the tiebreak slots, and progress totals follow
    grown = sum(A.queue_state(a).total - initial[n] for n, a in ids.items())
    assert grown == sum(tb.values())
    for aid in ids.values():
        assert A.queue_state(aid).waiting == 0


def test_waiting_until_others_have_rated(fresh):
    ids = _create(n=6, seed=11)
    # ann finishes her queue first: the pairs she does not hold, not yet rated twice by the
    # others, may still bring her a tiebreak slot.
    aid = ids["ann"]
    while (state := A.queue_state(aid)).first_unrated is not None:
        view = A.get_pair(aid, state.first_unrated)
        A.submit_rating(aid, view.position, _opinion("ann", _index(view)))
    state = A.queue_state(aid)
    assert state.complete and state.waiting == 6 - state.total
    assert state.waiting > 0
    # bob and cyd rate everything: ann's waiting count drops to 0, and any tiebreak slot
    # bob and cyd disagreed on is now in her queue.
    for name in ("bob", "cyd"):
        while (st := A.queue_state(ids[name])).first_unrated is not None:
            view = A.get_pair(ids[name], st.first_unrated)
            A.submit_rating(ids[name], view.position, _opinion(name, _index(view)))
    final = A.queue_state(aid)
    assert final.waiting == 0
    assert final.total >= state.total


def test_two_finishing_at_once_add_exactly_one_tiebreak(fresh):
    ids = _create(n=12, seed=3)
    # Every doctor's slots by pair index.
    where: dict[str, dict[int, int]] = {}
    for name, aid in ids.items():
        state = A.queue_state(aid)
        views = A.get_window(aid, 0, state.total)
        where[name] = {_index(v): v.position for v in views}
    pairs_of = {i: sorted(n for n in DOCTORS if i in where[n]) for i in range(12)}
    for i, raters in pairs_of.items():
        assert len(raters) == 2
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def rate(
            name: str,
            value: str,
            i: int = i,
            barrier: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            try:
                barrier.wait()
                A.submit_rating(ids[name], where[name][i], value, expected_version=0)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=rate, args=(raters[0], "same")),
            threading.Thread(target=rate, args=(raters[1], "not_same")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    tb = _tiebreaks(fresh)
    assert tb == Counter({f"p{i}": 1 for i in range(12)})
    with get_engine(fresh).connect() as conn:
        n = conn.execute(sa.text("SELECT COUNT(*) FROM tiebreaks")).scalar()
        holders = conn.exec_driver_sql(
            "SELECT t.annotator_id, a.annotator_id FROM tiebreaks t "
            "JOIN assignments a ON a.id = t.assignment_id"
        ).all()
    assert n == 12 and all(x == y for x, y in holders)
    # The third rater is the one who did not rate the pair.
    for name, aid in ids.items():
        state = A.queue_state(aid)
        assert state.total == len(where[name]) + sum(
            1 for i, r in pairs_of.items() if name not in r
        )


def test_tiebreak_needs_two_per_item_and_three_doctors(fresh):
    with pytest.raises(UsageProblem, match=r"2 annotators per pair \(per_item\)"):
        create_designed_study(
            "x", _pairs(), BINARY, list(DOCTORS), DesignOptions(per_item=3, tiebreak=True)
        )
    with pytest.raises(UsageProblem, match="three annotators"):
        create_designed_study(
            "x", _pairs(), BINARY, ["a", "b"], DesignOptions(per_item=2, tiebreak=True)
        )


def test_tiebreak_slot_is_served_soon_and_progress_follows(fresh):
    ids = _create(n=24, seed=5)
    # cyd starts: her progress count is cached in this process.
    cyd = ids["cyd"]
    start = A.queue_state(cyd)
    view = A.get_pair(cyd, start.first_unrated)
    A.submit_rating(cyd, view.position, "same")
    before = A.get_pair(cyd, A.queue_state(cyd).first_unrated)
    # ann and bob disagree on a pair cyd does not hold.
    holds = {n: {_index(v): v.position for v in A.get_window(a, 0, 200)} for n, a in ids.items()}
    i = next(k for k in range(24) if k in holds["ann"] and k in holds["bob"])
    A.submit_rating(ids["ann"], holds["ann"][i], "same")
    A.submit_rating(ids["bob"], holds["bob"][i], "not_same")
    # The slot is cyd's new last position, her total grew (also in the cached count), and it
    # is served within her next few pairs — not the very next one.
    after = A.get_pair(cyd, before.position)
    assert after.total == before.total + 1
    new_pos = before.total  # positions are 0 .. total-1: the new one is past the end
    assert _index(A.get_pair(cyd, new_pos)) == i
    order = [v.position for v in A.get_window(cyd, before.position, 10)]
    assert new_pos in order[1:5]
    # Serving follows that order: next unrated after the current pair.
    served = []
    pos = before.position
    for _ in range(5):
        res = A.submit_rating(cyd, pos, "same")
        served.append(pos)
        pos = res.next_position
    assert new_pos in served[1:]


def test_migration_0006_orders_existing_slots(tmp_path):
    """A store at 0005 with queues gets ``order_key = position * ORDER_GAP`` and the
    tiebreaks table; serving order is unchanged."""
    from alembic import command
    from alembic.config import Config

    from medsim_annot.storage import ORDER_GAP
    from medsim_annot.storage.db import MIGRATIONS

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0005")
        conn.exec_driver_sql(
            "INSERT INTO studies (id, name, scale_json, guideline, config_json, created_at, "
            "ready) VALUES (1, 's', '{}', '', '{}', '2026-01-01', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO items (id, study_id, pair_id, position, term_1, term_2, dataset, "
            "difficulty, negative_strategy, concept_id_1, concept_id_2, meta_json) "
            "VALUES (1, 1, 'p', 0, 'a', 'b', '', '', '', '', '', '{}')"
        )
        conn.exec_driver_sql(
            "INSERT INTO annotators (id, study_id, name, active, created_at) "
            "VALUES (1, 1, 'x', 1, '2026-01-01')"
        )
        for pos in (0, 1, 2):
            conn.exec_driver_sql(
                "INSERT INTO assignments (study_id, annotator_id, item_id, position, kind, "
                f"swapped) VALUES (1, 1, 1, {pos}, 'main', 0)"
            )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        keys = conn.exec_driver_sql(
            "SELECT position, order_key FROM assignments ORDER BY position"
        ).all()
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM tiebreaks").scalar() == 0
    assert keys == [(p, p * ORDER_GAP) for p in (0, 1, 2)]
    engine.dispose()


def test_dashboard_agreement_on_calibration_pairs(fresh):
    from medsim_annot.services.dashboard import study_dashboard

    res = create_designed_study(
        "two-plus-one-cal",
        _pairs(18),
        BINARY,
        list(DOCTORS),
        DesignOptions(per_item=2, tiebreak=True, calibration=6, seed=2),
    )
    ids = {a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators}
    for name, aid in ids.items():
        while (st := A.queue_state(aid)).first_unrated is not None:
            view = A.get_pair(aid, st.first_unrated)
            A.submit_rating(aid, view.position, _opinion(name, _index(view)))
    dash = study_dashboard("two-plus-one-cal", use_cache=False)
    assert "6 calibration pairs" in dash.agreement_basis
    assert dash.agreement.n_items == 6
    # The gold table (majority of every pair) still covers every pair.
    assert len(dash.gold.table) == 18
