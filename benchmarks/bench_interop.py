"""Speed of the interop paths, each next to the existing path for the same data,
measured in the same run on a fresh SQLite database:

1. importing a Label Studio JSON export of 20,000 tasks x 3 annotators (60,000 ratings,
   a tenth cancelled) against ``import ratings`` of the same ratings as long CSV files
   (goal: at most 2x the CSV import: the JSON walk must not dominate the store);
2. ``export gold --format hf`` (Parquet, card with two bootstrap intervals of alpha,
   Croissant, manifest) of that study against ``export gold --format parquet`` (goal: at
   most 5x the plain export).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from benchmarks._timing import best_time
from medsim_annot.services.study_handle import open_study

N_TASKS = 20_000
ANNOTATORS = ("1", "2", "3")
SEED = 16


def _label_studio(folder: Path) -> tuple[Path, Path, Path]:
    """A Label Studio export and the same ratings as pairs + long ratings CSV files."""
    rng = np.random.default_rng(SEED)
    truth = rng.random(N_TASKS) < 0.5
    tasks, pairs, ratings = (
        [],
        ["pair_id,term_1,term_2,auto_label"],
        ["pair_id,annotator,rating,rated_at"],
    )
    labels = {"same": "Same", "not_same": "Not same", "dont_know": "Don't know"}
    for i in range(N_TASKS):
        pid = str(1000 + i)
        pairs.append(f"{pid},term {i},other term {i},{int(truth[i])}")
        anns = []
        for a in ANNOTATORS:
            r = rng.random()
            t = f"2026-11-01T{i % 24:02d}:{i % 60:02d}:{int(a) * 10:02d}Z"
            if r < 0.1:
                anns.append({"completed_by": int(a), "was_cancelled": True, "result": []})
                continue
            value = "dont_know" if r < 0.15 else ("same" if (r < 0.9) == truth[i] else "not_same")
            anns.append(
                {
                    "completed_by": int(a),
                    "was_cancelled": False,
                    "created_at": t,
                    "updated_at": t,
                    "result": [
                        {
                            "from_name": "verdict",
                            "to_name": "pair",
                            "type": "choices",
                            "value": {"choices": [labels[value]]},
                        }
                    ],
                }
            )
            ratings.append(f"{pid},{a},{value},{t}")
        tasks.append(
            {
                "id": int(pid),
                "data": {
                    "term_1": f"term {i}",
                    "term_2": f"other term {i}",
                    "auto_label": int(truth[i]),
                },
                "annotations": anns,
            }
        )
    ls = folder / "export.json"
    ls.write_text(json.dumps(tasks), encoding="utf-8")
    (folder / "pairs.csv").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    (folder / "ratings.csv").write_text("\n".join(ratings) + "\n", encoding="utf-8")
    return ls, folder / "pairs.csv", folder / "ratings.csv"


def run(report) -> None:
    from medsim_annot.services import studies as svc
    from medsim_annot.services.gold.export import export_gold
    from medsim_annot.services.interop import export_gold_hf, import_from_tool
    from medsim_annot.storage import dispose_all, get_engine

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ls, pairs, ratings = _label_studio(folder)
        engine = get_engine(f"sqlite:///{folder / 'bench.db'}")
        counter = iter(range(100))

        def by_tool():
            import_from_tool("labelstudio", ls, "binary", f"ls-{next(counter)}", engine=engine)

        def by_csv():
            svc.import_ratings(ratings, pairs, "binary", f"csv-{next(counter)}", engine=engine)

        t_csv = best_time(by_csv)
        t_tool = best_time(by_tool)
        n = len(svc.ratings_frame(open_study("ls-1", engine=engine))[0])
        report(
            f"import labelstudio, {N_TASKS:,} tasks, {n:,} ratings",
            t_tool,
            "s",
            baseline=t_csv,
            goal="<= 2x the CSV import",
            ok=t_tool <= 2 * t_csv,
        )
        ls1 = open_study("ls-1", engine=engine)
        t_plain = best_time(lambda: export_gold(ls1, folder / "gold.parquet"))
        t_hf = best_time(lambda: export_gold_hf(ls1, folder / "hf"))
        report(
            f"export gold --format hf, {N_TASKS:,} pairs",
            t_hf,
            "s",
            baseline=t_plain,
            goal="<= 5x the parquet export",
            ok=t_hf <= 5 * t_plain,
        )
        dispose_all()
