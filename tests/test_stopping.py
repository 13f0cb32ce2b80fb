"""Sequential audit through the service API with simulated doctors on SQLite and
PostgreSQL: a group whose accuracy is pinned down stops after its minimum and its unrated
slots are withdrawn (rows kept, event logged), a hard group keeps serving, stopping off
restores the slots, withdrawn slots leave the totals, a rating that still arrives for a
withdrawn slot is stored; plus ``medsim study create --target-ci`` / ``study stopping``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from data_schemas.errors import OptionError
from data_schemas.scales import BINARY, RELATEDNESS_0_3
from medsim_annot.design.adaptive import interleave_groups
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services import stopping as S
from medsim_annot.services.design import DesignOptions, create_designed_study, prepare_study
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from medsim_annot.storage.events import acting_as

DOCTORS = ("ann", "bob", "cyd")
PER_GROUP = 40  # 20 positives + 20 negatives by automatic label
TARGET = 0.15


def _pairs(per_group: int = PER_GROUP) -> pd.DataFrame:
    rows = []
    for g in ("easy", "hard"):
        for i in range(per_group):
            rows.append(
                {
                    "pair_id": f"{g}{i}",
                    "term_1": f"{g}-a{i}",
                    "term_2": f"{g}-b{i}",
                    "auto_label": i % 2,
                    "dataset": g,
                }
            )
    return pd.DataFrame(rows)


def _truth(term: str) -> str:
    """The doctors' (unanimous) verdict: the automatic label is right on every easy pair and
    on half of the hard ones."""
    g, rest = term.split("-")
    i = int(rest[1:])
    label = i % 2
    right = g == "easy" or i % 4 < 2
    return "same" if (label == 1) == right else "not_same"


def _create(name="seq", *, target=TARGET, minimum=10, per_group=PER_GROUP, seed=11):
    res = create_designed_study(
        name,
        _pairs(per_group),
        BINARY,
        list(DOCTORS),
        DesignOptions(
            group_by=["dataset"],
            seed=seed,
            target_ci=target,
            min_positives=minimum,
            min_negatives=minimum,
        ),
    )
    assert res.config["stopping"] == {
        "target": target,
        "group_by": ["dataset"],
        "min_positives": minimum,
        "min_negatives": minimum,
        "enabled": True,
    }
    return {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators
    }


def _rate_all(ids: dict[str, int], *, limit: int | None = None) -> int:
    """Round-robin: each doctor rates their next pair until nobody has one (or *limit*
    ratings were saved)."""
    saved = 0
    while limit is None or saved < limit:
        moved = False
        for name in DOCTORS:
            state = A.queue_state(ids[name])
            if state.complete:
                continue
            view = A.get_pair(ids[name], state.first_unrated)
            A.submit_rating(
                ids[name], view.position, _truth(view.term_1), expected_version=view.version
            )
            saved += 1
            moved = True
            if limit is not None and saved >= limit:
                break
        if not moved:
            break
    return saved


def _slots(url: str) -> pd.DataFrame:
    with get_engine(url).connect() as conn:
        got = conn.exec_driver_sql(
            "SELECT a.id, i.dataset, a.withdrawn_at IS NOT NULL AS withdrawn, "
            "(SELECT COUNT(*) FROM ratings r WHERE r.assignment_id = a.id) AS ratings "
            "FROM assignments a JOIN items i ON i.id = a.item_id"
        ).all()
    out = pd.DataFrame(got, columns=["id", "group", "withdrawn", "ratings"])
    return out.astype({"withdrawn": bool, "ratings": int})


def _events(url: str, kind: str) -> list[tuple[dict, str | None]]:
    with get_engine(url).connect() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT detail_json, actor FROM events WHERE kind = '{kind}' ORDER BY id"
        ).all()
    return [(json.loads(d), a) for d, a in rows]


@pytest.fixture
def fresh(backend_url):
    dispose_all()
    yield backend_url
    dispose_all()


def test_easy_group_stops_hard_group_serves_and_off_restores(fresh):
    ids = _create()
    assert {A.queue_state(a).total for a in ids.values()} == {2 * PER_GROUP}
    spent = _rate_all(ids)
    assert spent < 3 * 2 * PER_GROUP  # doctors' time saved
    slots = _slots(fresh)
    assert len(slots) == 3 * 2 * PER_GROUP  # nothing deleted
    easy, hard = slots[slots.group == "easy"], slots[slots.group == "hard"]
    assert easy.withdrawn.sum() > 0 and not hard.withdrawn.any()
    assert (hard.ratings > 0).all()  # the hard group was served to the end
    assert (easy[easy.withdrawn].ratings == 0).all()  # withdrawal never takes a rated slot
    stopped = _events(fresh, "group_stopped")
    assert len(stopped) == 1
    detail, actor = stopped[0]
    assert actor == "system" and detail["group"] == "easy" and detail["target"] == TARGET
    # Stopped right after the minimum of 10 + 10 verdicts (all right: accuracy 1).
    assert detail["positives"] >= 10 and detail["negatives"] >= 10 and detail["n"] <= 24
    assert detail["accuracy"] == 1.0
    assert detail["withdrawn"] == int(easy.withdrawn.sum())
    # Withdrawn slots leave the totals: every queue is complete, done == total.
    for a in ids.values():
        st_ = A.queue_state(a)
        assert st_.complete and st_.done == st_.total < 2 * PER_GROUP and st_.waiting == 0
    from medsim_annot.services import studies as studies_svc
    from medsim_annot.services.people import annotators as annotators_svc

    totals = annotators_svc.annotators(open_study("seq"))["total"].tolist()
    assert sorted(totals) == sorted(A.queue_state(a).total for a in ids.values())
    (row,) = studies_svc.list_studies()
    assert row.assigned == sum(totals) == row.rated
    summary = S.audit_status(open_study("seq"))
    assert summary.groups.set_index("group").loc["easy", "status"] == "stopped"
    assert summary.groups.set_index("group").loc["hard", "status"] == "serving"
    # Off: every withdrawn slot is served again, with the admin named; the queue mark the
    # page compares moves, so an open browser refetches its stretch.
    marks = {a: A.queue_end(a) for a in ids.values()}
    with acting_as("admin:alice"):
        out = S.set_stopping(open_study("seq"), False)
    assert all(A.queue_end(a) != marks[a] for a in ids.values())
    assert out.restored == int(easy.withdrawn.sum()) and out.groups_released == ["easy"]
    assert _events(fresh, "stopping_off")[0][1] == "admin:alice"
    assert not _slots(fresh).withdrawn.any()
    states = [A.queue_state(a) for a in ids.values()]
    assert all(s.total == 2 * PER_GROUP for s in states) and not all(s.complete for s in states)
    # While off, ratings never withdraw anything.
    _rate_all(ids, limit=3)
    assert not _slots(fresh).withdrawn.any()
    # On again: the easy group (still within its target) stops at once.
    with acting_as("admin:alice"):
        back = S.set_stopping(open_study("seq"), True)
    assert back.groups_stopped == ["easy"]
    assert _events(fresh, "stopping_on")[0][1] == "admin:alice"
    assert len(_events(fresh, "group_stopped")) == 2
    assert _slots(fresh).withdrawn.sum() > 0


def test_rating_for_a_withdrawn_slot_is_stored_and_counted(fresh):
    ids = _create(target=0.3, minimum=2, per_group=12, seed=3)
    _rate_all(ids)
    with get_engine(fresh).connect() as conn:
        ann, position, term = conn.exec_driver_sql(
            "SELECT a.annotator_id, a.position, i.term_1 FROM assignments a "
            "JOIN items i ON i.id = a.item_id WHERE a.withdrawn_at IS NOT NULL "
            "ORDER BY a.id LIMIT 1"
        ).one()
    # The widget may still hold the slot in its window: the doctor's answer is stored.
    before = A.queue_state(ann)
    assert before.complete
    res = A.submit_rating(ann, position, _truth(term), expected_version=0)
    assert res.saved and res.version == 1
    after = A.queue_state(ann)
    assert after.done == before.done + 1 and after.total == before.total + 1
    assert after.complete
    assert A.get_pair(ann, position).rating == _truth(term)


def test_withdrawn_slots_leave_window_and_next_unrated(fresh):
    ids = _create(target=0.3, minimum=2, per_group=12, seed=3)
    _rate_all(ids, limit=30)
    slots = _slots(fresh)
    assert slots.withdrawn.any()
    for a in ids.values():
        state = A.queue_state(a)
        if state.complete:
            continue
        window = A.get_window(a, state.first_unrated, 24)
        assert not any(v.term_1.startswith("easy") and not v.rated for v in window[1:])
        assert window[0].position == state.first_unrated and not window[0].term_1.startswith("easy")
        # The widget's serving window (before and after the slot) lists no withdrawn,
        # unrated slot either, and its serving index counts only listed slots.
        served = A.serving_window(a, state.first_unrated, before=40, after=40)
        assert not any(v.term_1.startswith("easy") and not v.rated for v in served.pairs)
        assert served.first_index == 0 and served.start_of_queue
        assert [v.position for v in served.pairs].index(state.first_unrated) == state.done


def test_queue_is_group_interleaved_and_seeded():
    pairs = _pairs(8)
    opts = DesignOptions(group_by=["dataset"], seed=5, target_ci=0.1)
    a = prepare_study(pairs, list(DOCTORS), opts)
    b = prepare_study(pairs, list(DOCTORS), opts)
    assert {k: [s.item for s in q] for k, q in a.queues.items()} == {
        k: [s.item for s in q] for k, q in b.queues.items()
    }
    for q in a.queues.values():
        groups = [a.audit_groups[s.item] for s in q]
        assert all(x != y for x, y in zip(groups, groups[1:], strict=False))
    assert a.config["stopping"]["target"] == 0.1


def test_options_are_checked():
    pairs = _pairs(4)
    with pytest.raises(OptionError, match=r"between 0 and 0\.5"):
        prepare_study(pairs, list(DOCTORS), DesignOptions(group_by=[], target_ci=0.5))
    with pytest.raises(OptionError, match=r"between 0 and 0\.5"):
        prepare_study(pairs, list(DOCTORS), DesignOptions(group_by=[], target_ci=0))
    from data_schemas.errors import InputError

    with pytest.raises(InputError, match="nope"):
        prepare_study(pairs, list(DOCTORS), DesignOptions(group_by=["nope"], target_ci=0.1))
    with pytest.raises(UsageProblem, match="auto_label"):
        prepare_study(
            pairs.drop(columns="auto_label"),
            list(DOCTORS),
            DesignOptions(group_by=["dataset"], target_ci=0.1),
        )


def test_scale_without_positive_is_refused(db_url):
    with pytest.raises(UsageProblem, match="positive and negative"):
        create_designed_study(
            "graded",
            _pairs(4),
            RELATEDNESS_0_3,
            list(DOCTORS),
            DesignOptions(group_by=["dataset"], target_ci=0.1),
        )


def test_estimate_matches_wilson_and_majority():
    from medsim_annot.storage.stopping import GroupRating

    # Pair 1: 2 of 3 say same (label 1: right); pair 2: no majority (same, not_same,
    # dont_know); pair 3: label 0, majority same (wrong).
    rows = [
        GroupRating("g", 1, 1, "same"),
        GroupRating("g", 1, 1, "same"),
        GroupRating("g", 1, 1, "not_same"),
        GroupRating("g", 2, 1, "same"),
        GroupRating("g", 2, 1, "not_same"),
        GroupRating("g", 2, 1, "dont_know"),
        GroupRating("g", 3, 0, "same"),
        GroupRating("g", 3, 0, "same"),
    ]
    est = S.estimate(rows, BINARY, {"target": 0.1})["g"]
    assert (est.n, est.correct, est.predicted_positive, est.true_positive) == (2, 1, 1, 1)
    # 1 correct of 2: the Wilson interval from statsmodels, not the product's wilson_interval.
    ref = proportion_confint(1, 2, alpha=0.05, method="wilson")
    assert (est.accuracy_low, est.accuracy_high) == pytest.approx(ref, abs=1e-12)
    assert not est.stop


def test_cli_create_and_switch(db_url, cli, tmp_path):
    path = tmp_path / "pairs.csv"
    _pairs(12).to_csv(path, index=False)
    bad = cli("study", "create", "x", "--pairs", path, "--annotators", "a,b", "--target-ci", "0.7")
    assert bad.exit_code == 2 and "--target-ci" in bad.stderr
    bad = cli(
        "study",
        "create",
        "x",
        "--pairs",
        path,
        "--annotators",
        "a,b",
        "--target-ci",
        "0.1",
        "--group-by",
        "dataset,ward",
    )
    assert bad.exit_code == 2 and "ward" in bad.stderr and "pairs.csv" in bad.stderr
    assert cli("study", "list", "--json").stdout.strip() == "[]"  # nothing written
    ok = cli(
        "study",
        "create",
        "x",
        "--pairs",
        path,
        "--annotators",
        "a,b,c",
        "--target-ci",
        "0.1",
        "--min-positives",
        "5",
        "--json",
    )
    assert ok.exit_code == 0, ok.stderr
    cfg = json.loads(ok.stdout)["config"]["stopping"]
    assert cfg["group_by"] == ["dataset"] and cfg["min_positives"] == 5
    off = cli("study", "stopping", "x", "off")
    assert off.exit_code == 0 and "0 withdrawn slots" in off.stdout
    on = cli("study", "stopping", "x", "on", "--json")
    assert on.exit_code == 0 and json.loads(on.stdout)["groups_stopped"] == []
    assert cli("study", "stopping", "x", "maybe").exit_code == 2
    cli("study", "create", "plain", "--pairs", path, "--annotators", "a")
    r = cli("study", "stopping", "plain", "on")
    assert r.exit_code == 2 and "--target-ci" in r.stderr


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    order=st.lists(st.integers(0, 2), min_size=20, max_size=60),
    flips=st.sets(st.integers(0, 15), max_size=6),
)
def test_withdrawal_never_takes_a_rated_slot(tmp_path_factory, order, flips):
    import os

    url = f"sqlite:///{tmp_path_factory.mktemp('hyp') / 'h.db'}"
    old = os.environ.get("MEDSIM_DATABASE_URL")
    os.environ["MEDSIM_DATABASE_URL"] = url
    dispose_all()
    try:
        ids = _create("h", target=0.35, minimum=2, per_group=8, seed=len(order))
        names = list(DOCTORS)
        seen = 0
        for k in order:
            a = ids[names[k]]
            state = A.queue_state(a)
            if state.complete:
                continue
            view = A.get_pair(a, state.first_unrated)
            answer = _truth(view.term_1)
            if int(view.term_1.split("-a")[1]) in flips:
                answer = "same" if answer == "not_same" else "not_same"
            A.submit_rating(a, view.position, answer)
            slots = _slots(url)
            assert len(slots) == 3 * 16  # rows never deleted
            assert (slots[slots.withdrawn].ratings == 0).all()
            rated = int((slots.ratings > 0).sum())
            assert rated == seen + 1  # every rating was stored
            seen = rated
            state = A.queue_state(a)
            assert state.done <= state.total
    finally:
        dispose_all()
        if old is None:
            os.environ.pop("MEDSIM_DATABASE_URL", None)
        else:
            os.environ["MEDSIM_DATABASE_URL"] = old


def test_interleave_groups_round_robin():
    out = interleave_groups(list("aaabbc"), order=["c", "b", "a"])
    assert out == [5, 3, 0, 4, 1, 2]
    assert sorted(out) == list(range(6))


def test_concurrent_ratings_stop_a_group_once(fresh):
    import threading

    ids = _create(target=0.2, minimum=2, per_group=12, seed=5)
    errors: list[BaseException] = []
    while True:
        todo = [(n, A.queue_state(a)) for n, a in ids.items()]
        todo = [(n, s) for n, s in todo if not s.complete]
        if not todo:
            break
        barrier = threading.Barrier(len(todo))

        def rate(name: str, position: int, barrier: threading.Barrier = barrier) -> None:
            try:
                view = A.get_pair(ids[name], position)
                barrier.wait()
                A.submit_rating(ids[name], position, _truth(view.term_1))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=rate, args=(n, s.first_unrated)) for n, s in todo]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    stopped = _events(fresh, "group_stopped")
    assert [d["group"] for d, _a in stopped] == ["easy"]
    with get_engine(fresh).connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM group_stops").scalar() == 1
    assert len(_slots(fresh)) == 3 * 24


def test_a_group_is_claimed_and_logged_once(fresh):
    from medsim_annot.storage import session_scope, utcnow

    _create(target=0.2, minimum=2, per_group=4, seed=1)
    engine = get_engine(fresh)
    with session_scope(engine) as s:
        sid = s.execute(sa.text("SELECT id FROM studies")).scalar_one()
    results = []
    for _ in range(2):
        with session_scope(engine) as s:
            results.append(S._stop(s, sid, "easy", None, target=0.2, at=utcnow()))
    assert results == [True, False]
    assert len(_events(fresh, "group_stopped")) == 1
    slots = _slots(fresh)
    assert (
        slots[slots.group == "easy"].withdrawn.all()
        and not slots[slots.group == "hard"].withdrawn.any()
    )


def test_pair_values_before_and_after_a_revision(fresh):
    from medsim_annot.storage import session_scope
    from medsim_annot.storage import stopping as store

    ids = _create(target=0.2, minimum=2, per_group=4, seed=2)
    positions = {}
    for name in ("ann", "bob"):
        view = next(
            v
            for v in A.get_window(ids[name], 0, 8)
            if v.term_1 == "easy-a1" or v.term_2 == "easy-a1"
        )
        positions[name] = view.position
        A.submit_rating(ids[name], view.position, "same")
    A.submit_rating(ids["bob"], positions["bob"], "not_same")  # revision 2
    engine = get_engine(fresh)
    with session_scope(engine) as s:
        item, slot = s.execute(
            sa.text(
                "SELECT a.item_id, a.id FROM assignments a JOIN items i ON i.id = a.item_id "
                f"WHERE i.pair_id = 'easy1' AND a.annotator_id = {ids['bob']}"
            )
        ).one()
        now, before = store.pair_values(s, item, slot)
    assert sorted(now) == ["not_same", "same"] and before == ["same", "same"]
    assert S._verdict(before, BINARY) == 1.0
    assert S._verdict(now, BINARY) != S._verdict(now, BINARY)  # no majority: NaN
    assert S._same_verdict(S._verdict(now, BINARY), S._verdict(["dont_know"], BINARY))


def test_html_report_has_the_sequential_audit(fresh):
    from medsim_annot.services import dashboard as dsvc

    ids = _create(target=0.3, minimum=2, per_group=12, seed=3)
    _rate_all(ids)
    html = dsvc.html_report(open_study("seq"))
    section = html[html.index("<h2>Sequential audit</h2>") :]
    assert "at most 0.3" in section and "Wilson score interval, 95%" in section
    status = S.audit_status(open_study("seq"))
    for group in status.groups["group"]:
        assert f"<td>{group}</td>" in section
    assert "stopped" in section and "Sequential audit per group" in html
