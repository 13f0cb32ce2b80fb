"""The practice round (issue 39, item 1): practice pairs served before the real queue with
feedback, stored apart, and a gate enforced on the server — through the services, the
ratings endpoint and the CLI. Bad practice input is refused naming file, row and column,
and nothing is stored."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from data_schemas import columns as C
from data_schemas.errors import InputError, OptionError
from data_schemas.limits import COMMENT_MAX_CHARS
from data_schemas.practice import agreement
from data_schemas.scales import BINARY, RELATEDNESS_0_3
from data_schemas.widget import RATINGS_PATH, RatingsResponse
from medsim_annot import ratings_api
from medsim_annot.errors import PracticeLocked, UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services import rating_queue
from medsim_annot.services.activity import activity
from medsim_annot.services.people import tokens
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.practice import gate
from medsim_annot.services.practice.report import practice_report
from medsim_annot.services.practice.setup import set_practice
from medsim_annot.services.studies import create_study, export_ratings, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine

REAL_SECRET = "ZZREALTERM"


def _pairs(n_real: int = 4, practice: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Real pairs (terms carry REAL_SECRET) then practice rows (answer, explanation)."""
    practice = practice or []
    rows = [
        {
            "pair_id": f"R{i}",
            "term_1": f"{REAL_SECRET} a{i}",
            "term_2": f"{REAL_SECRET} b{i}",
            "auto_label": str(i % 2),
            C.PRACTICE_ANSWER: "",
            C.EXPLANATION: "",
        }
        for i in range(n_real)
    ]
    rows += [
        {
            "pair_id": f"P{k}",
            "term_1": f"practice a{k}",
            "term_2": f"practice b{k}",
            "auto_label": "",
            C.PRACTICE_ANSWER: ans,
            C.EXPLANATION: why,
        }
        for k, (ans, why) in enumerate(practice)
    ]
    from data_schemas.pairs import validate_pairs

    return validate_pairs(pd.DataFrame(rows))


PRACTICE = [
    ("same", "Synonyms in notes."),
    ("not_same", "A finding, not a disease."),
    ("same", "Abbreviation."),
    ("not_same", "Different organs."),
]


@pytest.fixture
def study(backend_url):
    dispose_all()
    res = create_study(
        "prac",
        _pairs(4, PRACTICE),
        BINARY,
        ["doc", "other"],
        config={"practice": {"min_pairs": 4, "threshold": 0.75}},
        engine=get_engine(backend_url),
    )
    codes = {a["name"]: a["access_code"] for a in res["annotators"]}
    ids = {
        n: authenticate_annotator(c).annotator_id  # type: ignore[union-attr]
        for n, c in codes.items()
    }
    yield {"url": backend_url, "codes": codes, "ids": ids, "created": res}
    dispose_all()


def _answer_all(aid: int, values: list[str]):
    out = []
    for v in values:
        g = gate.gate(aid)
        assert g.next_pair is not None
        out.append(gate.answer(aid, g.next_pair.serial, v, elapsed_ms=900))
    return out


# --------------------------------------------------------------------------- services
def test_practice_rows_are_not_real_pairs(study):
    assert study["created"]["items"] == 4
    h = export_ratings(open_study("prac"))
    assert h.empty or not h["pair_id"].str.startswith("P").any()
    rep = practice_report(open_study("prac"))
    assert rep.pairs == 4 and rep.needed == 4 and rep.threshold == 0.75
    assert {a.annotator: a.state for a in rep.annotators} == {
        "doc": "practising",
        "other": "practising",
    }


def test_closed_gate_serves_and_stores_nothing_real(study):
    aid = study["ids"]["doc"]
    with pytest.raises(PracticeLocked):
        A.get_pair(aid, 0)
    with pytest.raises(PracticeLocked):
        A.serving_window(aid, 0, after=5)
    with pytest.raises(PracticeLocked):
        A.get_window(aid, 0, 5)
    with pytest.raises(PracticeLocked):
        A.submit_rating(aid, 0, "same")
    assert rating_history(open_study("prac")).empty
    # The widget can still start: scale, guideline and total, but no pair.
    setup = rating_queue.widget_setup(aid)
    assert setup.total == 4 and [o["value"] for o in setup.scale["options"]][0] == "same"


def test_feedback_then_more_practice_below_threshold_then_pass(study):
    aid = study["ids"]["doc"]
    # Serial 0..3 in file order; two wrong of four: 50% < 75%.
    results = _answer_all(aid, ["same", "same", "not_same", "not_same"])
    fb0, _ = results[0]
    assert (fb0.term_1, fb0.reference, fb0.explanation, fb0.exact) == (
        "practice a0",
        "same",
        "Synonyms in notes.",
        True,
    )
    fb1, g1 = results[1]
    assert fb1.reference == "not_same" and fb1.value == "same" and not fb1.exact
    assert fb1.explanation == "A finding, not a disease."
    _, g = results[-1]
    assert not g.open and g.answered == 4 and g.exact == 0.5
    with pytest.raises(PracticeLocked):
        A.get_pair(aid, 0)
    # More practice: the pairs come round again; the last 4 answers count.
    assert g.next_pair is not None and g.next_pair.term_1 == "practice a0"
    results = _answer_all(aid, ["same", "not_same"])
    assert not results[0][1].open and results[0][1].exact == 0.5
    _, g = results[-1]
    assert g.exact == 0.75 and g.open and g.state == "passed"
    assert A.get_pair(aid, 0).term_1.startswith(REAL_SECRET)
    assert A.submit_rating(aid, 0, "same").saved
    kinds = list(activity(study=open_study("prac"))["action"])
    assert "practice_passed" in kinds
    # Practice answers never reach the real ratings (exports, gold, agreement read these).
    assert len(rating_history(open_study("prac"))) == 1
    # The other doctor is still practising.
    with pytest.raises(PracticeLocked):
        A.get_pair(study["ids"]["other"], 0)


def test_resend_stores_once_and_out_of_turn_is_refused(study):
    aid = study["ids"]["doc"]
    fb, g = gate.answer(aid, 0, "same")
    again, g2 = gate.answer(aid, 0, "not_same")  # a resend of serial 0
    assert again.value == "same" and g2.answered == 1
    with pytest.raises(UsageProblem, match="before answer 1"):
        gate.answer(aid, 5, "same")
    with pytest.raises(UsageProblem, match="not a value"):
        gate.answer(aid, 1, "maybe")
    assert practice_report(open_study("prac")).annotators[0].answered == 1


def test_unlock_and_send_back_are_events(study):
    s = open_study("prac")
    aid = study["ids"]["other"]
    g = gate.unlock(s, "other", by="admin:lead", reason="trained in person")
    assert g.open and g.state == "unlocked"
    assert A.get_pair(aid, 0).position == 0
    with pytest.raises(UsageProblem, match="no annotator named"):
        gate.unlock(s, "nobody", by="admin:lead")
    with pytest.raises(UsageProblem, match="reason"):
        gate.send_back_to_practice(s, "other", by="admin:lead", reason=" ")
    g = gate.send_back_to_practice(s, "other", by="admin:lead", reason="drift on window 3")
    assert not g.open and g.round == 1 and g.answered == 0
    with pytest.raises(PracticeLocked):
        A.get_pair(aid, 0)
    log = activity(study=s)
    kinds = list(log["action"])
    assert "practice_unlocked" in kinds and "practice_sent_back" in kinds
    detail = json.loads(log.loc[log["action"] == "practice_sent_back", "detail"].iloc[0])
    assert detail == {"by": "admin:lead", "reason": "drift on window 3", "round": 1}


def test_agreement_exact_and_within_one():
    # Hand computation on the 0-3 scale: |2-3| = 1 is within one, |0-3| = 3 is not.
    assert agreement(RELATEDNESS_0_3, "3", 3) == (True, True)
    assert agreement(RELATEDNESS_0_3, "2", "3") == (False, True)
    assert agreement(RELATEDNESS_0_3, "1", "3") == (False, False)
    assert agreement(BINARY, "dont_know", "same") == (False, False)
    assert agreement(BINARY, "not_same", "same") == (False, False)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("answer", "why", "column", "text"),
    [
        ("4", "", C.PRACTICE_ANSWER, "not a value"),
        ("dont_know", "", C.PRACTICE_ANSWER, "no decision"),
        ("same", "x" * (COMMENT_MAX_CHARS + 1), C.EXPLANATION, "at most"),
    ],
)
def test_bad_practice_rows_are_refused_and_nothing_stored(db_url, answer, why, column, text):
    scale = BINARY if answer != "4" else RELATEDNESS_0_3
    practice = [("same" if scale is BINARY else "3", ""), (answer, why)]
    with pytest.raises(InputError) as err:
        create_study("bad", _pairs(2, practice), scale, ["doc"])
    p = err.value.problems[0]
    assert (p.row, p.column) == (5, column) and text in p.message  # header, 2 real, 2 practice
    with pytest.raises(UsageProblem):
        open_study("bad")


def test_bad_gate_settings_are_refused(study):
    s = open_study("prac")
    with pytest.raises(OptionError, match=r"practice_threshold"):
        set_practice(s, threshold=1.5)
    with pytest.raises(OptionError, match=r"practice_min_pairs"):
        set_practice(s, min_pairs=0)
    rep = practice_report(open_study("prac"))
    assert (rep.needed, rep.threshold) == (4, 0.75)


# --------------------------------------------------------------------------- endpoint
def _client() -> TestClient:
    return TestClient(Starlette(routes=ratings_api.routes()))


def _token(study, name="doc") -> str:
    ident = authenticate_annotator(study["codes"][name])
    assert ident is not None
    return tokens.mint_token(ident.annotator_id, ident.credential_version).token


def _post(c, tok, body):
    return c.post(
        RATINGS_PATH,
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {tok}"},
    )


def test_endpoint_serves_practice_and_nothing_real_until_the_gate_opens(study):
    c, tok = _client(), _token(study)
    pending = [{"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 900}]
    r = _post(c, tok, {"need": -1, "pending": pending})
    assert r.status_code == 200 and REAL_SECRET not in r.text
    out = RatingsResponse.model_validate_json(r.text)
    assert out.ack == 0 and out.window == [] and not out.resume
    assert out.practice is not None and not out.practice.open
    assert out.practice.pair is not None and out.practice.pair.term_1 == "practice a0"
    assert "Synonyms" not in r.text  # the explanation comes only after the answer
    assert rating_history(open_study("prac")).empty
    # A window asked for directly is not served either.
    out = RatingsResponse.model_validate_json(_post(c, tok, {"need": 0}).text)
    assert out.window == [] and out.practice is not None and not out.practice.open
    # Answer below the threshold: feedback each time, still no real pair.
    for serial, value in enumerate(["not_same", "same", "not_same", "not_same"]):
        body = {"practice": {"serial": serial, "value": value, "elapsed_ms": 900}}
        r = _post(c, tok, body)
        assert REAL_SECRET not in r.text
        out = RatingsResponse.model_validate_json(r.text)
        assert out.practice is not None and out.practice.feedback is not None
        fb = out.practice.feedback
        assert fb.reference == PRACTICE[serial][0] and fb.explanation == PRACTICE[serial][1]
    assert not out.practice.open and out.practice.exact == 0.25 and out.window == []
    # The admin unlocks by name: the same token now gets the real queue.
    gate.unlock(open_study("prac"), "doc", by="admin:lead", reason="checked by phone")
    out = RatingsResponse.model_validate_json(_post(c, tok, {"need": -1}).text)
    assert out.resume and out.start == 0 and len(out.window) == 4
    assert out.window[0].term_1.startswith(REAL_SECRET)
    out = RatingsResponse.model_validate_json(_post(c, tok, {"pending": pending}).text)
    assert out.ack == 1 and len(rating_history(open_study("prac"))) == 1


def test_endpoint_passing_answer_opens_the_real_queue_at_once(study):
    c, tok = _client(), _token(study)
    for serial, (value, _) in enumerate(PRACTICE):
        body = {"practice": {"serial": serial, "value": value, "elapsed_ms": 900}}
        out = RatingsResponse.model_validate_json(_post(c, tok, body).text)
    assert out.practice is not None and out.practice.open and out.practice.feedback
    assert out.resume and out.start == 0 and out.window[0].term_1.startswith(REAL_SECRET)


def test_endpoint_send_back_pauses_and_keeps_pending(study):
    c, tok = _client(), _token(study, "other")
    gate.unlock(open_study("prac"), "other", by="admin:lead")
    assert RatingsResponse.model_validate_json(_post(c, tok, {"need": -1}).text).window
    gate.send_back_to_practice(open_study("prac"), "other", by="admin:lead", reason="drift")
    pending = [{"seq": 1, "position": 1, "value": "same", "version": 0, "elapsed_ms": 900}]
    out = RatingsResponse.model_validate_json(_post(c, tok, {"pending": pending}).text)
    assert out.ack == 0 and out.practice is not None and not out.practice.open
    assert rating_history(open_study("prac")).empty


def test_study_without_practice_has_no_gate(backend_url):
    dispose_all()
    res = create_study("plain", _pairs(2), BINARY, ["doc"])
    aid = authenticate_annotator(res["annotators"][0]["access_code"]).annotator_id  # type: ignore[union-attr]
    assert A.get_pair(aid, 0).position == 0
    tok = tokens.mint_token(aid, 1).token
    out = RatingsResponse.model_validate_json(_post(_client(), tok, {"need": -1}).text)
    assert out.practice is None and out.window
    dispose_all()


# --------------------------------------------------------------------------- CLI
def test_cli_practice_file_report_unlock_send_back(db_url, cli, tmp_path):
    create_study("c", _pairs(3), RELATEDNESS_0_3, ["ana", "ben"])
    f = tmp_path / "practice.csv"
    pd.DataFrame(
        {
            "term_1": ["fever", "mi"],
            "term_2": ["pyrexia", "heart attack"],
            "practice_answer": ["3", "3"],
            "explanation": ["Synonyms.", "Abbreviation of the same disease."],
        }
    ).to_csv(f, index=False)
    r = cli("study", "practice", "c", f, "--min-pairs", "2", "--threshold", "0.5", "--json")
    assert r.exit_code == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["pairs"] == 2 and rep["needed"] == 2 and rep["threshold"] == 0.5
    assert rep["gate_measure"] == "exact" and rep["within_one_reported"]
    r = cli("study", "practice-unlock", "c", "ana", "--reason", "senior")
    assert r.exit_code == 0, r.stderr
    r = cli("study", "practice-report", "c", "--json")
    states = {a["annotator"]: a["state"] for a in json.loads(r.stdout)["annotators"]}
    assert states == {"ana": "unlocked", "ben": "practising"}
    r = cli("study", "practice-send-back", "c", "ana", "--reason", "drift")
    assert r.exit_code == 0, r.stderr
    r = cli("study", "practice-report", "c")
    assert "ana" in r.stdout and "practising" in r.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--threshold", "1.5"], "(--threshold)"),
        (["--min-pairs", "0"], "(--min-pairs)"),
    ],
)
def test_cli_refuses_bad_settings_naming_the_flag(db_url, cli, args, needle):
    create_study("c", _pairs(2, [("same", "")]), BINARY, ["ana"])
    r = cli("study", "practice", "c", *args)
    assert r.exit_code == 2 and needle in r.stderr
    assert json.loads(cli("study", "practice-report", "c", "--json").stdout)["threshold"] == 0.8


def test_cli_refuses_a_bad_practice_file_naming_file_row_column(db_url, cli, tmp_path):
    create_study("c", _pairs(2), BINARY, ["ana"])
    f = tmp_path / "bad.csv"
    pd.DataFrame(
        {
            "term_1": ["a", "b"],
            "term_2": ["c", "d"],
            "practice_answer": ["same", "maybe"],
            "explanation": ["", "x" * (COMMENT_MAX_CHARS + 5)],
        }
    ).to_csv(f, index=False)
    r = cli("study", "practice", "c", f)
    assert r.exit_code == 2
    assert "bad.csv" in r.stderr and "row 3" in r.stderr and "practice_answer" in r.stderr
    assert json.loads(cli("study", "practice-report", "c", "--json").stdout)["pairs"] == 0


def test_cli_create_splits_practice_rows_off_the_planned_queues(db_url, cli, tmp_path):
    f = tmp_path / "pairs.csv"
    frame = _pairs(6, PRACTICE).drop(columns="auto_label")
    frame.to_csv(f, index=False)
    r = cli(
        "study",
        "create",
        "d",
        "--pairs",
        f,
        "--annotators",
        "ana,ben",
        "--seed",
        "3",
        "--per-item",
        "1",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["items"] == 6
    rep = practice_report(open_study("d"))
    assert rep.pairs == len(PRACTICE) and rep.threshold == 0.8
    # The designed queues hold only real pairs (each rated by one of the two).
    svc_total = sum(
        rating_queue.resume_state(a).total
        for a in (
            authenticate_annotator(x["access_code"]).annotator_id  # type: ignore[union-attr]
            for x in json.loads(r.stdout)["annotators"]
        )
    )
    assert svc_total == 6
    bad = tmp_path / "bad.csv"
    frame.assign(**{C.PRACTICE_ANSWER: ["", "", "", "", "", "", "same", "often", "", ""]}).to_csv(
        bad, index=False
    )
    r = cli("study", "create", "e", "--pairs", bad, "--annotators", "ana", "--file-order")
    assert r.exit_code == 2 and "bad.csv" in r.stderr and "row 9" in r.stderr
    assert "practice_answer" in r.stderr
    with pytest.raises(UsageProblem):
        open_study("e")


_DECISIVE_0_3 = ["0", "1", "2", "3"]


@given(st.sampled_from(_DECISIVE_0_3), st.sampled_from(_DECISIVE_0_3))
def test_agreement_invariants(a, b):
    # Exact implies within one; both are symmetric in answer and reference; on a nominal
    # scale within one is exact.
    exact, within = agreement(RELATEDNESS_0_3, a, b)
    assert (not exact or within) and (exact, within) == agreement(RELATEDNESS_0_3, b, a)
    assert exact == (a == b) and within == (abs(int(a) - int(b)) <= 1)
    x, y = ("same" if a < "2" else "not_same"), ("same" if b < "2" else "not_same")
    assert agreement(BINARY, x, y)[0] == agreement(BINARY, x, y)[1] == (x == y)


def test_sent_back_between_check_and_save_keeps_the_entries(study):
    # The race the endpoint can meet: the gate closes after the token check. The save stops
    # at the first entry and leaves it (and the rest) unacknowledged, nothing stored.
    from data_schemas.widget import RatingEntry

    aid = study["ids"]["other"]
    s = open_study("prac")
    gate.unlock(s, "other", by="admin:lead")
    entries = [
        RatingEntry(seq=1, position=0, value="same", version=0, elapsed_ms=900),
        RatingEntry(seq=2, position=1, value="same", version=0, elapsed_ms=900),
    ]
    assert rating_queue.commit_pending(aid, entries[:1]).ack == 1
    gate.send_back_to_practice(s, "other", by="admin:lead", reason="drift")
    out = rating_queue.commit_pending(aid, entries, acked=1)
    assert out.locked and out.ack == 1 and out.refused == []
    assert len(rating_history(s)) == 1
