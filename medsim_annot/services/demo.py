"""The demo: two small studies of everyday clinical terms (the project's own, not SNOMED
text) with three demo doctors each and simulated ratings for most of their queues, so that
every dashboard table has something to show and a demo doctor still has pairs to rate.
"""

from __future__ import annotations

import random
import secrets
from pathlib import Path

import pandas as pd

from data_schemas import columns as C
from data_schemas.pairs import validate_pairs
from data_schemas.scales import BINARY, RELATEDNESS_0_3
from medsim_annot.io import read_table
from medsim_annot.services import studies as svc
from medsim_annot.services.people.admins import ENV_ADMIN, admin_password_configured, set_password
from medsim_annot.services.study_handle import Study, open_study
from medsim_annot.storage import get_engine, session_scope, utcnow
from medsim_annot.storage import studies as store

DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"
BINARY_STUDY = "demo-binary"
RELATEDNESS_STUDY = "demo-relatedness"
DOCTORS = ["dr_ahmed", "dr_baker", "dr_chen"]
LEFT_TO_RATE = {BINARY_STUDY: 20, RELATEDNESS_STUDY: 10}


def demo_pairs() -> pd.DataFrame:
    """The 120-pair binary demo set (auto_label, dataset, difficulty, negative_strategy)."""
    path = DEMO_DIR / "demo_pairs.csv"
    return validate_pairs(read_table(path), str(path))


def demo_relatedness_pairs() -> tuple[pd.DataFrame, list[float]]:
    path = DEMO_DIR / "relatedness.tsv"
    raw = read_table(path)
    reference = [float(x) for x in raw.pop("reference")]
    return validate_pairs(raw, str(path)), reference


def seed_demo(
    *,
    only_if_empty: bool = True,
    engine=None,
    seed: int = 7,
    names: tuple[str, str] = (BINARY_STUDY, RELATEDNESS_STUDY),
) -> dict:
    """Create the demo studies (when the database has no studies, unless forced), named
    *names* (binary, relatedness; a taken name gets a number added).

    Returns ``{"seeded": bool, "studies": [create_study results], "admin_password": str|None}``;
    an admin password is generated (and returned once) when none is configured.
    """
    engine = engine or get_engine()
    if only_if_empty and svc.list_studies(engine=engine):
        return {"seeded": False, "studies": [], "admin_password": None}
    password = None
    if not admin_password_configured(engine=engine):
        password = "demo-" + secrets.token_urlsafe(9)
        set_password(ENV_ADMIN, password, engine=engine)
    rng = random.Random(seed)
    results = []
    name_b = _free_name(names[0], engine)
    pairs = demo_pairs()
    results.append(
        svc.create_study(
            name_b,
            pairs,
            BINARY,
            DOCTORS,
            engine=engine,
            config={"demo": True, "pairs_file": "demo_pairs.csv"},
        )
    )
    truth = [int(x) for x in pairs[C.AUTO_LABEL]]
    # A generator makes mistakes: a few "negatives" are in fact similar (CKD vs CKD 3, ...).
    for i, (t1, t2) in enumerate(zip(pairs[C.TERM_1], pairs[C.TERM_2])):
        if truth[i] == 0 and (t1.lower() in t2.lower() or t2.lower() in t1.lower()):
            truth[i] = 1

    def binary_vote(i: int, who: int) -> str:
        r = rng.random()
        if r < 0.04:
            return "dont_know"
        correct = truth[i] if r < 0.92 - 0.03 * who else 1 - truth[i]
        return "same" if correct == 1 else "not_same"

    _simulate(
        open_study(name_b, engine=engine), len(pairs) - LEFT_TO_RATE[BINARY_STUDY], binary_vote, rng
    )

    name_r = _free_name(names[1], engine)
    rel_pairs, reference = demo_relatedness_pairs()
    results.append(
        svc.create_study(
            name_r,
            rel_pairs,
            RELATEDNESS_0_3,
            DOCTORS,
            engine=engine,
            config={"demo": True, "pairs_file": "relatedness.tsv"},
        )
    )

    def graded_vote(i: int, who: int) -> float:
        return float(min(3, max(0, round(reference[i] + rng.gauss(0, 0.45 + 0.15 * who)))))

    _simulate(
        open_study(name_r, engine=engine),
        len(rel_pairs) - LEFT_TO_RATE[RELATEDNESS_STUDY],
        graded_vote,
        rng,
    )
    return {"seeded": True, "studies": results, "admin_password": password}


def credentials_text(result: dict) -> str:
    """The demo sign-in details as plain text (what ``make run`` prints)."""
    lines = ["medsim-annot demo sign-in (demo data only; never use demo codes for real studies)"]
    if result.get("admin_password"):
        lines.append(f"  admin password: {result['admin_password']}  (admin name: {ENV_ADMIN})")
    for st in result["studies"]:
        lines.append(f"  study {st['study']}:")
        for a in st["annotators"]:
            lines.append(f"    {a['name']:<12} access code {a['access_code']}")
    return "\n".join(lines) + "\n"


def _free_name(base: str, engine) -> str:
    taken = {s.study for s in svc.list_studies(engine=engine)}
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def _simulate(study: Study, upto: int, vote, rng: random.Random) -> None:
    """Simulated ratings of the demo doctors for the first *upto* slots of their queues."""
    info = study
    now = utcnow()
    with session_scope(study.engine) as s:
        anns = store.annotators_by_name(s, info.id)
        rows = []
        for who, (ann_id, _name) in enumerate(anns):
            slots = store.queue_head(s, ann_id, upto)
            item_index = {iid: k for k, iid in enumerate(sorted({item for _, item, _ in slots}))}
            for slot_id, item_id, position in slots:
                rows.append(
                    {
                        "study_id": info.id,
                        "annotator_id": ann_id,
                        "item_id": item_id,
                        "assignment_id": slot_id,
                        "value": str(vote(item_index[item_id], who)),
                        "unclear": False,
                        "comment": "",
                        "rated_at": now - pd.Timedelta(seconds=(upto - position) * 7 + who),
                        "elapsed_ms": rng.randint(1500, 9000),
                        "source": "demo",
                    }
                )
        rows.sort(key=lambda r: r["rated_at"])
        store.insert_ratings(s, rows)
