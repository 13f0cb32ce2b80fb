"""Adjudication on SQLite and PostgreSQL: adjudicators sign in like annotators but apart
from them; the queue lists the pairs by need; decisions are append-only, versioned (two
adjudicators racing on one pair: one wins, the other is shown the current decision) and
recorded in the event log; every gold row names its label source, an adjudicated row its
adjudicator and event; a re-export is byte-identical; annotators' views carry none of it."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter

import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas.errors import InputError
from data_schemas.gold import ADJUDICATION_NEEDS, LABEL_SOURCES, manifest_path
from data_schemas.scales import BINARY
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services import dashboard
from medsim_annot.services.adjudication import board as adj_board
from medsim_annot.services.adjudication import decisions as adj_dec
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.gold import export as gold_export
from medsim_annot.services.gold import table as gold_tables
from medsim_annot.services.people import adjudicators as adj_people
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.people.signin import sign_in_with_code
from medsim_annot.services.people.sso import sso_role
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats import aggregate
from medsim_annot.storage import dispose_all, get_engine
from tests.conftest import ROOT

PAIRS = 18
DOCTORS = ("ann", "bob", "cyd")


def _opinion(doctor: str, i: int) -> str:
    """Each doctor errs on a different third; cyd does not know every fourth pair."""
    if doctor == "cyd" and i % 4 == 0:
        return "dont_know"
    truth = "same" if i % 2 else "not_same"
    wrong = {"ann": i % 3 == 0, "bob": i % 3 == 1, "cyd": i % 3 == 2}[doctor]
    return ("not_same" if truth == "same" else "same") if wrong else truth


def _index(view) -> int:
    term = view.term_1 if view.term_1.startswith("a") else view.term_2
    return int(term[1:])


def simulate_two_plus_one(study: str = "two-plus-one") -> dict[str, int]:
    """A 2 + 1 study rated to the end by the simulated doctors; annotator ids by name."""
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(PAIRS)],
            "term_1": [f"a{i}" for i in range(PAIRS)],
            "term_2": [f"b{i}" for i in range(PAIRS)],
            # the automatic label is wrong on every fifth pair
            "auto_label": [(i % 2) if i % 5 else 1 - i % 2 for i in range(PAIRS)],
        }
    )
    res = create_designed_study(
        study, pairs, BINARY, list(DOCTORS), DesignOptions(per_item=2, tiebreak=True, seed=3)
    )
    ids = {a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators}
    while True:
        moved = False
        for name in DOCTORS:
            state = A.queue_state(ids[name])
            if state.complete:
                continue
            view = A.get_pair(ids[name], state.first_unrated)
            A.submit_rating(
                ids[name],
                view.position,
                _opinion(name, _index(view)),
                expected_version=view.version,
                elapsed_ms=2500,
            )
            moved = True
        if not moved:
            return ids


@pytest.fixture
def study(backend_url):
    dispose_all()
    ids = simulate_two_plus_one()
    yield backend_url, ids
    dispose_all()


def _export(tmp_path, name: str, **kw) -> tuple[pd.DataFrame, dict, bytes]:
    out = tmp_path / name
    result = gold_export.export_gold(open_study("two-plus-one"), out, **kw)
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    return frame, result.manifest, out.read_bytes()


def test_queue_decisions_and_provenance(study, tmp_path):
    url, ids = study
    b = adj_board.board(open_study("two-plus-one"))
    # Every queued pair has a reason; the strongest needs come first.
    assert len(b.queue) > 0
    weights = [max(adj_board.NEED_WEIGHT[n] for n in needs) for needs in b.queue["needs"]]
    assert weights == sorted(weights, reverse=True)
    needs = Counter(n for ns in b.queue["needs"] for n in ns)
    assert needs["tiebreak_disagrees"] > 0  # a dont_know third rating leaves a 1-1 tie
    assert needs["against_auto_label"] > 0
    tb = b.queue[b.queue["needs"].map(lambda n: "tiebreak_disagrees" in n)]
    only_tb = adj_board.filter_queue(b.queue, needs=["tiebreak_disagrees"])
    assert list(only_tb["pair_id"]) == list(tb["pair_id"])

    # What the adjudicator sees of a pair: every rater, their time, the automatic label.
    pid = str(tb.iloc[0]["pair_id"])
    view = b.pair(pid)
    assert len(view["raters"]) == 3 and view["auto_label"] in (0, 1)
    assert {r["seconds"] for r in view["raters"]} == {2.5}
    assert "dont_know" not in view["options"]

    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Senior")
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Other")
    d1 = adj_dec.decide(
        open_study("two-plus-one"),
        pid,
        label="same",
        reason="ambiguous_term",
        adjudicator="Dr Senior",
        seen_version=0,
        flag_guideline=True,
    )
    assert d1.version == 1
    # A second adjudicator who also saw version 0 is refused, shown the current decision.
    with pytest.raises(adj_dec.StaleDecision) as exc:
        adj_dec.decide(
            open_study("two-plus-one"),
            pid,
            label="not_same",
            reason="rater_error",
            adjudicator="Dr Other",
            seen_version=0,
        )
    assert exc.value.current["label"] == "same"
    # Changing a decision appends a revision; the first stays in the history.
    d2 = adj_dec.decide(
        open_study("two-plus-one"),
        pid,
        label="not_same",
        reason="other",
        reason_text="the guideline says so",
        adjudicator="Dr Other",
        seen_version=1,
    )
    assert d2.version == 2
    hist = adj_dec.decisions_frame(open_study("two-plus-one"))
    assert hist["revision"].tolist() == [1, 2]
    assert hist["adjudicator"].tolist() == ["Dr Senior", "Dr Other"]
    for bad in (
        {"label": "dont_know", "reason": "rater_error"},
        {"label": "maybe", "reason": "rater_error"},
        {"label": "same", "reason": "mood"},
        {"label": "same", "reason": "other"},
    ):
        with pytest.raises(UsageProblem):
            adj_dec.decide(
                open_study("two-plus-one"), pid, adjudicator="Dr Other", seen_version=2, **bad
            )
    assert len(adj_dec.decisions_frame(open_study("two-plus-one"))) == 2

    # Decisions are history: the database refuses to change or delete one.
    with get_engine(url).connect() as conn:
        for sql in ("UPDATE adjudications SET label = 'same'", "DELETE FROM adjudications"):
            with pytest.raises(sa.exc.DBAPIError), conn.begin():
                conn.exec_driver_sql(sql)
        events = dict(
            conn.exec_driver_sql(
                "SELECT id, actor FROM events WHERE kind = 'pair_adjudicated'"
            ).all()
        )
    assert events == {d1.event_id: "adjudicator:Dr Senior", d2.event_id: "adjudicator:Dr Other"}

    frame, manifest, first = _export(tmp_path, "gold.csv")
    again = _export(tmp_path, "gold2.csv")[2]
    assert first == again  # byte-identical re-export
    counts = manifest["counts"]["label_source"]
    assert list(counts) == list(LABEL_SOURCES)
    assert sum(counts.values()) == len(frame) == PAIRS
    assert Counter(frame["label_source"]) == {k: v for k, v in counts.items() if v}
    assert counts["adjudicated"] == 1 and counts["tiebreak"] > 0
    row = frame[frame["pair_id"] == pid].iloc[0]
    assert (row["label"], row["label_source"], row["adjudicator"]) == (
        "not_same",
        "adjudicated",
        "Dr Other",
    )
    assert (row["adjudication_reason"], row["label_event_id"]) == ("other", str(d2.event_id))
    assert row["majority"] == ""  # the raters' own verdict is unchanged
    other = frame[frame["label_source"] != "adjudicated"]
    assert (other[["adjudicator", "adjudication_reason", "label_event_id"]] == "").all().all()
    unres = frame[frame["label_source"] == "unresolved"]
    assert (unres["label"] == "").all() and (unres["majority"] == "").all()
    assert manifest["adjudication"]["decisions"] == 2
    assert manifest["adjudication"]["audit_label"] == "majority"
    on_disk = json.loads(manifest_path(tmp_path / "gold.csv").read_text())
    assert on_disk["counts"]["label_source"] == counts

    # The audit may use the adjudicated label (auto_label of p<i> is i % 2); recorded.
    audited, m2, _ = _export(tmp_path, "gold-adj.csv", audit_label="adjudicated")
    arow = audited[audited["pair_id"] == pid].iloc[0]
    truth = "true" if (arow["auto_label"] == "0") else "false"
    assert arow["verified"] == truth
    assert m2["adjudication"]["audit_label"] == "adjudicated"

    # The dashboard's figures.
    s = adj_board.summary(open_study("two-plus-one"))
    assert s.progress.decided == 1 and s.progress.flagged == 0
    assert s.reasons.set_index("reason")["decisions"].to_dict()["other"] == 1
    assert set(s.raters["annotator"]) <= set(DOCTORS)
    assert (s.raters["same"] <= s.raters["pairs"]).all()


def test_hf_export_counts_sources(study, tmp_path):
    b = adj_board.board(open_study("two-plus-one"))
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Senior")
    pid = str(b.queue.iloc[0]["pair_id"])
    adj_dec.decide(
        open_study("two-plus-one"),
        pid,
        label="same",
        reason="rater_error",
        adjudicator="Dr Senior",
        seen_version=0,
    )
    outs = []
    for name in ("hf1", "hf2"):
        gold_export.export_gold(open_study("two-plus-one"), tmp_path / name, "hf")
        outs.append({p.name: p.read_bytes() for p in (tmp_path / name).rglob("*") if p.is_file()})
    assert outs[0] == outs[1]
    card = outs[0]["README.md"].decode()
    assert "## Labels and their provenance" in card and "| adjudicated |" in card
    meta = json.loads(outs[0]["croissant.json"])
    sets = {r["@id"]: r for r in meta["recordSet"]}
    rows = {
        d["label_sources/label_source"]: d["label_sources/rows"]
        for d in sets["label_sources"]["data"]
    }
    assert sum(rows.values()) == PAIRS and rows["adjudicated"] == 1
    fields = {f["name"]: f for f in sets["train"]["field"]}
    assert "description" in fields["label_event_id"]
    manifest = json.loads(outs[0]["manifest.json"])
    assert manifest["counts"]["label_source"] == rows


def test_decisions_file_all_or_none(study, tmp_path):
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Senior")
    q = adj_board.board(open_study("two-plus-one")).queue
    first, second = str(q.iloc[0]["pair_id"]), str(q.iloc[1]["pair_id"])
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "pair_id,label,reason,reason_text\n"
        f"{first},same,rater_error,\n"
        "nope,same,rater_error,\n"
        f"{second},maybe,other,\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as exc:
        adj_dec.decide_from_file(open_study("two-plus-one"), bad, adjudicator="Dr Senior")
    where = [(p.row, p.column) for p in exc.value.problems]
    assert where == [(3, "pair_id"), (4, "label")]
    assert adj_dec.decisions_frame(open_study("two-plus-one")).empty  # nothing half-written
    good = tmp_path / "good.tsv"
    good.write_text(
        "pair_id\tlabel\treason\tflag_guideline\n"
        f"{first}\tsame\tguideline_gap\ttrue\n{second}\tnot_same\tauto_label_wrong\tfalse\n",
        encoding="utf-8",
    )
    out = adj_dec.decide_from_file(open_study("two-plus-one"), good, adjudicator="Dr Senior")
    assert [d.version for d in out] == [1, 1]
    # The same file again: decided on the versions it finds now, so it appends revisions.
    stale = tmp_path / "stale.csv"
    stale.write_text(f"pair_id,label,reason,version\n{first},same,rater_error,0\n")
    with pytest.raises(InputError) as exc2:
        adj_dec.decide_from_file(open_study("two-plus-one"), stale, adjudicator="Dr Senior")
    assert exc2.value.problems[0].row == 2
    assert len(adj_dec.decisions_frame(open_study("two-plus-one"))) == 2
    assert adj_board.summary(open_study("two-plus-one")).progress.flagged == 1


def test_adjudicator_sign_in_and_blinding(study):
    url, ids = study
    out = adj_people.add_adjudicator(
        open_study("two-plus-one"), "Dr Senior", sso_identity="Senior@Example.org"
    )
    ident = sign_in_with_code(out.access_code, client="t")
    assert isinstance(ident, adj_people.AdjudicatorIdentity) and ident.name == "Dr Senior"
    adj_people.check_session(ident)
    outcome = sso_role({"email": "senior@example.org", "email_verified": True, "sub": "x"})
    assert outcome.role == "adjudicator" and outcome.adjudicators[0].name == "Dr Senior"
    adj_people.issue_adjudicator_code(open_study("two-plus-one"), "Dr Senior")
    with pytest.raises(SessionEnded):
        adj_people.check_session(ident)  # a new code ends sessions opened with the old one
    assert sign_in_with_code(out.access_code, client="t") is None
    adj_people.revoke_adjudicator(open_study("two-plus-one"), "Dr Senior")
    assert sso_role({"email": "senior@example.org"}).role == "refused"
    # An annotator's view of a decided pair carries no adjudication data.
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr K")
    pid = str(adj_board.board(open_study("two-plus-one")).queue.iloc[0]["pair_id"])
    adj_dec.decide(
        open_study("two-plus-one"),
        pid,
        label="same",
        reason="rater_error",
        adjudicator="Dr K",
        seen_version=0,
    )
    for aid in ids.values():
        state = A.queue_state(aid)
        for pos in range(state.total):
            view = A.get_pair(aid, pos)
            text = json.dumps(dataclasses.asdict(view), default=str)
            for word in ("Dr K", "rater_error", "adjudicat", "label_source", "auto_label"):
                assert word not in text


def test_ehr_rel_a_adjudicated_from_a_file_by_the_cli(db_url, ehr_rel_a, tmp_path, cli):
    """EHR-RelA (5 raters, 0-3 scale): the CLI makes an adjudicator, lists the queue and
    stores scripted decisions; the gold export's label sources add up to the rows, every
    adjudicated row names its adjudicator and event, and a re-export is byte-identical."""
    from medsim_annot.services.studies import import_ehr_rel

    import_ehr_rel(ehr_rel_a, "ehr-a")
    r = cli("adjudicator", "add", "ehr-a", "Dr Senior")
    assert r.exit_code == 0, r.stderr
    r = cli("adjudicate", "queue", "ehr-a", "--json")
    assert r.exit_code == 0, r.stderr
    queue = json.loads(r.stdout)
    assert queue and all(q["needs"] for q in queue)
    assert {n for q in queue for n in q["needs"]} <= set(ADJUDICATION_NEEDS)
    decisions = tmp_path / "decisions.csv"
    pd.DataFrame(
        {
            "pair_id": [q["pair_id"] for q in queue],
            "label": [str(i % 4) for i in range(len(queue))],
            "reason": ["ambiguous_term"] * len(queue),
            "flag_guideline": ["true"] + ["false"] * (len(queue) - 1),
        }
    ).to_csv(decisions, index=False)
    r = cli("adjudicate", "file", "ehr-a", str(decisions), "--as", "Dr Senior")
    assert r.exit_code == 0, r.stderr
    outs = []
    for name in ("a.csv", "b.csv"):
        r = cli("export", "gold", "ehr-a", "--out", str(tmp_path / name))
        assert r.exit_code == 0, r.stderr
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]
    frame = pd.read_csv(tmp_path / "a.csv", dtype=str, keep_default_na=False)
    manifest = json.loads(manifest_path(tmp_path / "a.csv").read_text())
    counts = manifest["counts"]["label_source"]
    assert sum(counts.values()) == len(frame) == 111
    assert counts["adjudicated"] == len(queue)
    assert counts["unresolved"] == 0  # every pair without a majority was decided
    done = frame[frame["label_source"] == "adjudicated"]
    assert (done["adjudicator"] == "Dr Senior").all()
    assert done["label_event_id"].str.fullmatch(r"\d+").all()
    assert done["label_event_id"].is_unique
    with get_engine().connect() as conn:
        kinds = dict(conn.exec_driver_sql("SELECT id, kind FROM events").all())
    assert {kinds[int(e)] for e in done["label_event_id"]} == {"pair_adjudicated"}
    r = cli("adjudicate", "queue", "ehr-a")
    assert f"{len(queue)} decided, 1 flagged" in r.stdout


@settings(max_examples=60, deadline=None)
@given(
    votes=st.lists(
        st.lists(st.sampled_from(["same", "not_same", "dont_know"]), min_size=0, max_size=4),
        min_size=1,
        max_size=12,
    ),
    decided=st.sets(st.integers(min_value=0, max_value=11)),
    tiebreak=st.sets(st.integers(min_value=0, max_value=11)),
)
def test_provenance_properties(votes, decided, tiebreak):
    """Whatever the ratings and decisions: one source per row, the counts add up to the rows,
    adjudicated rows are exactly the decided pairs and name adjudicator and event, and the
    raters' columns, majority and flags are unchanged by the decisions."""
    from data_schemas.gold import label_source_counts

    n = len(votes)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": ["x"] * n,
            "term_2": ["y"] * n,
            "auto_label": [i % 2 for i in range(n)],
        }
    )
    cur = pd.DataFrame(
        [
            {"pair_id": f"p{i}", "annotator": f"r{j}", "rating": v}
            for i, vs in enumerate(votes)
            for j, v in enumerate(vs)
        ],
        columns=["pair_id", "annotator", "rating"],
    )
    base = gold_tables.gold_table(pairs, cur, BINARY)
    before = base.table.copy()
    ids = [f"p{i}" for i in sorted(decided) if i < n]
    dec = pd.DataFrame(
        {
            "pair_id": ids,
            "label": ["same"] * len(ids),
            "adjudicator": ["J"] * len(ids),
            "reason": ["rater_error"] * len(ids),
            "event_id": list(range(100, 100 + len(ids))),
        }
    )
    gold_tables.add_provenance(base, dec, tiebreak_pairs={f"p{i}" for i in tiebreak})
    t = base.table
    counts = label_source_counts(t["label_source"])
    assert sum(counts.values()) == n
    adjudicated = t[t["label_source"] == "adjudicated"]
    assert sorted(adjudicated["pair_id"]) == sorted(ids)
    assert adjudicated["adjudicator"].eq("J").all()
    assert adjudicated["label_event_id"].notna().all()
    rest = t[t["label_source"] != "adjudicated"]
    assert rest["label_event_id"].isna().all() and rest["adjudicator"].isna().all()
    assert (rest["label_source"] == "unresolved").eq(rest["majority"].isna()).all()
    pd.testing.assert_frame_equal(t[before.columns], before)


def test_two_adjudicators_racing_on_one_pair(study):
    """Both saw version 0 and save at the same instant: exactly one decision is stored, the
    other adjudicator is refused with the current decision."""
    import threading

    adj_people.add_adjudicator(open_study("two-plus-one"), "J1")
    adj_people.add_adjudicator(open_study("two-plus-one"), "J2")
    pid = str(adj_board.board(open_study("two-plus-one")).queue.iloc[0]["pair_id"])
    for round_ in range(3):
        barrier = threading.Barrier(2)
        results: dict[str, object] = {}

        def go(
            name: str,
            label: str,
            barrier: threading.Barrier = barrier,
            results: dict = results,
            version: int = round_,
        ) -> None:
            barrier.wait()
            try:
                results[name] = adj_dec.decide(
                    open_study("two-plus-one"),
                    pid,
                    label=label,
                    reason="rater_error",
                    adjudicator=name,
                    seen_version=version,
                )
            except adj_dec.StaleDecision as exc:
                results[name] = exc

        threads = [
            threading.Thread(target=go, args=("J1", "same")),
            threading.Thread(target=go, args=("J2", "not_same")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        won = [r for r in results.values() if isinstance(r, adj_dec.Decision)]
        lost = [r for r in results.values() if isinstance(r, adj_dec.StaleDecision)]
        assert len(won) == 1 and len(lost) == 1, results
        assert won[0].version == round_ + 1
    hist = adj_dec.decisions_frame(open_study("two-plus-one"))
    assert hist["revision"].tolist() == [1, 2, 3]


def _fresh_board(study: str, refit: bool = True) -> adj_board.Board:
    """The board rebuilt from nothing: no kept board, no cached dashboard. With ``refit``
    False the cached dashboard (its Dawid–Skene fit, which depends on the ratings only) is
    kept: the board is still rebuilt from it and every stored decision read from the
    start, the part a decision changes, without fitting the model again."""
    adj_board.BOARDS.clear()
    if refit:
        dashboard.clear_cache()
    return adj_board.board(open_study(study))


def _same_board(got: adj_board.Board, want: adj_board.Board) -> None:
    pd.testing.assert_frame_equal(got.queue, want.queue)
    pd.testing.assert_frame_equal(got.history, want.history)
    assert got.decisions_version == want.decisions_version
    assert set(got.queue.loc[got.queue["decided"], "pair_id"]) == set(
        want.queue.loc[want.queue["decided"], "pair_id"]
    )
    assert adj_board.progress(got) == adj_board.progress(want)


DECIDE_ELSEWHERE = """
import sys
from medsim_annot.services.adjudication import decisions
from medsim_annot.services.study_handle import open_study
for pair_id, seen in zip(sys.argv[1::2], sys.argv[2::2]):
    decisions.decide(open_study("two-plus-one"), pair_id, label="not_same",
                     reason="ambiguous_term", adjudicator="Dr Other", seen_version=int(seen),
                     flag_guideline=True)
"""


def test_board_is_kept_and_a_decision_updates_it(study):
    """Bug 2 (issue 32): after a decision the kept board equals a board rebuilt from
    nothing (same needs, order, decided set); a decision stored by another process is seen
    on the next call; a decision committed below the highest id read makes a full re-read.
    No step changes a rating, so the board after the first decision is compared with one
    rebuilt from the cached dashboard's fit and every stored decision (``refit=False``: the
    part a decision changes); the last comparison refits from nothing, so a kept board or
    dashboard changed in place would still show."""
    url, _ids = study
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Senior")
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Other")
    b0 = _fresh_board("two-plus-one")
    assert adj_board.board(open_study("two-plus-one")) is b0  # nothing changed: the kept board
    first, second = (str(p) for p in b0.queue["pair_id"][:2])
    adj_dec.decide(
        open_study("two-plus-one"),
        first,
        label="same",
        reason="rater_error",
        adjudicator="Dr Senior",
        seen_version=0,
    )
    b1 = adj_board.board(open_study("two-plus-one"))
    assert b1 is not b0 and not b0.queue["decided"].any()  # a board handed out never changes
    assert b1.queue.set_index("pair_id").at[first, "decided"]
    assert len(adj_board.filter_queue(b1.queue)) == len(b0.queue) - 1
    _same_board(b1, _fresh_board("two-plus-one", refit=False))
    # Another process (its own interpreter, no shared cache): a new revision and a new pair.
    subprocess.run(
        [sys.executable, "-c", DECIDE_ELSEWHERE, first, "1", second, "0"],
        cwd=ROOT,
        env={**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=300,
    )
    b2 = adj_board.board(open_study("two-plus-one"))
    row = b2.queue.set_index("pair_id")
    assert (row.at[first, "label"], row.at[first, "version"]) == ("not_same", 2)
    assert row.at[second, "decided"] and row.at[second, "flag_guideline"]
    assert b2.pair(first)["decision"]["adjudicator"] == "Dr Other"
    _same_board(b2, _fresh_board("two-plus-one"))  # refitted: nothing kept was changed
    # A board that missed a decision below its highest id (concurrent commits) reads all.
    kept = adj_board.board(open_study("two-plus-one"))
    short = dataclasses.replace(
        kept, decisions_version=(kept.decisions_version[0] - 1, kept.decisions_version[1])
    )
    again = adj_board._with_decisions(short, get_engine(), open_study("two-plus-one").id)
    _same_board(again, kept)


def test_board_on_a_cache_hit_does_not_refit(study, monkeypatch):
    """Bug 2 (issue 32): the board takes the dashboard's one Dawid–Skene fit; a cache hit,
    a decision and the dashboard's own model section fit nothing again."""
    fits = []
    real = aggregate.model_gold

    def counted(*args, **kw):
        fits.append(args[1] if len(args) > 1 else kw.get("method"))
        return real(*args, **kw)

    monkeypatch.setattr(aggregate, "model_gold", counted)
    adj_board.BOARDS.clear()
    dashboard.clear_cache()
    b = adj_board.board(open_study("two-plus-one"))
    assert b.model == "dawid-skene" and fits == ["dawid-skene"]
    adj_board.board(open_study("two-plus-one"))
    adj_board.summary(open_study("two-plus-one"))
    adj_people.add_adjudicator(open_study("two-plus-one"), "Dr Senior")
    adj_dec.decide(
        open_study("two-plus-one"),
        str(b.queue.iloc[0]["pair_id"]),
        label="same",
        reason="rater_error",
        adjudicator="Dr Senior",
        seen_version=0,
    )
    adj_board.board(open_study("two-plus-one"))
    dashboard.study_dashboard(open_study("two-plus-one")).model_quality("dawid-skene")
    assert fits == ["dawid-skene"]
