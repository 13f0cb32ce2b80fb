"""Planted mutants of the security and statistics rules, each with the tests that must kill it.

``make mutants`` (or ``python tools/mutants.py [NAME ...]``) copies the tracked files of the
tree to a temporary folder once per mutant, replaces one exact piece of product code there
(the mutant), runs the named tests against that copy and prints ``killed`` (the tests
failed) or ``SURVIVED`` (they passed: a rule nobody checks). The run fails when a mutant
survives, its text is not found once (the code moved: update the list) or its tests pass
unmutated (``--baseline``). A mutant whose tests live on another branch until a merge is
listed with ``needs`` and reported as waiting while those files are missing.

Kept small on purpose: a text patch per rule, not a mutation framework, so that each entry
says in one line which rule it breaks and which test is meant to notice.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    rule: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    needs: str = ""  # a glob of test files that must exist (merged from another branch)
    #: Further (old, new) forms of the same mutant, for code another branch reshapes: the
    #: first form found exactly once in *path* is applied.
    variants: tuple[tuple[str, str], ...] = ()

    def patch(self, source: str) -> str | None:
        """*source* with the mutant planted, or ``None`` if no form is found exactly once."""
        for old, new in ((self.old, self.new), *self.variants):
            if source.count(old) == 1:
                return source.replace(old, new)
        return None


MUTANTS = (
    # ---- the three of issue 37 -------------------------------------------------------------
    Mutant(
        "elapsed-ms-negative",
        "the widget contract refuses a negative elapsed_ms",
        "data_schemas/widget.py",
        '    comment: StrictStr = ""\n    elapsed_ms: Annotated[StrictInt, Field(ge=0)]\n',
        '    comment: StrictStr = ""\n    elapsed_ms: StrictInt\n',
        ("tests/test_ratings_api.py", "-k", "accepts_well_formed"),
    ),
    Mutant(
        "loo-mean-keeps-doctor",
        "the model is ranked against the mean of the doctors other than the left-out one",
        "medsim_annot/stats/rater_model.py",
        "mrho = spearman_rho(f[sel].to_numpy(), ref[sel].to_numpy())",
        "mrho = spearman_rho(f[sel].to_numpy(), mean_all[sel].to_numpy())",
        ("tests/test_ppi.py", "-k", "model_as_rater or model_rank"),
    ),
    Mutant(
        "client-id-local",
        "failed sign-ins are counted per client address (X-Forwarded-For behind a proxy)",
        "pages/_ui.py",
        '    if os.environ.get("MEDSIM_TRUST_FORWARDED", "") not in ("", "0", "false", "no"):\n'
        '        fwd = st.context.headers.get("X-Forwarded-For", "")',
        '    return "local"\n'
        '    if os.environ.get("MEDSIM_TRUST_FORWARDED", "") not in ("", "0", "false", "no"):\n'
        '        fwd = st.context.headers.get("X-Forwarded-For", "")',
        ("tests/test_client_*.py",),
        needs="tests/test_client_*.py",
        # issue 34's reshaping: the address comes from medsim_annot.forwarded
        variants=(
            (
                "    ip = st.context.ip_address\n    return forwarded.client_address(",
                '    return "local"\n    ip = st.context.ip_address\n'
                "    return forwarded.client_address(",
            ),
        ),
    ),
    # ---- security rules ----------------------------------------------------------------------
    Mutant(
        "min-view-time-off",
        "a press sooner than MIN_VIEW_MS after the pair appeared is refused",
        "medsim_annot/services/rating_queue.py",
        "    if e.elapsed_ms < MIN_VIEW_MS:\n",
        "    if e.elapsed_ms < 0:\n",
        ("tests/test_ratings_api.py",),
    ),
    Mutant(
        "guard-lets-all-through",
        "requires(role) runs nothing for a session not signed in as the role",
        "pages/_ui.py",
        "            refusal = session_refusal(need)\n            if refusal is not None:\n",
        "            refusal = session_refusal(need)\n            if False:\n",
        ("tests/test_pages_guard.py",),
    ),
    Mutant(
        "lockout-ignored",
        "a client locked out after repeated failed sign-ins stays locked out",
        "medsim_annot/services/people/throttle.py",
        "        if state.locked_until > now:\n",
        "        if False:\n",
        ("tests/test_sign_in_hardening.py", "tests/test_signin_throttle_store.py"),
    ),
    Mutant(
        "token-never-expires",
        "a ratings token is refused after its lifetime",
        "medsim_annot/services/people/tokens.py",
        "    if row.expires_at <= now:\n",
        "    if False:\n",
        ("tests/test_ratings_api.py", "tests/test_security.py"),
    ),
    # ---- statistics --------------------------------------------------------------------------
    Mutant(
        "wilson-centre-wald",
        "the Wilson interval is centred on (p + z^2/2n) / (1 + z^2/n), not on p",
        "medsim_annot/stats/proportion.py",
        "    centre = (p + z * z / (2 * n)) / (1 + z * z / n)\n",
        "    centre = p\n",
        ("tests/test_stats_units.py", "tests/test_stopping.py", "tests/test_adaptive.py"),
    ),
    Mutant(
        "kappa-quadratic-is-linear",
        "quadratic weighted kappa weighs a disagreement by the squared distance",
        "medsim_annot/stats/pairwise.py",
        'power = 2 if WEIGHTS.check(weights) == "quadratic" else 1',
        "power = 1",
        ("tests/test_stats_published.py",),
    ),
    Mutant(
        "alpha-interval-absolute",
        "Krippendorff's interval metric is the squared difference",
        "medsim_annot/stats/alpha.py",
        "        d = (v[:, None] - v[None, :]) ** 2\n",
        "        d = abs(v[:, None] - v[None, :])\n",
        ("tests/test_stats_published.py",),
    ),
)


def _tracked() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [p for p in out.split("\0") if p]


def _copy_tree(dest: Path, files: list[str]) -> None:
    for rel in files:
        src = ROOT / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("MEDSIM_SHARED_DIR", str(ROOT.parent / "shared"))
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    env.pop("MEDSIM_DATABASE_URL", None)
    return env


def _pytest(tree: Path, tests: tuple[str, ...]) -> tuple[int, float, str]:
    args = []
    for t in tests:  # globs are expanded against the copy, as the shell would
        hits = sorted(glob.glob(t, root_dir=tree)) if "*" in t else [t]
        args += hits or [t]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args]
    t0 = time.monotonic()
    run = subprocess.run(cmd, cwd=tree, env=_env(), capture_output=True, text=True)
    tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-3:])
    return run.returncode, time.monotonic() - t0, tail


def run_one(m: Mutant, files: list[str], baseline: bool) -> str:
    """``killed``, ``SURVIVED``, ``waiting`` (tests not merged yet) or ``ERROR: ...``."""
    source = (ROOT / m.path).read_text()
    mutated = m.patch(source)
    if mutated is None:
        return f"ERROR: the mutated text is not found exactly once in {m.path} (code moved?)"
    if m.needs and not glob.glob(m.needs, root_dir=ROOT):
        return f"waiting: needs {m.needs} (another branch; the mutant applies)"
    with tempfile.TemporaryDirectory(prefix="medsim-mutant-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree, files)
        if baseline:
            code, secs, tail = _pytest(tree, m.tests)
            if code != 0:
                return f"ERROR: its tests fail unmutated ({secs:.0f} s):\n{tail}"
        (tree / m.path).write_text(mutated)
        code, secs, tail = _pytest(tree, m.tests)
    if code == 1:
        return f"killed ({secs:.0f} s)"
    if code == 0:
        return f"SURVIVED ({secs:.0f} s)"
    return f"ERROR: pytest exit {code} ({secs:.0f} s):\n{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--baseline", action="store_true", help="also run each test unmutated")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    a = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not a.names or m.name in a.names]
    if a.list or not chosen:
        for m in MUTANTS:
            print(f"{m.name:28} {m.path}: {m.rule}")
        return 0 if chosen else 2
    files = _tracked()
    bad = 0
    for m in chosen:
        verdict = run_one(m, files, a.baseline)
        bad += not (verdict.startswith("killed") or verdict.startswith("waiting"))
        print(f"{m.name:28} {verdict}   [{m.rule}]", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} killed or waiting for their tests; {bad} not")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
