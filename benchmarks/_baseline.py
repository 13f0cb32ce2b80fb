"""What several benchmarks share: an earlier commit's code to run as the same-run baseline,
and the machine's load average printed beside the figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def loadavg() -> str:
    """``/proc/loadavg`` as it reads (``n/a`` where there is none): the machine is shared."""
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def baseline_tree(tmp: Path, ref: str) -> Path | None:
    """The code of commit *ref* in *tmp*/baseline (``git archive``), compiled once as
    today's code is (no run of it pays for compiling); None, with a line saying why, when
    it cannot be had (no git, an unknown ref)."""
    dest = tmp / "baseline"
    dest.mkdir()
    try:
        tar = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "medsim_annot", "pages", "data_schemas"],
            cwd=dest,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"  baseline {ref}: not available ({exc})")
        return None
    return dest
