"""Word embeddings from disk: word2vec (text, binary), GloVe (text, no header), fastText ``.bin``.

Real biomedical embeddings are large (millions of words), so a file is read with gensim only
once and converted to gensim's native format in a cache folder; later loads memory-map the
converted vectors (``mmap='r'``, well under a second for a million words, thanks to a
memory-mapped vocabulary index written next to gensim's files) and
:meth:`WordVectors.lookup` reads only the rows of the words actually needed.

The cache folder is ``$MEDSIM_CACHE_DIR/embeddings`` when ``MEDSIM_CACHE_DIR`` is set, else
``.medsim-cache/embeddings`` in the working directory. A converted copy is keyed by the
source file's absolute path, size, modification time and format, so editing or replacing the
source converts it again. Conversion writes to a temporary folder and renames it, so an
interrupted conversion never leaves a half-written cache.

fastText ``.bin`` files keep their subword (character n-gram) vectors: a word missing from the
vocabulary gets the mean of its n-gram vectors, exactly as gensim's
``FastTextKeyedVectors.get_vector`` and Facebook's reference implementation do. The
vocabulary vectors go into gensim's native format; the n-gram matrix is stored next to it as a
``.npy`` file (also memory-mapped), because gensim's own fastText format recomputes every
word's vector on load, which takes minutes for a million words.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from data_schemas.errors import InputError
from medsim_annot.i18n import t

WORD_FORMATS = ("word2vec", "word2vec-binary", "glove", "fasttext")
_FASTTEXT_MAGIC = 793712314  # first int32 of a Facebook fastText .bin file
_CACHE_VERSION = 2


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The folder for converted embeddings: *cache_dir*, else ``$MEDSIM_CACHE_DIR/embeddings``,
    else ``.medsim-cache/embeddings``."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("MEDSIM_CACHE_DIR")
    return (Path(env) if env else Path(".medsim-cache")) / "embeddings"


def detect_format(path: str | os.PathLike) -> str:
    """Guess the format of an embedding file from its first bytes.

    A fastText ``.bin`` starts with a magic number; a word2vec file starts with a header line
    ``<words> <dimensions>``, followed by text or by binary floats; anything else readable as
    text is taken as GloVe (``word v1 v2 ...`` with no header).
    """
    p = Path(path)
    if not p.exists():
        raise InputError.single(t("embedding file not found"), file=str(p))
    if p.is_dir():
        return "sentence-transformers"
    with open(p, "rb") as fh:
        head = fh.read(1 << 20)
    if len(head) >= 4 and struct.unpack("<i", head[:4])[0] == _FASTTEXT_MAGIC:
        return "fasttext"
    first, _, rest = head.partition(b"\n")
    parts = first.split()
    if len(parts) == 2 and all(x.isdigit() for x in parts):
        dim = int(parts[1])
        second = rest.split(b"\n", 1)[0].split(b" ")
        try:
            values = [float(v) for v in second[1:] if v.strip()]
            if len(values) == dim:
                return "word2vec"
        except ValueError:
            pass
        return "word2vec-binary"
    return "glove"


def _word_hash(word: str) -> int:
    """64-bit hash of a word (BLAKE2b of its UTF-8 bytes), the key of the vocabulary index."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass
class WordVectors:
    """A memory-mapped word embedding.

    Attributes
    ----------
    vectors : ndarray, shape (words, d), float32, memory-mapped
        The vocabulary vectors (gensim's ``vectors.npy`` of the converted copy).
    source : str
        The original file.
    fmt : str
        One of :data:`WORD_FORMATS`.
    ngrams : ndarray or None
        fastText subword vectors (buckets x d), memory-mapped; ``None`` for other formats.

    Notes
    -----
    Words are found through a vocabulary index stored next to gensim's files: the sorted
    64-bit hashes of the words, the word order, and the words' UTF-8 bytes with offsets (to
    confirm a hash match), all memory-mapped. Loading therefore reads no per-word Python
    objects (unpickling gensim's ``key_to_index`` for a million words takes seconds);
    :attr:`keyed` loads the full gensim ``KeyedVectors`` on demand.
    """

    vectors: np.ndarray
    source: str
    fmt: str
    cache_path: str | None = None
    ngrams: np.ndarray | None = None
    min_n: int = 0
    max_n: int = 0
    bucket: int = 0
    load_seconds: float = 0.0
    converted: bool = False
    _hashes: np.ndarray | None = field(default=None, repr=False)
    _order: np.ndarray | None = field(default=None, repr=False)
    _blob: np.ndarray | None = field(default=None, repr=False)
    _offsets: np.ndarray | None = field(default=None, repr=False)
    _keyed: object = field(default=None, repr=False)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def keyed(self):
        """The converted copy as gensim ``KeyedVectors`` (memory-mapped; loaded on first use)."""
        if self._keyed is None:
            if self.cache_path is None:
                raise ValueError("these vectors have no converted copy on disk to load")
            # gensim: heavy (~0.1 s), loaded only when word vectors are read (CLI start-up)
            from gensim.models import KeyedVectors

            self._keyed = KeyedVectors.load(str(Path(self.cache_path) / "vectors.kv"), mmap="r")
        return self._keyed

    def _word(self, i: int) -> bytes:
        blob, offsets = self._blob, self._offsets
        if blob is None or offsets is None:
            raise ValueError("the vocabulary index of this cache is not loaded")
        return blob[offsets[i] : offsets[i + 1]].tobytes()

    def index_of(self, words: list[str]) -> np.ndarray:
        """Row of each word in :attr:`vectors`, ``-1`` when not in the vocabulary."""
        out = np.full(len(words), -1, dtype=np.int64)
        if not words:
            return out
        hashes, order = self._hashes, self._order
        if hashes is None or order is None:
            raise ValueError("the vocabulary index of this cache is not loaded")
        h = np.fromiter((_word_hash(w) for w in words), dtype=np.uint64, count=len(words))
        pos = np.searchsorted(hashes, h, side="left")
        n = len(hashes)
        for k, (w, p) in enumerate(zip(words, pos.tolist())):
            target = w.encode("utf-8")
            while p < n and hashes[p] == h[k]:
                row = int(order[p])
                if self._word(row) == target:
                    out[k] = row
                    break
                p += 1
        return out

    def lookup(self, words: Iterable[str]) -> tuple[np.ndarray, dict[str, int]]:
        """Read the vectors of *words* (distinct; others are skipped).

        Only the rows of these words are read from the memory-mapped file.

        Returns
        -------
        matrix : ndarray, shape (k, d), float64
            Vectors of the words found (in the vocabulary, or from fastText subwords).
        rows : dict
            Word to row of *matrix*; words not found are absent.
        """
        distinct = list(dict.fromkeys(words))
        idx = self.index_of(distinct)
        found = idx >= 0
        known = [w for w, f in zip(distinct, found.tolist()) if f]
        rows: dict[str, int] = {w: r for r, w in enumerate(known)}
        parts = []
        if known:
            kidx = idx[found]
            order = np.argsort(kidx, kind="stable")  # read the file front to back
            block = np.empty((len(known), self.dim), dtype=np.float64)
            block[order] = np.asarray(self.vectors[kidx[order]], dtype=np.float64)
            parts.append(block)
        if self.ngrams is not None and self.bucket > 0:
            # gensim: heavy (~0.1 s), loaded only when word vectors are read (CLI start-up)
            from gensim.models.fasttext import ft_ngram_hashes

            extra = []
            for w in distinct:
                if w in rows:
                    continue
                hashes = ft_ngram_hashes(w, self.min_n, self.max_n, self.bucket)
                if len(hashes) == 0:  # no n-gram at all: the word stays unknown
                    continue
                vec = np.zeros(self.dim, dtype=np.float32)
                for h in hashes:  # float32 accumulation, as gensim does
                    vec += self.ngrams[h]
                extra.append(vec / len(hashes))
                rows[w] = len(rows)
            if extra:
                parts.append(np.asarray(extra, dtype=np.float64))
        matrix = np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float64)
        return matrix, rows


def _source_key(path: Path, fmt: str) -> str:
    st = path.stat()
    raw = f"{_CACHE_VERSION}|{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{fmt}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def load_word_vectors(
    path: str | os.PathLike,
    fmt: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: Callable[[str], None] | None = None,
) -> WordVectors:
    """Load a word embedding, converting it to the cache on first use.

    Parameters
    ----------
    path : path-like
        The embedding file.
    fmt : {"word2vec", "word2vec-binary", "glove", "fasttext"}, optional
        The file format; guessed with :func:`detect_format` when omitted.
    cache_dir : path-like, optional
        Where converted copies live (default :func:`cache_root`).
    progress : callable(str), optional
        Told "converting ..." before a (slow) first conversion.

    Returns
    -------
    WordVectors
        Memory-mapped vectors; ``converted`` tells whether this call converted the file.

    Raises
    ------
    InputError
        The file is missing or not readable in the given format.
    """
    source = Path(path)
    if not source.exists():
        raise InputError.single(t("embedding file not found"), file=str(source))
    if source.is_dir():
        raise InputError.single(
            t(
                "is a folder; a word embedding is one file (use the format "
                "sentence-transformers (format) for a model folder)"
            ),
            file=str(source),
        )
    fmt = fmt or detect_format(source)
    if fmt not in WORD_FORMATS:
        raise InputError.single(
            t(
                "unknown word-embedding format '{format}'; use one of {formats}",
                format=fmt,
                formats=", ".join(WORD_FORMATS),
            ),
            file=str(source),
        )
    root = cache_root(cache_dir)
    key = _source_key(source, fmt)
    target = root / f"{source.name}-{key}"
    converted = False
    if not (target / "meta.json").exists():
        if progress is not None:
            progress(f"converting {source.name} to the cache (first use)")
        _convert(source, fmt, root, target)
        converted = True
    t0 = time.perf_counter()
    wv = _load_cached(target, str(source), fmt)
    wv.load_seconds = time.perf_counter() - t0
    wv.converted = converted
    return wv


def _read_source(source: Path, fmt: str):
    # gensim: heavy (~0.1 s), loaded only when word vectors are read (CLI start-up)
    from gensim.models import KeyedVectors

    try:
        if fmt == "fasttext":
            # gensim: heavy (~0.1 s), loaded only when word vectors are read (CLI start-up)
            from gensim.models.fasttext import load_facebook_vectors

            return load_facebook_vectors(str(source))
        return KeyedVectors.load_word2vec_format(
            str(source),
            binary=(fmt == "word2vec-binary"),
            no_header=(fmt == "glove"),
            unicode_errors="replace",
        )
    except (
        ValueError,
        EOFError,
        UnicodeDecodeError,
        struct.error,
        IndexError,
        KeyError,
        NotImplementedError,
        AssertionError,
        OverflowError,
        MemoryError,
    ) as exc:
        raise InputError.single(
            t(
                "not a readable {format} embedding file ({error})",
                format=fmt,
                error=f"{exc.__class__.__name__}: {exc}",
            ),
            file=str(source),
        ) from None


def _convert(source: Path, fmt: str, root: Path, target: Path) -> None:
    # gensim: heavy (~0.1 s), loaded only when word vectors are read (CLI start-up)
    from gensim.models import KeyedVectors

    loaded = _read_source(source, fmt)
    if len(loaded.index_to_key) == 0:
        raise InputError.single(t("the embedding has no words"), file=str(source))
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=root))
    try:
        meta = {
            "source": str(source.resolve()),
            "format": fmt,
            "words": len(loaded.index_to_key),
            "dim": int(loaded.vector_size),
            "version": _CACHE_VERSION,
        }
        if fmt == "fasttext":
            kv = KeyedVectors(loaded.vector_size, count=0, dtype=np.float32)
            kv.add_vectors(list(loaded.index_to_key), np.asarray(loaded.vectors, dtype=np.float32))
            np.save(tmp / "ngrams.npy", np.asarray(loaded.vectors_ngrams, dtype=np.float32))
            meta.update(min_n=int(loaded.min_n), max_n=int(loaded.max_n), bucket=int(loaded.bucket))
        else:
            kv = loaded
        kv.save(str(tmp / "vectors.kv"), sep_limit=0)
        _write_index(tmp, list(kv.index_to_key))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished the same conversion first
            if not (target / "meta.json").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_index(folder: Path, keys: list[str]) -> None:
    """The memory-mappable vocabulary index (see :class:`WordVectors`)."""
    encoded = [k.encode("utf-8") for k in keys]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    hashes = np.fromiter((_word_hash(k) for k in keys), dtype=np.uint64, count=len(keys))
    order = np.argsort(hashes, kind="stable")
    np.save(folder / "index_hashes.npy", hashes[order])
    np.save(folder / "index_order.npy", order.astype(np.int64))
    np.save(folder / "index_blob.npy", blob)
    np.save(folder / "index_offsets.npy", offsets)


def _load_cached(target: Path, source: str, fmt: str) -> WordVectors:
    meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))

    def load(name):
        return np.load(target / name, mmap_mode="r")

    wv = WordVectors(
        vectors=load("vectors.kv.vectors.npy"),
        source=source,
        fmt=fmt,
        cache_path=str(target),
        _hashes=load("index_hashes.npy"),
        _order=load("index_order.npy"),
        _blob=load("index_blob.npy"),
        _offsets=load("index_offsets.npy"),
    )
    if fmt == "fasttext":
        wv.ngrams = load("ngrams.npy")
        wv.min_n, wv.max_n, wv.bucket = meta["min_n"], meta["max_n"], meta["bucket"]
    return wv
