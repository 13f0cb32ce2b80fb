"""Rater checks of a stored study, on SQLite and PostgreSQL: check pairs served blind at a set
rate, accuracy on them with the admin's warning, rushed answers (and ``export gold
--exclude-rushed`` recording it in the manifest), pace, and the CLI."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from data_schemas.errors import InputError
from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services import quality as quality_svc
from medsim_annot.services.dashboard import html_report, study_dashboard
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.rating_queue import widget_pair
from medsim_annot.services.studies import create_study, current_ratings, pairs_frame
from medsim_annot.services.study_handle import open_study

N_MAIN = 40
N_CHECK = 6


def _pairs() -> pd.DataFrame:
    rows = [
        {"pair_id": f"m{i}", "term_1": f"alpha {i}", "term_2": f"beta {i}", "check_answer": ""}
        for i in range(N_MAIN)
    ]
    rows += [
        {
            "pair_id": f"c{i}",
            "term_1": f"fever {i}",
            "term_2": f"pyrexia {i}",
            "check_answer": "same" if i % 2 == 0 else "not_same",
        }
        for i in range(N_CHECK)
    ]
    return pd.DataFrame(rows)


def _ids(result) -> dict[str, int]:
    return {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in result.annotators
    }


@pytest.fixture
def checked(backend_url):
    res = create_designed_study(
        "checked",
        _pairs(),
        BINARY,
        ["ann", "bob"],
        DesignOptions(seed=3, check_rate=0.1),
        extra_config={"quality": quality_svc.QualitySettings(check_min_accuracy=0.75).to_config()},
    )
    return _ids(res)


def _queue(annotator_id: int) -> list[A.PairView]:
    total = A.queue_state(annotator_id).total
    return [A.get_pair(annotator_id, p) for p in range(total)]


def test_check_pairs_are_stored_apart_and_served_at_the_rate(checked):
    assert quality_svc.check_answers(open_study("checked")) == {
        f"c{i}": ("same" if i % 2 == 0 else "not_same") for i in range(N_CHECK)
    }
    # The known answer is no metadata column of the pairs (it would reach the gold file).
    assert "check_answer" not in pairs_frame(open_study("checked")).columns
    for ann in checked.values():
        terms = [v.term_1 for v in _queue(ann)]
        checks = [i for i, t in enumerate(terms) if t.startswith("fever")]
        # round(0.1 * 40 / 0.9) = 4 check slots among 44, one per stretch of 11.
        assert len(terms) == N_MAIN + 4 and len(checks) == 4
        assert [c // 11 for c in checks] == [0, 1, 2, 3]


def test_an_annotator_cannot_tell_a_check_pair_from_the_others(checked):
    """Blinding: a check slot's view and the widget's JSON have the same fields as any
    other slot's, and nothing in them carries the known answer or the word "check"."""
    ann = checked["ann"]
    views = _queue(ann)
    fields = {f.name for f in dataclasses.fields(A.PairView)}
    assert fields == {
        "position",
        "total",
        "done",
        "term_1",
        "term_2",
        "scale",
        "guideline",
        "rating",
        "unclear",
        "comment",
        "version",
    }
    check = next(v for v in views if v.term_1.startswith("fever"))
    other = next(v for v in views if v.term_1.startswith("alpha"))
    wc, wo = widget_pair(check), widget_pair(other)
    assert set(wc) == set(wo)
    differs = {k for k in wc if wc[k] != wo[k]}
    assert differs <= {"position", "term_1", "term_2"}
    assert "check" not in json.dumps(wc).lower()
    assert dataclasses.replace(check, term_1="", term_2="", position=0) == dataclasses.replace(
        other, term_1="", term_2="", position=0
    )


def _rate_all(ann: int, *, wrong_checks: bool, elapsed: int) -> None:
    for v in _queue(ann):
        if v.term_1.startswith("fever"):
            i = int(v.term_1.split()[1])
            right = "same" if i % 2 == 0 else "not_same"
            value = ("not_same" if right == "same" else "same") if wrong_checks else right
        else:
            value = "same"
        A.submit_rating(ann, v.position, value, elapsed_ms=elapsed)


def test_accuracy_rushed_and_pace_on_the_dashboard(checked):
    _rate_all(checked["ann"], wrong_checks=False, elapsed=4000)
    _rate_all(checked["bob"], wrong_checks=True, elapsed=900)
    table = quality_svc.study_rater_checks(open_study("checked")).set_index("annotator")
    assert table.loc["ann", "n_checks"] == 4 and table.loc["ann", "check_accuracy"] == 1.0
    assert table.loc["bob", "n_correct"] == 0 and bool(table.loc["bob", "check_warning"])
    assert not bool(table.loc["ann", "check_warning"])
    assert table.loc["bob", "rushed_rate"] == 1.0 and table.loc["ann", "rushed_rate"] == 0.0
    assert table.loc["ann", "median_seconds"] == 4.0
    assert table.loc["ann", "pairs_per_hour"] == pytest.approx(900.0)
    dash = study_dashboard(open_study("checked"), use_cache=False)
    shown = dash.rater_checks.set_index("annotator")
    assert shown.loc["bob", "check_accuracy"] == 0.0
    assert any(w.startswith("bob answered 0 of 4") for w in dash.check_warnings)
    q = dash.quality_table().set_index("annotator")
    assert {"check_accuracy", "rushed_rate", "median_seconds", "pairs_per_hour"} <= set(q.columns)
    html = html_report(open_study("checked"))  # medsim report shows the same table and the warning
    assert "Check pairs, rushed answers and pace" in html and "pairs_per_hour" in html
    assert "bob answered 0 of 4 check pairs" in html
    # A new threshold changes the flags, not the ratings.
    quality_svc.set_settings(open_study("checked"), rushed_ms=500)
    assert (
        quality_svc.study_rater_checks(open_study("checked"))
        .set_index("annotator")
        .loc["bob", "rushed_rate"]
        == 0
    )


def test_export_exclude_rushed_is_recorded_and_changes_the_verdicts(checked, tmp_path):
    _rate_all(checked["ann"], wrong_checks=False, elapsed=4000)
    _rate_all(checked["bob"], wrong_checks=True, elapsed=900)
    plain = export_gold(open_study("checked"), tmp_path / "plain.csv")
    assert (
        "exclude_rushed" not in plain.manifest["filters"]
        and "rushed_excluded" not in plain.manifest["counts"]
    )
    m = export_gold(open_study("checked"), tmp_path / "fast.csv", exclude_rushed=True)
    assert (
        m.manifest["filters"]["exclude_rushed"] is True
        and m.manifest["filters"]["rushed_ms"] == 1500
    )
    n_bob = len(current_ratings(open_study("checked")).query("annotator == 'bob'"))
    assert m.manifest["counts"]["rushed_excluded"] == n_bob
    gold = pd.read_csv(tmp_path / "fast.csv")
    assert "rater_bob" not in gold.columns
    assert m.manifest["counts"]["ratings"] == plain.manifest["counts"]["ratings"] - n_bob
    again = export_gold(open_study("checked"), tmp_path / "fast2.csv", exclude_rushed=True)
    assert again.manifest["sha256"] == m.manifest["sha256"]


def test_marking_check_pairs_later_checks_every_row_first(backend_url):
    create_study("later", _pairs().drop(columns=["check_answer"]), BINARY, ["ann"])
    bad = pd.DataFrame({"pair_id": ["m1", "nope", "m2"], "check_answer": ["same", "same", "x"]})
    with pytest.raises(InputError) as err:
        quality_svc.mark_check_pairs(open_study("later"), bad, file="checks.csv")
    text = "\n".join(err.value.lines())
    assert "row 3" in text and "nope" in text and "row 4" in text
    assert quality_svc.check_answers(open_study("later")) == {}
    dk = pd.DataFrame({"pair_id": ["m1"], "check_answer": ["dont_know"]})
    with pytest.raises(InputError, match="known answer"):
        quality_svc.mark_check_pairs(open_study("later"), dk)
    out = quality_svc.mark_check_pairs(
        open_study("later"), pd.DataFrame({"pair_id": ["m1", "m2"], "check_answer": ["same", ""]})
    )
    assert out.marked == 1 and quality_svc.check_answers(open_study("later")) == {"m1": "same"}


def test_settings_are_checked():
    with pytest.raises(Exception, match="between 0 and 1"):
        quality_svc.QualitySettings(check_min_accuracy=1.5)
    with pytest.raises(Exception, match="milliseconds"):
        quality_svc.QualitySettings(rushed_ms=-1)
    assert quality_svc.QualitySettings.of({}).rushed_ms == 1500


def test_cli_create_with_checks_and_settings(db_url, cli, tmp_path):
    pairs = tmp_path / "pairs.csv"
    _pairs().drop(columns=["check_answer"]).to_csv(pairs, index=False)
    checks = tmp_path / "checks.csv"
    pd.DataFrame({"pair_id": ["c0", "c1"], "check_answer": ["same", "not_same"]}).to_csv(
        checks, index=False
    )
    r = cli(
        "study", "create", "s", "--pairs", pairs, "--annotators", "ann,bob",
        "--checks", checks, "--check-rate", "0.05", "--check-min-accuracy", "0.8",
        "--rushed-ms", "2000", "--seed", "1",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    r = cli("study", "checks", "s", "--json")
    out = json.loads(r.stdout)
    assert out["checks"] == 2
    assert out["settings"] == {
        "rushed_ms": 2000,
        "check_min_accuracy": 0.8,
        "check_tolerance": 0.0,
    }
    r = cli("study", "checks", "s", "--no-min-accuracy", "--rushed-ms", "1000")
    assert r.exit_code == 0 and "no minimum accuracy" in r.stdout and "1000 ms" in r.stdout
    missing = tmp_path / "bad.csv"
    pd.DataFrame({"pair_id": ["zz"], "check_answer": ["same"]}).to_csv(missing, index=False)
    r = cli("study", "create", "t", "--pairs", pairs, "--annotators", "a", "--checks", missing)
    assert r.exit_code == 2 and "zz" in r.stderr and "row 2" in r.stderr


def test_a_disagreement_on_a_check_pair_brings_no_tiebreak(backend_url):
    """Two doctors disagree on a check pair others do not hold: a main pair would get a
    third rater; a check pair has a known answer and does not."""
    res = create_designed_study(
        "twoplusone",
        _pairs(),
        BINARY,
        ["ann", "bob", "cat", "dan"],
        DesignOptions(seed=5, per_item=2, tiebreak=True, check_rate=0.08),
    )
    ids = _ids(res)
    queues = {a: _queue(i) for a, i in ids.items()}
    held: dict[str, list[str]] = {}
    for a, views in queues.items():
        for v in views:
            if v.term_1.startswith("fever"):
                held.setdefault(v.term_1, []).append(a)
    term, (first, second) = next((t, h) for t, h in held.items() if len(h) == 2)
    totals = {a: A.queue_state(i).total for a, i in ids.items()}
    for who, value in ((first, "same"), (second, "not_same")):
        v = next(v for v in queues[who] if v.term_1 == term)
        A.submit_rating(ids[who], v.position, value)
    assert {a: A.queue_state(i).total for a, i in ids.items()} == totals
    # The same disagreement on a main pair of the two does bring a third rater.
    main = next(
        v.term_1
        for v in queues[first]
        if v.term_1.startswith("alpha") and v.term_1 in {w.term_1 for w in queues[second]}
    )
    for who, value in ((first, "same"), (second, "not_same")):
        v = next(v for v in queues[who] if v.term_1 == main)
        A.submit_rating(ids[who], v.position, value)
    after = {a: A.queue_state(i).total for a, i in ids.items()}
    assert sum(after.values()) == sum(totals.values()) + 1


def test_migration_0011_adds_an_empty_check_answer_and_goes_back(tmp_path):
    """A store at 0007 with pairs gets ``items.check_answer`` empty for every pair (no pair
    becomes a check pair by the upgrade); the downgrade removes the column, keeping the pairs."""
    import sqlalchemy as sa
    from alembic import command
    from alembic.config import Config

    from medsim_annot.storage.db import MIGRATIONS

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0007")
        conn.exec_driver_sql(
            "INSERT INTO studies (id, name, scale_json, guideline, config_json, created_at, "
            "ready) VALUES (1, 's', '{}', '', '{}', '2026-01-01', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO items (id, study_id, pair_id, position, term_1, term_2, dataset, "
            "difficulty, negative_strategy, concept_id_1, concept_id_2, meta_json) "
            "VALUES (1, 1, 'p', 0, 'a', 'b', '', '', '', '', '', '{}')"
        )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0011")
        assert conn.exec_driver_sql("SELECT pair_id, check_answer FROM items").all() == [
            ("p", None)
        ]
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0007")
        cols = [r[1] for r in conn.exec_driver_sql("PRAGMA table_info(items)").all()]
        assert "check_answer" not in cols
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM items").scalar() == 1
    engine.dispose()
