"""Small studies for the gold-export and dashboard tests (built through the public services)."""

from __future__ import annotations

from pathlib import Path

from medsim_annot.services import studies as svc

# p1 unanimous + verified; p2 formula-like term, majority = auto label; p3 all different, no
# majority; p4 majority 'same' but auto label 0 (disagrees), flagged unclear by A; p5 rated
# by A only (majority of one).
TINY_PAIRS = (
    "pair_id,term_1,term_2,auto_label,dataset\n"
    "p1,fever,pyrexia,1,A\n"
    'p2,"=HYPERLINK(""http://x"")",cough,0,A\n'
    "p3,-ache,+pain,1,B\n"
    "p4,@home,rash,0,B\n"
    "p5,nausea,vomiting,1,B\n"
)
TINY_RATINGS = (
    "pair_id,annotator,rating,rated_at,comment,unclear\n"
    "p1,A,same,2026-01-01T10:00:00Z,,false\n"
    "p1,B,same,2026-01-01T10:00:00Z,,false\n"
    "p1,C,same,2026-01-01T10:00:00Z,,false\n"
    "p2,A,not_same,2026-01-01T10:01:00Z,,false\n"
    "p2,B,not_same,2026-01-01T10:01:00Z,,false\n"
    "p2,C,same,2026-01-01T10:01:00Z,looks like a formula,false\n"
    "p3,A,same,2026-01-01T10:02:00Z,,false\n"
    "p3,B,not_same,2026-01-01T10:02:00Z,,false\n"
    "p3,C,dont_know,2026-01-01T10:02:00Z,never heard of it,false\n"
    "p4,A,same,2026-01-01T10:03:00Z,what is @home?,true\n"
    "p4,B,same,2026-01-01T10:03:00Z,,false\n"
    "p4,C,not_same,2026-01-01T10:03:00Z,,false\n"
    "p5,A,same,2026-01-01T10:04:00Z,,false\n"
)


def make_tiny(folder: Path, name: str = "tiny", engine=None) -> str:
    """Import the tiny binary study into the database of *engine* (or MEDSIM_DATABASE_URL)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny_pairs.csv").write_text(TINY_PAIRS, encoding="utf-8")
    (folder / "tiny_ratings.csv").write_text(TINY_RATINGS, encoding="utf-8")
    svc.import_ratings(
        folder / "tiny_ratings.csv", folder / "tiny_pairs.csv", "binary", name, engine=engine
    )
    return name


def make_quality(folder: Path, name: str = "quality", engine=None) -> str:
    """A binary study of 24 pairs: 'lazy' rates 'same' 24 times in a row, 'unsure' answers
    "don't know" to half of them, 'good' follows the automatic label."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["pair_id,term_1,term_2,auto_label"]
    rows += [f"q{i:02d},term {i},other {i},{i % 2}" for i in range(24)]
    (folder / "q_pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    lines = ["pair_id,annotator,rating,rated_at"]
    for i in range(24):
        t = f"2026-01-01T10:{i:02d}:00Z"
        truth = "same" if i % 2 else "not_same"
        lines.append(f"q{i:02d},good,{truth},{t}")
        lines.append(f"q{i:02d},lazy,same,{t}")
        lines.append(f"q{i:02d},unsure,{'dont_know' if i % 2 == 0 else truth},{t}")
    (folder / "q_ratings.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    svc.import_ratings(
        folder / "q_ratings.csv", folder / "q_pairs.csv", "binary", name, engine=engine
    )
    return name
