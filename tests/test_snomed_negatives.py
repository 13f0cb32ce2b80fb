"""Negatives checked by property on a synthetic release of a few hundred invented concepts
(plus the hand-made edge cases): balanced 1:1, never similar directly or indirectly, never
a positive, never a case variant, never drawn twice, and -- for the Levenshtein strategy --
the nearest allowed term, compared against brute force. The fast search itself is compared
with brute force on random pools (hypothesis)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from medsim_annot.builders import nearest, snomed
from medsim_annot.builders.rf2 import read_release
from medsim_annot.builders.synthetic_rf2 import (
    FSN,
    MODEL_MODULE,
    SYNONYM,
    generate_release,
    verhoeff_valid,
)
from tests.test_snomed_rules import handmade_release


def _current(rows):
    latest = {}
    for row in rows:
        if row[0] not in latest or row[1] >= latest[row[0]][1]:
            latest[row[0]] = row
    return latest.values()


def _key(a: str, b: str):
    a, b = a.lower(), b.lower()
    return (a, b) if a <= b else (b, a)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    release = generate_release(300, seed=11)
    release, _ = handmade_release(release)
    folder = tmp_path_factory.mktemp("bulk")
    release.write(folder, "full")
    result = snomed.build_datasets(read_release(folder), threshold=5, seed=42)
    return release, result


@pytest.fixture(scope="module")
def similar(built):
    """Independently of the builder: term -> terms similar to it directly or indirectly
    (sharing a concept or an association pair with it, or with a term that does)."""
    release, result = built
    concepts = {r[0]: r for r in _current(release.concepts)}
    descs = list(_current(release.descriptions))
    terms: dict[str, set[str]] = {}
    fsn_rows = sorted((d for d in descs if d[6] == FSN), key=lambda d: (d[2] != "1", -int(d[1])))
    recent_fsn: dict[str, str] = {}
    for d in fsn_rows:
        recent_fsn.setdefault(d[4], snomed.clean_fsn(d[7]))
    for d in descs:
        if d[6] == SYNONYM and d[2] == "1":
            terms.setdefault(d[4], set()).add(d[7].lower())
    groups = []
    for cid, row in concepts.items():
        if row[2] == "1" and row[3] != MODEL_MODULE:
            groups.append(terms.get(cid, set()) | {recent_fsn[cid].lower()})
    for name in snomed.REFSETS:
        pos = result.positives.pairs[name]
        for a, b, s in zip(pos["term_1"], pos["term_2"], pos["concept_id_1"]):
            groups.append({a.lower(), b.lower()})
            groups.append(terms.get(s, set()) | {a.lower()})
    member: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        for t in g:
            member.setdefault(t, []).append(i)

    def related(term: str) -> set[str]:
        one = {t for g in member.get(term.lower(), []) for t in groups[g]} | {term.lower()}
        return {t for u in one for g in member.get(u, []) for t in groups[g]} | one

    return related


def _files(result, strategy=None):
    return [(k, f) for k, f in result.files.items() if strategy in (None, k[2])]


def test_ids_of_the_synthetic_release_have_valid_check_digits(built):
    release, _ = built
    ids = (
        {r[0] for r in release.concepts}
        | {r[0] for r in release.descriptions}
        | {r[5] for r in release.associations}
        | {r[6] for r in release.associations}
    )
    assert len(ids) > 600
    assert all(verhoeff_valid(i) for i in ids)


def test_release_is_large_and_every_file_has_pairs(built):
    _, result = built
    assert len(result.files) == 20
    assert result.positives.pairs["syn-syn"].shape[0] > 300
    for key, frame in result.files.items():
        assert (frame["auto_label"] == 1).sum() > 0, key


def test_balanced_one_negative_per_positive(built):
    _, result = built
    assert all(v == 0 for v in result.missing_negatives.values()), result.missing_negatives
    for key, frame in result.files.items():
        pos = frame[frame["auto_label"] == 1]
        neg = frame[frame["auto_label"] == 0]
        assert len(pos) == len(neg), key
        # each positive's term_1 gets exactly one negative
        assert Counter(pos["term_1"]) == Counter(neg["term_1"]), key


def test_negatives_never_positive_case_variant_or_repeated(built):
    _, result = built
    every_positive = {
        _key(a, b)
        for f in result.positives.pairs.values()
        for a, b in zip(f["term_1"], f["term_2"])
    }
    for key, frame in result.files.items():
        neg = frame[frame["auto_label"] == 0]
        keys = [_key(a, b) for a, b in zip(neg["term_1"], neg["term_2"])]
        assert all(a != b for a, b in keys), key
        assert not set(keys) & every_positive, key
        assert len(set(keys)) == len(keys), key


def test_negatives_never_similar_directly_or_indirectly(built, similar):
    _, result = built
    for key, frame in result.files.items():
        neg = frame[frame["auto_label"] == 0]
        for a, b in zip(neg["term_1"], neg["term_2"]):
            assert b.lower() not in similar(a), (key, a, b)


def test_random_negatives_take_term_2_of_another_positive(built):
    _, result = built
    for key, frame in _files(result, "random"):
        pos = frame[frame["auto_label"] == 1]
        neg = frame[frame["auto_label"] == 0]
        assert set(neg["term_2"]) <= set(pos["term_2"]), key


def test_levenshtein_negatives_are_the_nearest_allowed_terms(built, similar):
    """Brute force: no allowed term of the dataset is strictly nearer to term_1 than the
    chosen one, except terms already drawn as negatives of term_1 in the same file."""
    _, result = built
    checked = 0
    for key, frame in _files(result, "levenshtein"):
        pos = frame[frame["auto_label"] == 1]
        neg = frame[frame["auto_label"] == 0]
        pool = sorted({t.lower() for t in pos["term_1"]} | {t.lower() for t in pos["term_2"]})
        drawn = {_key(a, b) for a, b in zip(neg["term_1"], neg["term_2"])}
        for a, b in zip(neg["term_1"], neg["term_2"]):
            rel = similar(a)
            d = Levenshtein.distance(a.lower(), b.lower())
            assert b.lower() in pool
            for p in pool:
                if p in rel:
                    continue
                dp = Levenshtein.distance(a.lower(), p)
                if dp < d:
                    assert _key(a, p) in drawn, (key, a, b, d, p, dp)
            checked += 1
    assert checked > 500


def test_levenshtein_negatives_are_closer_than_random_ones(built):
    stats = built[1].statistics
    rows = stats[(stats["difficulty"] == "all") & stats["dataset"].isin(["fsn-syn", "syn-syn"])]
    assert (rows["mean_distance_levenshtein"] < rows["mean_distance_random"]).all()


def test_statistics_match_the_files(built):
    _, result = built
    stats = result.statistics.set_index(["dataset", "difficulty"])
    for (name, difficulty, strategy), frame in result.files.items():
        pos = frame[frame["auto_label"] == 1]
        neg = frame[frame["auto_label"] == 0]
        row = stats.loc[(name, difficulty)]
        assert row["positives"] == len(pos)
        assert row[f"negatives_{strategy}"] == len(neg)
        dist = [
            Levenshtein.distance(a.lower(), b.lower()) for a, b in zip(neg["term_1"], neg["term_2"])
        ]
        assert row[f"mean_distance_{strategy}"] == pytest.approx(np.mean(dist), abs=1e-4)
    assert stats.loc[("syn-syn", "all"), "positives"] == (
        stats.loc[("syn-syn", "easy"), "positives"] + stats.loc[("syn-syn", "hard"), "positives"]
    )


def test_ties_are_broken_by_the_seed(tmp_path):
    """Four pool terms at the same distance: different seeds pick different ones, the same
    seed the same one."""
    import pandas as pd

    pos = pd.DataFrame(
        {
            "term_1": ["Abcd", "Zzzz", "Yyyy", "Xxxx", "Wwww"],
            "term_2": ["Qqqq qq", "Abce", "Abcf", "Abcg", "Abch"],
            "concept_id_1": list("12345"),
            "concept_id_2": list("12345"),
        }
    )
    graph = snomed.SimilarityGraph([[a, b] for a, b in zip(pos["term_1"], pos["term_2"])])
    picks = set()
    for seed in range(12):
        neg = snomed.draw_negatives(pos, graph, "levenshtein", np.random.default_rng(seed))
        first = neg[neg["term_1"] == "Abcd"]["term_2"].iloc[0]
        again = snomed.draw_negatives(pos, graph, "levenshtein", np.random.default_rng(seed))
        assert again["term_2"].tolist() == neg["term_2"].tolist()
        picks.add(first)
    assert picks == {"Abce", "Abcf", "Abcg", "Abch"}


# ---------------------------------------------------------------- the search vs brute force
_words = st.text(alphabet="abc ", min_size=0, max_size=9)


@given(
    pool=st.lists(_words, min_size=1, max_size=40, unique=True),
    queries=st.lists(_words, min_size=1, max_size=8),
    need=st.integers(1, 4),
    data=st.data(),
)
def test_nearest_allowed_equals_brute_force(pool, queries, need, data):
    excluded = [
        data.draw(st.lists(st.integers(0, len(pool) - 1), max_size=len(pool))) for _ in queries
    ]
    got = nearest.nearest_allowed(
        queries,
        pool,
        excluded=excluded,
        need=need,
        workers=1,
        neighbours=data.draw(st.integers(0, 3)),
    )
    for q, ex, (idx, dist) in zip(queries, excluded, got):
        allowed = sorted(
            (Levenshtein.distance(q, p), i) for i, p in enumerate(pool) if i not in set(ex)
        )
        if len(allowed) >= need:
            bound = allowed[need - 1][0]
            expected = [(d, i) for d, i in allowed if d <= bound]
        else:
            expected = allowed
        assert list(zip(dist.tolist(), idx.tolist())) == expected
        best, at = nearest.brute_force_nearest(q, pool, ex)
        if expected:
            assert best == expected[0][0] and at == [i for d, i in expected if d == best]


def test_nearest_allowed_on_realistic_terms_with_small_blocks():
    from medsim_annot.builders.synthetic_rf2 import invented_terms

    pool = [t.lower() for t in invented_terms(1500, seed=5)]
    rng = np.random.default_rng(0)
    queries = [pool[i] for i in rng.choice(len(pool), 60, replace=False)]
    excluded = [[pool.index(q)] + rng.choice(len(pool), 5).tolist() for q in queries]
    # a tiny block budget forces many blocks and the growing-window rounds
    got = nearest.nearest_allowed(
        queries, pool, excluded=excluded, need=2, max_cells=500, neighbours=0
    )
    for q, ex, (idx, dist) in zip(queries, excluded, got):
        allowed = sorted((Levenshtein.distance(q, p), i) for i, p in enumerate(pool) if i not in ex)
        bound = allowed[1][0]
        assert list(zip(dist.tolist(), idx.tolist())) == [(d, i) for d, i in allowed if d <= bound]
