r"""Lexical baselines: how far spelling alone goes.

Schulz & Juric (2020) built "easy" and "hard" datasets by the Levenshtein distance of the
terms: in the hard ones, similar pairs are spelled *less* alike than dissimilar ones. These two
string similarities show why that split matters — they do well on easy pairs and fail on hard
ones by construction.

* ``levenshtein``: :math:`1 - \mathrm{lev}(a, b) / \max(|a|, |b|)` (rapidfuzz's normalised
  Levenshtein similarity, unit costs), on the terms lower-cased with runs of whitespace
  collapsed.
* ``char_ngram``: cosine of the TF-IDF vectors of character n-grams (scikit-learn
  ``TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4))`` fitted on all terms of the
  pairs; rows are L2-normalised, so the dot product is the cosine).

A term that is empty after normalisation gives NaN.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

LEXICAL_METRICS = {"levenshtein": "levenshtein", "char-ngram": "char_ngram"}
_SPACE = re.compile(r"\s+")


def _normalise(term: str) -> str:
    return _SPACE.sub(" ", str(term).lower()).strip()


def levenshtein_similarity(terms_1: Sequence[str], terms_2: Sequence[str]) -> np.ndarray:
    """Normalised Levenshtein similarity of each pair, in [0, 1].

    Examples
    --------
    >>> levenshtein_similarity(["Kitten", "fever"], ["sitting", "FEVER "]).round(4).tolist()
    [0.5714, 1.0]
    """
    a = [_normalise(t) for t in terms_1]
    b = [_normalise(t) for t in terms_2]
    if not a:
        return np.zeros(0)
    out = np.asarray(
        cpdist(a, b, scorer=Levenshtein.normalized_similarity, workers=1), dtype=np.float64
    )
    empty = np.array([not x or not y for x, y in zip(a, b)])
    out[empty] = np.nan
    return out


def char_ngram_similarity(
    terms_1: Sequence[str],
    terms_2: Sequence[str],
    *,
    ngram_range: tuple[int, int] = (2, 4),
    analyzer: str = "char_wb",
) -> np.ndarray:
    """Cosine of character n-gram TF-IDF vectors of each pair, in [0, 1].

    Examples
    --------
    >>> s = char_ngram_similarity(["heart attack", "fever"], ["Heart Attack", "pyrexia"])
    >>> s.round(4).tolist()
    [1.0, 0.0]
    """
    # scikit-learn: heavy (~0.3 s), loaded only when this measure runs (CLI start-up)
    from sklearn.feature_extraction.text import TfidfVectorizer

    a = [_normalise(t) for t in terms_1]
    b = [_normalise(t) for t in terms_2]
    out = np.full(len(a), np.nan)
    if not a:
        return out
    vocab = sorted((set(a) | set(b)) - {""})
    if not vocab:
        return out
    vec = TfidfVectorizer(analyzer=analyzer, ngram_range=ngram_range, lowercase=False, norm="l2")
    M = vec.fit_transform(vocab)
    row = {t: i for i, t in enumerate(vocab)}
    ok = np.array([bool(x) and bool(y) for x, y in zip(a, b)])
    if ok.any():
        ia = [row[x] for x, k in zip(a, ok) if k]
        ib = [row[y] for y, k in zip(b, ok) if k]
        out[ok] = np.asarray(M[ia].multiply(M[ib]).sum(axis=1)).ravel()
    return out
