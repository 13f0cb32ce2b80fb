"""Use cases of embedding benchmarking: score pairs, evaluate scores against gold.

The CLI (``medsim score``, ``medsim evaluate``) and the admin page call these functions, so
both report the same numbers. Long work reports through an optional ``progress`` callback
``progress(done: int, total: int, stage: str)`` — the CLI draws tqdm bars with it, a page can
pass ``lambda d, t, s: bar.progress(d / max(t, 1), text=s)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.ehr_rel import is_ehr_rel, split_ehr_rel
from data_schemas.errors import InputError, Problem
from data_schemas.pairs import validate_pairs
from medsim_annot.embeddings import evaluate as ev
from medsim_annot.embeddings.contextual import ContextualEncoder
from medsim_annot.embeddings.installed import cached_models, model_packages
from medsim_annot.embeddings.lexical import (
    LEXICAL_METRICS,
    char_ngram_similarity,
    levenshtein_similarity,
)
from medsim_annot.embeddings.loaders import WORD_FORMATS, detect_format, load_word_vectors
from medsim_annot.embeddings.metrics import (
    VECTOR_METRICS,
    WORD_METRICS,
    vector_pair_scores,
    word_pair_scores,
)
from medsim_annot.embeddings.tokenise import DEFAULT_SPLIT, DEFAULT_TOKENISER, Tokeniser
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, t
from medsim_annot.io import read_table
from medsim_annot.services.gold.files import NAN_TEXT, Gold, gold_from_frame

Progress = Callable[[int, int, str], None]

CONTEXTUAL_FORMAT = "sentence-transformers"
FORMATS = (*WORD_FORMATS, CONTEXTUAL_FORMAT, *LEXICAL_METRICS)


def tokeniser(*, keep_case: bool = False, split: str | None = None) -> Tokeniser:
    """The tokeniser of word-embedding scoring: lower-cased unless *keep_case*, words split
    on the regular expression *split* (default: non-alphanumerics)."""
    return Tokeniser(lowercase=not keep_case, split=split or DEFAULT_SPLIT)


def metrics_for(fmt: str) -> tuple[str, ...]:
    """The metrics a format offers (the default is all of them).

    >>> metrics_for("glove")[:2], metrics_for("sentence-transformers"), metrics_for("levenshtein")
    (('avg_cos', 'avg_r'), ('cos', 'r', 'rho', 'tau'), ('levenshtein',))
    """
    if fmt in WORD_FORMATS:
        return WORD_METRICS
    if fmt == CONTEXTUAL_FORMAT:
        return VECTOR_METRICS
    if fmt in LEXICAL_METRICS:
        return (LEXICAL_METRICS[fmt],)
    raise UsageProblem(
        t(
            "unknown format '{format}'; use one of {formats}",
            format=fmt,
            formats=", ".join(FORMATS),
        )
    )


def embeddings_dir() -> Path | None:
    """The folder of available embeddings (``MEDSIM_EMBEDDINGS_DIR``), if configured."""
    env = os.environ.get("MEDSIM_EMBEDDINGS_DIR")
    return Path(env) if env else None


def list_embeddings(
    folder: str | os.PathLike | None = None, *, installed: bool = False
) -> pd.DataFrame:
    """Embedding files and model folders in *folder* (default ``MEDSIM_EMBEDDINGS_DIR``)
    with their guessed format: columns ``name``, ``path``, ``format``. With *installed*,
    also the sentence-transformers model packages installed and the models in the local
    Hugging Face cache (:mod:`medsim_annot.embeddings.installed`; offline), named
    ``package: NAME`` and ``hf-cache: REPO``."""
    folder = Path(folder) if folder is not None else embeddings_dir()
    rows = []
    if folder is not None and folder.is_dir():
        for p in sorted(folder.iterdir()):
            if p.name.startswith("."):
                continue
            try:
                fmt = detect_format(p)
            except (InputError, OSError):
                continue
            if fmt == CONTEXTUAL_FORMAT and not (
                (p / "modules.json").exists() or (p / "config.json").exists()
            ):
                continue
            rows.append((p.name, str(p), fmt))
    if installed:
        for r in model_packages() + cached_models():
            rows.append((f"{r['source']}: {r['name']}", r["path"], r["format"]))
    return pd.DataFrame(rows, columns=["name", "path", "format"])


# ---------------------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------------------


def read_pairs(path: str | os.PathLike) -> pd.DataFrame:
    """A pairs file (pairs contract) or an EHR-Rel wide file, validated."""
    frame = read_table(path)
    if is_ehr_rel(frame.columns):
        pairs, _ = split_ehr_rel(frame, str(path))
        return pairs
    return validate_pairs(frame, str(path))


def read_scores(path: str | os.PathLike) -> pd.DataFrame:
    """A scores file: ``pair_id`` and one numeric column per metric (empty/NaN = not covered)."""
    frame = read_table(path)
    return _typed_scores(frame, str(path))


_SKIP_COLUMNS = {
    C.TERM_1,
    C.TERM_2,
    C.AUTO_LABEL,
    C.DATASET,
    C.DIFFICULTY,
    C.NEGATIVE_STRATEGY,
    C.CONCEPT_ID_1,
    C.CONCEPT_ID_2,
}


def _typed_scores(frame: pd.DataFrame, file: str | None) -> pd.DataFrame:
    if C.PAIR_ID not in frame.columns:
        raise InputError([Problem(t("required column is missing"), column=C.PAIR_ID)], file)
    ids = frame[C.PAIR_ID].astype(str).str.strip()
    dup = ids.duplicated()
    problems = [
        Problem(
            t("pair_id '{value}' appears more than once", value=ids[i]),
            row=int(i) + 2,
            column=C.PAIR_ID,
        )
        for i in np.flatnonzero(dup.to_numpy())
    ]
    out = pd.DataFrame({C.PAIR_ID: ids.to_numpy()})
    metric_cols = [c for c in frame.columns if c != C.PAIR_ID and c not in _SKIP_COLUMNS]
    for col in metric_cols:
        raw = frame[col]
        if pd.api.types.is_numeric_dtype(raw):
            out[col] = raw.astype(np.float64).to_numpy()
            continue
        values = np.empty(len(raw))
        for i, v in enumerate(raw.tolist()):
            text = "" if v is None else str(v).strip()
            if text.lower() in NAN_TEXT:
                values[i] = np.nan
                continue
            try:
                values[i] = float(text)
            except ValueError:
                problems.append(
                    Problem(t("'{value}' is not a number", value=text), row=i + 2, column=str(col))
                )
                values[i] = np.nan
        out[col] = values
    if not metric_cols:
        problems.append(Problem(t("has no score column besides pair_id")))
    if problems:
        raise InputError(problems, file)
    return out


# ---------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------


def _stage(progress: Progress | None, stage: str):
    if progress is None:
        return None
    return lambda done, total: progress(done, total, stage)


def score_pairs(
    pairs_frame: pd.DataFrame,
    embedding_path: str | os.PathLike | None,
    fmt: str | None = None,
    metrics: Sequence[str] | None = None,
    progress: Progress | None = None,
    *,
    tokeniser: Tokeniser = DEFAULT_TOKENISER,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int = 64,
) -> pd.DataFrame:
    """Score every pair with one embedding (or lexical baseline).

    Parameters
    ----------
    pairs_frame : DataFrame
        Pairs with ``pair_id``, ``term_1``, ``term_2`` (as :func:`read_pairs` returns).
    embedding_path : path-like or None
        Word-embedding file, sentence-transformers model folder or installed model package;
        ignored (may be None) for ``levenshtein`` and ``char-ngram``.
    fmt : str, optional
        One of :data:`FORMATS`; guessed from the file when omitted.
    metrics : sequence of str, optional
        Subset of :func:`metrics_for` ``(fmt)``; all of them by default.
    progress : callable ``(done, total, stage)``, optional
    tokeniser : Tokeniser
        How terms are split into words (word embeddings only).
    cache_dir : path-like, optional
        Cache folder for converted embeddings / encoded terms.
    batch_size : int
        Terms per forward pass of a contextual model.

    Returns
    -------
    DataFrame
        ``pair_id`` and one float column per metric, NaN where a term has no known word.
        ``frame.attrs["coverage"]`` holds ``{"pairs", "covered", "not_covered", "format",
        "embedding", "tokeniser", "oov_words", "words"}``.
    """
    for col in (C.PAIR_ID, C.TERM_1, C.TERM_2):
        if col not in pairs_frame.columns:
            raise InputError([Problem(t("required column is missing"), column=col)])
    if fmt is None:
        if embedding_path is None:
            raise UsageProblem(t("give an embedding path or a format"))
        spec = str(embedding_path)
        if Path(spec).exists():
            fmt = detect_format(spec)
        elif "/" in spec or "\\" in spec or Path(spec).suffix:
            raise InputError.single(t("embedding file not found"), file=spec)
        else:  # a bare name: an installed model package
            fmt = CONTEXTUAL_FORMAT
    allowed = metrics_for(fmt)
    metrics = tuple(metrics) if metrics else allowed
    unknown = [m for m in metrics if m not in allowed]
    if unknown:
        raise UsageProblem(
            t(
                "metric {metrics} is not available for format '{format}'; use {allowed}",
                metrics=", ".join(map(repr, unknown)),
                format=fmt,
                allowed=", ".join(allowed),
            )
        )
    t1 = [str(t) for t in pairs_frame[C.TERM_1]]
    t2 = [str(t) for t in pairs_frame[C.TERM_2]]
    info: dict = {
        "pairs": len(t1),
        "format": fmt,
        "embedding": None if embedding_path is None else str(embedding_path),
    }
    if fmt in LEXICAL_METRICS:
        if progress is not None:
            progress(0, len(t1), N_("scoring pairs"))
        fn = levenshtein_similarity if fmt == "levenshtein" else char_ngram_similarity
        values = {metrics[0]: fn(t1, t2)}
        if progress is not None:
            progress(len(t1), len(t1), N_("scoring pairs"))
    elif fmt == CONTEXTUAL_FORMAT:
        values = _score_contextual(t1, t2, embedding_path, metrics, progress, cache_dir, batch_size)
    else:
        values = _score_words(
            t1, t2, embedding_path, fmt, metrics, progress, tokeniser, cache_dir, info
        )
    out = pd.DataFrame({C.PAIR_ID: pairs_frame[C.PAIR_ID].astype(str).to_numpy()})
    for m in metrics:
        out[m] = values[m]
    covered = int(np.isfinite(out[list(metrics)].to_numpy()).any(axis=1).sum())
    info.update(covered=covered, not_covered=len(t1) - covered)
    out.attrs["coverage"] = info
    return out


def _score_words(t1, t2, path, fmt, metrics, progress, tokeniser, cache_dir, info) -> dict:
    if path is None:
        raise UsageProblem(t("format '{format}' needs an embedding file", format=fmt))
    if progress is not None:
        progress(0, 1, N_("loading embedding"))
    wv = load_word_vectors(
        path,
        fmt,
        cache_dir=cache_dir,
        progress=(lambda msg: progress(0, 1, msg)) if progress else None,
    )
    if progress is not None:
        progress(1, 1, N_("loading embedding"))
    words1 = [tokeniser(t) for t in t1]
    words2 = [tokeniser(t) for t in t2]
    vocab = list(dict.fromkeys(w for ws in (words1, words2) for t in ws for w in t))
    matrix, rows = wv.lookup(vocab)
    idx1 = [[rows[w] for w in t if w in rows] for t in words1]
    idx2 = [[rows[w] for w in t if w in rows] for t in words2]
    info.update(
        tokeniser=tokeniser.describe(),
        words=len(vocab),
        oov_words=len(vocab) - len(rows),
        vocabulary=len(wv),
        dim=wv.dim,
        load_seconds=round(wv.load_seconds, 3),
        converted=wv.converted,
    )
    return word_pair_scores(matrix, idx1, idx2, metrics, progress=_stage(progress, "scoring pairs"))


def _score_contextual(t1, t2, spec, metrics, progress, cache_dir, batch_size) -> dict:
    if spec is None:
        raise UsageProblem(t("format 'sentence-transformers' needs a model folder or package"))
    encoder = ContextualEncoder(spec, cache_dir=cache_dir, batch_size=batch_size)
    matrix, rows = encoder.encode(t1 + t2, progress=_stage(progress, N_("encoding terms")))
    if progress is not None:
        progress(0, len(t1), N_("scoring pairs"))
    out = vector_pair_scores(matrix, [rows[t] for t in t1], [rows[t] for t in t2], metrics)
    if progress is not None:
        progress(len(t1), len(t1), N_("scoring pairs"))
    return out


# ---------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------


@dataclass
class EvaluationResult:
    """What :func:`evaluate_scores` found.

    Attributes
    ----------
    task : {"binary", "graded"}
    gold_source : str
    n_gold : int
        Pairs with a gold value.
    n_common : int
        Pairs every method scores (the comparison set).
    alpha : float
        Family-wise level; each comparison is tested at ``alpha / n_comparisons``.
    methods : DataFrame
        One row per method: ``method``, ``file``, ``metric``, ``covered``, ``coverage``, then
        ``auc``, ``accuracy``, ``threshold`` (binary) or ``rho``, ``rho_low``, ``rho_high``
        (graded), ``better_than``, ``worse_than`` and the names behind the counts.
    comparisons : DataFrame
        One row per pair of methods: binary ``statistic``, ``p_value``, ``p_adjusted``,
        ``table``; graded ``difference``, ``low``, ``high`` (at ``1 - alpha / n``);
        both ``significant`` and ``better``.
    roc : dict of method to DataFrame (``fpr``, ``tpr``, ``threshold``), binary only.
    common_pairs : list of str
    """

    task: str
    gold_source: str
    n_gold: int
    n_common: int
    alpha: float
    n_comparisons: int
    methods: pd.DataFrame
    comparisons: pd.DataFrame
    roc: dict = field(default_factory=dict)
    common_pairs: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain data for JSON (ROC curves left out)."""
        return {
            "task": self.task,
            "gold_source": self.gold_source,
            "n_gold": self.n_gold,
            "n_common": self.n_common,
            "alpha": self.alpha,
            "n_comparisons": self.n_comparisons,
            "alpha_per_comparison": self.alpha / max(self.n_comparisons, 1),
            "settings": self.settings,
            "methods": _records(self.methods),
            "comparisons": _records(self.comparisons),
        }


def _records(frame: pd.DataFrame) -> list[dict]:
    out = []
    for rec in frame.to_dict(orient="records"):
        out.append({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in rec.items()})
    return out


def _methods(score_frames) -> tuple[dict[str, pd.Series], list[tuple[str, str, str]]]:
    if isinstance(score_frames, Mapping):
        items = list(score_frames.items())
    else:
        items = [(f"scores{i + 1}", f) for i, f in enumerate(score_frames)]
    series: dict[str, pd.Series] = {}
    meta = []
    for name, frame in items:
        typed = (
            _typed_scores(frame, name)
            if not all(
                pd.api.types.is_float_dtype(frame[c]) for c in frame.columns if c != C.PAIR_ID
            )
            else frame
        )
        for col in typed.columns:
            if col == C.PAIR_ID or col in _SKIP_COLUMNS:
                continue
            method = f"{name}:{col}"
            series[method] = pd.Series(
                typed[col].to_numpy(dtype=np.float64), index=typed[C.PAIR_ID].astype(str).to_numpy()
            )
            meta.append((method, name, col))
    if not series:
        raise UsageProblem(t("no score columns to evaluate"))
    return series, meta


def evaluate_scores(
    score_frames,
    gold_frame,
    task: str | None = None,
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    mcnemar_exact: bool | None = None,
    progress: Progress | None = None,
) -> EvaluationResult:
    """Evaluate one or more score sets against gold on the common subset of pairs.

    Parameters
    ----------
    score_frames : mapping of name to DataFrame, or sequence of DataFrames
        Each with ``pair_id`` and one column per metric (as :func:`score_pairs` or
        :func:`read_scores` return). Every (name, column) is one method, named
        ``"<name>:<column>"``.
    gold_frame : DataFrame or Gold
        Any gold :func:`gold_from_frame` understands.
    task : {"binary", "graded"}, optional
        Inferred from the gold when omitted.
    alpha : float
        Family-wise significance level, Bonferroni-corrected over all pairs of methods.
    confidence : float
        Level of the per-method rho intervals (graded).
    n_resamples, seed : int
        Bootstrap resamples and random seed (graded).
    mcnemar_exact : bool, optional
        Force the exact (True) or chi-square (False) McNemar test; default by count.
    progress : callable ``(done, total, stage)``, optional

    Returns
    -------
    EvaluationResult
    """
    gold = gold_frame if isinstance(gold_frame, Gold) else gold_from_frame(gold_frame, task)
    if task is not None and task != gold.task:
        gold = Gold(values=gold.values, task=task, source=gold.source, terms=gold.terms)
        if task == "binary" and not set(np.unique(gold.values)) <= {0.0, 1.0}:
            raise UsageProblem(
                t("the gold values are not binary (0/1); use the graded task (task)")
            )
    series, meta = _methods(score_frames)
    names = [m for m, _, _ in meta]
    gold_ids = list(gold.values.index)
    common = ev.common_subset(series, gold_ids)
    if not common:
        raise InputError.single(
            t(
                "no pair has a gold value and a score from every method (check that the "
                "pair_ids match)"
            )
        )
    y = gold.values.reindex(common).to_numpy()
    X = {m: series[m].reindex(common).to_numpy() for m in names}
    rows = []
    for m, file, metric in meta:
        covered, total = ev.coverage(series[m], gold_ids)
        rows.append(
            {
                "method": m,
                "file": file,
                "metric": metric,
                "covered": covered,
                "coverage": covered / total if total else float("nan"),
            }
        )
    methods = pd.DataFrame(rows)
    K = len(names) * (len(names) - 1) // 2
    level = alpha / K if K else alpha
    roc: dict = {}
    if gold.task == "binary":
        methods, comparisons, roc = _binary(names, y, X, methods, K, alpha, mcnemar_exact, progress)
    else:
        methods, comparisons = _graded(
            names, y, X, methods, level, confidence, n_resamples, seed, progress
        )
    counts = ev.significance_counts(names, comparisons)
    methods = methods.merge(counts, on="method", how="left")
    settings = (
        {"confidence": confidence, "n_resamples": n_resamples, "seed": seed}
        if gold.task == "graded"
        else {"mcnemar_exact": mcnemar_exact, "prediction": "similar when score >= threshold"}
    )
    return EvaluationResult(
        task=gold.task,
        gold_source=gold.source,
        n_gold=len(gold_ids),
        n_common=len(common),
        alpha=alpha,
        n_comparisons=K,
        methods=methods,
        comparisons=comparisons,
        roc=roc,
        common_pairs=common,
        settings=settings,
    )


def _binary(names, y, X, methods, K, alpha, exact, progress):
    yi = y.astype(np.int64)
    auc, acc, thr, correct, roc = [], [], [], {}, {}
    for m in names:
        s = X[m]
        auc.append(ev.roc_auc(yi, s))
        cut, a = ev.best_threshold(yi, s)
        thr.append(cut)
        acc.append(a)
        correct[m] = (s >= cut).astype(np.int64) == yi
        points = ev.roc_points(yi, s)
        if points is not None:
            roc[m] = points
    methods = methods.assign(auc=auc, accuracy=acc, threshold=thr)
    tick = _ticker(progress, K, N_("McNemar tests"))
    comparisons = ev.mcnemar_comparisons(
        correct, dict(zip(names, acc)), n_tests=K, alpha=alpha, exact=exact, on_pair=tick
    )
    return methods, comparisons, roc


def _graded(names, y, X, methods, level, confidence, n_resamples, seed, progress):
    tick = _ticker(
        progress, len(names) + len(names) * (len(names) - 1) // 2, N_("bootstrap intervals")
    )
    rho, low, high = [], [], []
    for m in names:
        ci = ev.spearman_ci(y, X[m], confidence=confidence, n_resamples=n_resamples, seed=seed)
        rho.append(ci.estimate)
        low.append(ci.low)
        high.append(ci.high)
        tick()
    methods = methods.assign(rho=rho, rho_low=low, rho_high=high)
    comparisons = ev.spearman_difference_comparisons(
        y, {m: X[m] for m in names}, level=level, n_resamples=n_resamples, seed=seed, on_pair=tick
    )
    return methods, comparisons


def _ticker(progress, total: int, what: str) -> Callable[[], None]:
    """A callback that reports one more step of *total* to *progress* (when given)."""
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, what)

    return tick


def pair_errors(
    score_frames,
    gold_frame,
    method: str,
    result: EvaluationResult | None = None,
    *,
    limit: int = 50,
) -> pd.DataFrame:
    """The pairs a method gets most wrong, for the per-pair explorer.

    Binary gold: misclassified pairs (at the method's accuracy-optimising threshold), the
    farthest from the threshold first. Graded gold: the largest difference between the
    pair's percentile rank by score and by gold. Columns: ``pair_id``, ``term_1``,
    ``term_2`` (when the gold knows them), ``gold``, ``score``, ``error``.
    """
    gold = gold_frame if isinstance(gold_frame, Gold) else gold_from_frame(gold_frame)
    series, _ = _methods(score_frames)
    if method not in series:
        raise UsageProblem(
            t(
                "unknown method '{method}'; use one of {methods}",
                method=method,
                methods=", ".join(series),
            )
        )
    if result is not None and result.task != gold.task:
        raise UsageProblem(
            t(
                "the result was evaluated as a {task} task but this gold is {gold}; evaluate "
                "the scores against this gold first",
                task=result.task,
                gold=gold.task,
            )
        )
    ids = (
        result.common_pairs
        if result is not None
        else ev.common_subset({method: series[method]}, list(gold.values.index))
    )
    frame = pd.DataFrame(
        {
            C.PAIR_ID: ids,
            "gold": gold.values.reindex(ids).to_numpy(),
            "score": series[method].reindex(ids).to_numpy(),
        }
    )
    if gold.task == "binary":
        if result is not None:
            cut = float(result.methods.set_index("method").at[method, "threshold"])
        else:
            cut = ev.best_threshold(frame["gold"].to_numpy(), frame["score"].to_numpy())[0]
        predicted = (frame["score"] >= cut).astype(float)
        wrong = predicted != frame["gold"]
        margin = (frame["score"] - cut).abs() if math.isfinite(cut) else frame["score"].abs()
        frame["error"] = np.where(wrong, margin, np.nan)
        frame = frame[wrong]
    else:
        frame["error"] = (frame["score"].rank(pct=True) - frame["gold"].rank(pct=True)).abs()
    frame = frame.sort_values("error", ascending=False, kind="stable").head(limit)
    if gold.terms is not None:
        frame = frame.merge(gold.terms, on=C.PAIR_ID, how="left")
        frame = frame[[C.PAIR_ID, C.TERM_1, C.TERM_2, "gold", "score", "error"]]
    return frame.reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# Category separation
# ---------------------------------------------------------------------------------------


def category_separation(
    terms_frame: pd.DataFrame,
    embedding_path,
    fmt: str | None = None,
    metrics: Sequence[str] | None = None,
    *,
    close: tuple[str, str],
    distant: str,
    category_column: str = "category",
    term_column: str = "term",
    progress: Progress | None = None,
    **score_options,
) -> pd.DataFrame:
    """Relative overlap error O (Schulz & Juric 2020, §5.3) for user-given term categories.

    Every term of the first close category is paired with every term of the second close
    category and of the distant one; the pairs are scored with :func:`score_pairs` and
    :func:`~medsim_annot.embeddings.evaluate.relative_overlap_error` counts the triples where
    the close pair is not more similar than the distant pair.

    Returns
    -------
    DataFrame
        One row per metric: ``metric``, ``O``, ``errors``, ``n_a``, ``n_b``, ``n_c`` (terms
        encoded), ``sim_close`` and ``sim_distant`` (mean similarities).
    """
    for col in (term_column, category_column):
        if col not in terms_frame.columns:
            raise InputError([Problem(t("required column is missing"), column=col)])
    cats = terms_frame[category_column].astype(str).str.strip()
    terms = terms_frame[term_column].astype(str).str.strip()
    groups = {c: list(dict.fromkeys(terms[cats == c])) for c in (*close, distant)}
    for c, ts in groups.items():
        if not ts:
            raise InputError.single(
                t("category '{category}' has no terms", category=c), column=category_column
            )
    A, B, Cd = groups[close[0]], groups[close[1]], groups[distant]
    rows = [(a, b) for a in A for b in B] + [(a, c) for a in A for c in Cd]
    pairs = pd.DataFrame(
        {
            C.PAIR_ID: [f"x{i}" for i in range(len(rows))],
            C.TERM_1: [r[0] for r in rows],
            C.TERM_2: [r[1] for r in rows],
        }
    )
    scores = score_pairs(pairs, embedding_path, fmt, metrics, progress, **score_options)
    out = []
    n_ab = len(A) * len(B)
    for m in [c for c in scores.columns if c != C.PAIR_ID]:
        v = scores[m].to_numpy()
        S1 = v[:n_ab].reshape(len(A), len(B))
        S2 = v[n_ab:].reshape(len(A), len(Cd))
        O, count, (na, nb, nc) = ev.relative_overlap_error(S1, S2)
        out.append(
            {
                "metric": m,
                "O": O,
                "errors": count,
                "n_a": na,
                "n_b": nb,
                "n_c": nc,
                "sim_close": float(np.nanmean(S1)) if np.isfinite(S1).any() else float("nan"),
                "sim_distant": float(np.nanmean(S2)) if np.isfinite(S2).any() else float("nan"),
            }
        )
    return pd.DataFrame(out)
