"""``medsim score`` and ``medsim evaluate``: benchmark embeddings on verified pairs."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import typer
from tqdm import tqdm

from data_schemas import columns as C
from medsim_annot.io import delimiter_of, write_table
from medsim_annot.services import scoring as svc
from medsim_annot.services.gold.files import read_gold

from ._common import emit_json, split_list


class _Bars:
    """tqdm progress bars on stderr, one per stage, fed by the services' progress callback."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = enabled
        self.stage: str | None = None
        self.bar: Any = None

    def __call__(self, done: int, total: int, stage: str) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = tqdm(
                total=max(total, 1),
                desc=stage,
                file=sys.stderr,
                leave=False,
                disable=None if self.enabled is None else not self.enabled,
                dynamic_ncols=True,
            )
        if self.bar is not None:
            if total and total != self.bar.total:
                self.bar.total = total
            self.bar.n = min(done, self.bar.total)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _text_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """Scores as text: full precision (repr) and ``NaN`` where not covered."""
    out = pd.DataFrame({C.PAIR_ID: frame[C.PAIR_ID].astype(str)})
    for col in frame.columns:
        if col == C.PAIR_ID:
            continue
        out[col] = [
            "NaN" if (v is None or (isinstance(v, float) and math.isnan(v))) else repr(float(v))
            for v in frame[col].tolist()
        ]
    return out


def register(app: typer.Typer) -> None:
    @app.command("score")
    def score(
        pairs: Path = typer.Option(
            ..., "--pairs", help="Pairs file (pair_id, term_1, term_2) or an EHR-Rel file."
        ),
        out: Path = typer.Option(
            ...,
            "--out",
            help="Scores file to write (CSV: pair_id and one "
            "column per metric, NaN where not covered).",
        ),
        embedding: str = typer.Option(
            None,
            "--embedding",
            help="Embedding file, sentence-transformers model folder or model package.",
        ),
        fmt: str = typer.Option(
            None,
            "--format",
            help="word2vec | word2vec-binary | glove | "
            "fasttext | sentence-transformers | levenshtein | char-ngram "
            "(guessed from the file when omitted).",
        ),
        metrics: str = typer.Option(
            None, "--metrics", help="Comma-separated metrics (default: all of the format's)."
        ),
        keep_case: bool = typer.Option(
            False, "--keep-case", help="Do not lower-case terms before looking words up."
        ),
        token_split: str = typer.Option(
            None,
            "--token-split",
            help="Regular expression of the separators between words (default: non-alphanumerics).",
        ),
        cache_dir: Path = typer.Option(
            None,
            "--cache-dir",
            help="Cache folder (default .medsim-cache/embeddings or $MEDSIM_CACHE_DIR).",
        ),
        batch_size: int = typer.Option(64, "--batch-size", help="Terms per batch (contextual)."),
    ) -> None:
        """Score every pair with one embedding and write pair_id plus one column per metric."""
        frame = svc.read_pairs(pairs)
        tokeniser = svc.tokeniser(keep_case=keep_case, split=token_split)
        bars = _Bars()
        try:
            scores = svc.score_pairs(
                frame,
                embedding,
                fmt,
                split_list(metrics) or None,
                bars,
                tokeniser=tokeniser,
                cache_dir=cache_dir,
                batch_size=batch_size,
            )
        finally:
            bars.close()
        info = scores.attrs.get("coverage", {})
        write_table(_text_scores(scores) if delimiter_of(out) else scores, out)
        msg = (
            f"scored {info.get('pairs', len(scores))} pairs ({info.get('format')}): "
            f"{info.get('covered')} covered, {info.get('not_covered')} not covered"
        )
        if "oov_words" in info:
            msg += (
                f"; {info['oov_words']} of {info['words']} distinct words not in the "
                f"embedding ({info['tokeniser']})"
            )
        typer.echo(f"{msg}; wrote {out}", err=True)

    @app.command("evaluate")
    def evaluate(
        scores: list[Path] = typer.Option(
            ..., "--scores", help="Scores file(s) from medsim score: --scores A.csv B.csv ..."
        ),
        more_scores: list[Path] = typer.Argument(None, hidden=True),
        gold: Path = typer.Option(
            ...,
            "--gold",
            help="Gold: pairs with auto_label, a gold "
            "export (majority / mean), a ratings file or an EHR-Rel file.",
        ),
        task: str = typer.Option(
            None, "--task", help="binary | graded (inferred from the gold when omitted)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        alpha: float = typer.Option(
            0.05, "--alpha", help="Family-wise level (Bonferroni over all pairs of methods)."
        ),
        n_resamples: int = typer.Option(9999, "--resamples", help="Bootstrap resamples (graded)."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the bootstrap."),
    ) -> None:
        """Compare score files against gold: AUC/accuracy + McNemar, or Spearman + BCa."""
        files = list(scores) + list(more_scores or [])
        frames: dict[str, pd.DataFrame] = {}
        for f in files:
            name = Path(f).stem
            k = 2
            while name in frames:
                name = f"{Path(f).stem}-{k}"
                k += 1
            frames[name] = svc.read_scores(f)
        bars = _Bars()
        try:
            result = svc.evaluate_scores(
                frames,
                read_gold(gold, task),
                task,
                alpha=alpha,
                n_resamples=n_resamples,
                seed=seed,
                progress=bars,
            )
        finally:
            bars.close()
        if as_json:
            emit_json(result.to_dict())
            return
        _print_result(result)


def _fmt(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "inf" if isinstance(v, float) and v == np.inf else "-"
    return f"{v:.{digits}f}"


def _print_result(result) -> None:
    typer.echo(
        f"task: {result.task} (gold: {result.gold_source}); {result.n_common} of "
        f"{result.n_gold} gold pairs scored by every method; alpha {result.alpha} "
        f"Bonferroni over {result.n_comparisons} comparisons"
    )
    m = result.methods
    if result.task == "binary":
        head = f"{'method':40} {'coverage':>8} {'AUC':>6} {'acc':>6} {'threshold':>10} {'+/-':>7}"
        typer.echo(head)
        for r in m.itertuples(index=False):
            typer.echo(
                f"{r.method:40} {r.coverage:8.1%} {_fmt(r.auc):>6} {_fmt(r.accuracy):>6} "
                f"{_fmt(r.threshold, 4):>10} {f'{r.better_than}/-{r.worse_than}':>7}"
            )
    else:
        head = f"{'method':40} {'coverage':>8} {'rho':>6} {'95% CI':>16} {'+/-':>7}"
        typer.echo(head)
        for r in m.itertuples(index=False):
            ci = f"[{_fmt(r.rho_low)}, {_fmt(r.rho_high)}]"
            typer.echo(
                f"{r.method:40} {r.coverage:8.1%} {_fmt(r.rho):>6} {ci:>16} "
                f"{f'{r.better_than}/-{r.worse_than}':>7}"
            )
    typer.echo("+N/-M: significantly better than N methods, worse than M.")
