"""Loading word embeddings (word2vec text/binary, GloVe, fastText .bin with subwords), the
memory-mapped cache, tokenising and the lexical baselines."""

from __future__ import annotations

import os

import numpy as np
import pytest

from data_schemas.errors import InputError
from medsim_annot.embeddings.lexical import char_ngram_similarity, levenshtein_similarity
from medsim_annot.embeddings.loaders import detect_format, load_word_vectors
from medsim_annot.embeddings.tokenise import Tokeniser, tokenise

WORDS = ["heart", "attack", "myocardial", "infarction", "fever", "pyrexia"]


@pytest.fixture
def vectors():
    rng = np.random.default_rng(0)
    return rng.normal(size=(len(WORDS), 5)).astype(np.float32)


def write_w2v_text(path, words, V, header=True):
    with open(path, "w", encoding="utf-8") as fh:
        if header:
            fh.write(f"{len(words)} {V.shape[1]}\n")
        for w, v in zip(words, V):
            fh.write(w + " " + " ".join(repr(float(x)) for x in v) + "\n")
    return path


def write_w2v_binary(path, words, V):
    with open(path, "wb") as fh:
        fh.write(f"{len(words)} {V.shape[1]}\n".encode())
        for w, v in zip(words, V):
            fh.write(w.encode("utf-8") + b" " + v.astype("<f4").tobytes() + b"\n")
    return path


@pytest.mark.parametrize("kind", ["word2vec", "word2vec-binary", "glove"])
def test_load_formats_and_lookup(tmp_path, vectors, kind):
    if kind == "word2vec-binary":
        path = write_w2v_binary(tmp_path / "e.bin", WORDS, vectors)
    else:
        path = write_w2v_text(tmp_path / "e.txt", WORDS, vectors, header=(kind == "word2vec"))
    assert detect_format(path) == kind
    wv = load_word_vectors(path, cache_dir=tmp_path / "cache")
    assert wv.converted and len(wv) == len(WORDS) and wv.dim == 5
    matrix, rows = wv.lookup(["fever", "unknownword", "heart", "fever"])
    assert set(rows) == {"fever", "heart"}
    np.testing.assert_allclose(matrix[rows["fever"]], vectors[4], rtol=1e-6)
    np.testing.assert_allclose(matrix[rows["heart"]], vectors[0], rtol=1e-6)
    assert matrix.dtype == np.float64


def test_cache_is_reused_and_memory_mapped(tmp_path, vectors):
    path = write_w2v_binary(tmp_path / "e.bin", WORDS, vectors)
    first = load_word_vectors(path, "word2vec-binary", cache_dir=tmp_path / "c")
    second = load_word_vectors(path, "word2vec-binary", cache_dir=tmp_path / "c")
    assert first.converted and not second.converted
    assert isinstance(second.vectors, np.memmap)
    assert isinstance(second.keyed.vectors, np.memmap)  # gensim native format, memory-mapped
    assert second.keyed.key_to_index["fever"] == 4
    assert second.cache_path == first.cache_path
    # changing the source converts again
    write_w2v_binary(path, WORDS, vectors * 2)
    os.utime(path, ns=(1, 1))
    third = load_word_vectors(path, "word2vec-binary", cache_dir=tmp_path / "c")
    assert third.converted and third.cache_path != first.cache_path
    m, rows = third.lookup(["attack"])
    np.testing.assert_allclose(m[0], vectors[1] * 2, rtol=1e-6)


def test_cache_dir_from_environment(tmp_path, vectors, monkeypatch):
    monkeypatch.setenv("MEDSIM_CACHE_DIR", str(tmp_path / "envcache"))
    path = write_w2v_text(tmp_path / "e.txt", WORDS, vectors)
    wv = load_word_vectors(path)
    assert str(tmp_path / "envcache" / "embeddings") in wv.cache_path


def test_fasttext_bin_with_subwords(tmp_path):
    from gensim.models import FastText
    from gensim.models.fasttext import load_facebook_vectors, save_facebook_model

    sentences = [
        ["acute", "myocardial", "infarction"],
        ["heart", "attack"],
        ["chronic", "kidney", "disease"],
        ["renal", "failure"],
        ["fever", "pyrexia"],
    ] * 5
    model = FastText(
        vector_size=8,
        window=2,
        min_count=1,
        epochs=2,
        bucket=2000,
        min_n=3,
        max_n=5,
        seed=1,
        workers=1,
    )
    model.build_vocab(corpus_iterable=sentences)
    model.train(corpus_iterable=sentences, total_examples=len(sentences), epochs=2)
    path = tmp_path / "ft.bin"
    save_facebook_model(model, str(path))
    assert detect_format(path) == "fasttext"
    wv = load_word_vectors(path, cache_dir=tmp_path / "c")
    again = load_word_vectors(path, cache_dir=tmp_path / "c")
    assert wv.converted and not again.converted
    gensim_kv = load_facebook_vectors(str(path))
    m, rows = again.lookup(["kidney", "infarctions", "cardiology"])
    assert set(rows) == {"kidney", "infarctions", "cardiology"}  # OOV words via subwords
    for w in rows:
        np.testing.assert_allclose(m[rows[w]], gensim_kv.get_vector(w), rtol=1e-5, atol=1e-7)
    # scoring: an unseen word is covered through its subwords
    import pandas as pd

    from medsim_annot.services.scoring import score_pairs

    pairs = pd.DataFrame({"pair_id": ["a"], "term_1": ["Infarctions"], "term_2": ["heart attack"]})
    out = score_pairs(pairs, path, None, ["avg_cos", "fj"], cache_dir=tmp_path / "c")
    assert out.attrs["coverage"]["format"] == "fasttext" and out.attrs["coverage"]["oov_words"] == 0
    assert out[["avg_cos", "fj"]].notna().all().all()


def test_unreadable_embedding_is_an_input_error(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("3 4\nheart 1 2\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_word_vectors(bad, "word2vec", cache_dir=tmp_path / "c")
    assert "bad.txt" in str(exc.value)
    with pytest.raises(InputError, match="not found"):
        load_word_vectors(tmp_path / "missing.bin", cache_dir=tmp_path / "c")
    assert not any((tmp_path / "c").glob("bad.txt-*"))  # nothing half-written


def test_tokeniser_default_and_options():
    assert tokenise("Ménière's disease") == ["ménière", "s", "disease"]
    assert tokenise("  T2DM -- type_2 diabetes ") == ["t2dm", "type", "2", "diabetes"]
    assert Tokeniser(lowercase=False)("Heart Attack") == ["Heart", "Attack"]
    assert Tokeniser(split=r"\s+")("covid-19 pneumonia") == ["covid-19", "pneumonia"]
    assert Tokeniser(stopwords=frozenset({"of", "the"}))("fracture of the femur") == [
        "fracture",
        "femur",
    ]
    assert tokenise("fever fever") == ["fever", "fever"]  # repeats kept
    with pytest.raises(ValueError, match="regular expression"):
        Tokeniser(split="(")


def test_levenshtein_and_char_ngram():
    lev = levenshtein_similarity(["kitten", "Fever", "abc"], ["sitting", "fever", "xyz"])
    np.testing.assert_allclose(lev, [1 - 3 / 7, 1.0, 0.0])
    tf = char_ngram_similarity(
        ["heart attack", "heart attack", "fever"], ["heart attack", "heart failure", "pyrexia"]
    )
    assert tf[0] == pytest.approx(1.0)
    assert 0 < tf[1] < 1
    assert tf[2] == pytest.approx(0.0)


def test_vocabulary_index_handles_hash_collisions_and_unicode(tmp_path, monkeypatch):
    from medsim_annot.embeddings import loaders

    words = ["ménière", "naïve", "heart", "Heart", "日本"]
    V = np.arange(len(words) * 3, dtype=np.float32).reshape(len(words), 3)
    path = write_w2v_text(tmp_path / "u.txt", words, V)
    monkeypatch.setattr(loaders, "_word_hash", lambda w: len(w) % 2)  # collisions everywhere
    wv = load_word_vectors(path, cache_dir=tmp_path / "c")
    idx = wv.index_of(["heart", "Heart", "日本", "ménière", "naïve", "absent", ""])
    assert idx.tolist() == [2, 3, 4, 0, 1, -1, -1]
    m, rows = wv.lookup(["日本", "absent"])
    assert set(rows) == {"日本"}
    np.testing.assert_array_equal(m[rows["日本"]], V[4])
