"""An annotator added after the study was created (issue 33, item 5): ``medsim annotator
add`` (and the Setup page, which calls the same service) builds the queue by the study's
design, as at creation — shuffled with the recorded seed unless the study was created with
--file-order, with the study's calibration, duplicate and check slots and, in a k-of-n
design, its share k/n of the main pairs (the least-rated first). Before the fix the queue was
every pair in file order."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import select

from medsim_annot.design.added import added_queue
from medsim_annot.services.people import annotators as asvc
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import get_engine, session_scope
from medsim_annot.storage.models import Annotator, Assignment, Item

N_MAIN = 24
N_CHECK = 2


def _pairs_file(tmp_path):
    rows = [
        {
            "pair_id": f"p{i:02d}",
            "term_1": f"alpha {i}",
            "term_2": f"beta {i}",
            "auto_label": i % 2,
            "check_answer": "",
        }
        for i in range(N_MAIN)
    ] + [
        {
            "pair_id": f"c{i}",
            "term_1": f"gamma {i}",
            "term_2": f"delta {i}",
            "auto_label": 1,
            "check_answer": "same",
        }
        for i in range(N_CHECK)
    ]
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _queues(study: str) -> dict[str, list[tuple[str, str]]]:
    """Every annotator's queue as (pair_id, kind) in position order."""
    with session_scope(get_engine()) as s:
        rows = s.execute(
            select(Annotator.name, Item.pair_id, Assignment.kind)
            .join(Assignment, Assignment.annotator_id == Annotator.id)
            .join(Item, Item.id == Assignment.item_id)
            .where(Item.study_id == open_study(study).id)
            .order_by(Annotator.name, Assignment.position)
        ).all()
    out: dict[str, list[tuple[str, str]]] = {}
    for name, pid, kind in rows:
        out.setdefault(name, []).append((pid, kind))
    return out


def test_added_annotator_follows_the_k_of_n_design(backend_url, cli, tmp_path):
    r = cli(
        "study", "create", "kn", "--pairs", _pairs_file(tmp_path), "--annotators", "a,b,c",
        "--seed", "11", "--per-item", "2", "--calibration", "3", "--duplicates", "0.2",
        "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    r = cli("annotator", "add", "kn", "late")
    assert r.exit_code == 0, r.stderr
    queues = _queues("kn")
    late, a = queues["late"], queues["a"]
    kinds = pd.Series([k for _, k in late]).value_counts().to_dict()
    # The study's calibration pairs, every one of them.
    calib = {p for p, k in a if k == "calibration"}
    assert len(calib) == 3 and {p for p, k in late if k == "calibration"} == calib
    # Its share k/n = 2/3 of the 21 main pairs (24 - 3 calibration), least rated first: in
    # a balanced 2-of-3 design every main pair has two raters, so any 14 of them.
    main = [p for p, k in late if k == "main"]
    assert len(main) == round(21 * 2 / 3) == 14 and len(set(main)) == 14
    assert not set(main) & calib
    # Check slots (both check pairs once, as the others) and duplicates as at creation.
    assert kinds.get("check") == N_CHECK == sum(k == "check" for _, k in a)
    assert kinds.get("duplicate") == round(0.2 * (3 + 14 + N_CHECK))
    # Shuffled, not file order.
    assert main != sorted(main)
    # The seed and how the queue was built are recorded, and said.
    facts = asvc.added_queue_facts(open_study("kn"), "late")
    assert facts["seed"] == 11 and facts["stream"] == 3 and facts["order"] == "shuffled"
    assert facts["main"] == 14 and facts["main_pairs"] == 21
    assert "shuffled with seed 11 (stream 3)" in r.stdout
    assert "k/n = 2/3" in r.stdout and "a rating beyond its 2" in r.stdout
    config = open_study("kn").config
    assert config["added_annotators"][0]["name"] == "late"
    assert (config["per_item"], config["annotators"]) == (2, 3)  # the design as created


def test_added_annotator_of_an_all_rate_all_study_is_shuffled_with_the_seed(db_url, cli, tmp_path):
    r = cli(
        "study", "create", "all", "--pairs", _pairs_file(tmp_path), "--annotators", "a,b",
        "--seed", "5",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert cli("annotator", "add", "all", "late").exit_code == 0
    assert cli("annotator", "add", "all", "later").exit_code == 0
    queues = _queues("all")
    late = [p for p, k in queues["late"] if k == "main"]
    later = [p for p, k in queues["later"] if k == "main"]
    assert sorted(late) == sorted(f"p{i:02d}" for i in range(N_MAIN))
    assert late != sorted(late) and later != late  # each on a stream of its own
    # The same design code, re-derived from the recorded facts, gives the same queue.
    study = open_study("all")
    facts = asvc.added_queue_facts(study, "late")
    again = added_queue(N_MAIN + N_CHECK, study.config, stream=facts["stream"], seed=5,
                        checks=[N_MAIN, N_MAIN + 1], planned=[2] * (N_MAIN + N_CHECK))  # fmt: skip
    items = sorted({p for p, _ in queues["a"]})  # file order = p00..p23, c0, c1
    order = [f"p{i:02d}" for i in range(N_MAIN)] + [f"c{i}" for i in range(N_CHECK)]
    assert set(items) == set(order)
    assert [order[s.item] for s in again.slots] == [p for p, _ in queues["late"]]


def test_added_annotator_of_a_file_order_study_keeps_file_order(db_url, cli, tmp_path):
    r = cli(
        "study", "create", "fo", "--pairs", _pairs_file(tmp_path), "--annotators", "a",
        "--file-order",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    r = cli("annotator", "add", "fo", "late")
    assert r.exit_code == 0, r.stderr
    queues = _queues("fo")
    assert queues["late"] == queues["a"]
    assert "in file order" in r.stdout
    assert asvc.added_queue_facts(open_study("fo"), "late")["order"] == "file"
