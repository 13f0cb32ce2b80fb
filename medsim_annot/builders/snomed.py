"""The 20 binary term-similarity datasets of Schulz & Juric (AAAI 2020) from an RF2 release.

Positives (section 3.1 of the paper)
    * **fsn-syn**: (clean FSN, synonym) for every active synonym of an active concept
      outside the model component module that differs from the clean FSN (ignoring case);
    * **syn-syn**: fsn-syn plus every pair of two different synonyms of one concept;
    * **possibly-equivalent-to**, **replaced-by**, **same-as**: active rows of the three
      historical association refsets, as (most recent clean FSN of the inactive source
      concept, clean FSN of the active target concept), dropped when the two terms are
      equal or the pair is already a syn-syn pair.

    Exact and reversed duplicates are removed (ignoring case); a pair is *easy* when the
    Levenshtein distance of the lower-cased terms is at most the threshold (5), else *hard*.

Negatives (section 3.2), one per positive, never similar to term_1 directly or indirectly,
never a known positive, an already drawn negative or a case variant of term_1:
    * **random**: term_1 with the term_2 of another randomly chosen positive;
    * **levenshtein**: term_1 with the nearest term (Levenshtein distance of the lower-cased
      terms) among all terms of the dataset; ties broken at random with the seed.

*Similar directly or indirectly* is computed on a graph whose groups are the term sets of
concepts (clean FSN and active synonyms; an inactive association source contributes its
most recent clean FSN and active synonyms) and the positive association pairs: a term is
excluded when it shares a group with term_1 (its own concepts, the concepts it is paired
with) or shares a group with a term that does (two steps).

The nearest-neighbour search (:func:`medsim_annot.builders.nearest.nearest_allowed`) is exact and runs at SNOMED scale
(about 300,000 queries against 600,000 terms) in minutes: an upper bound from the
lexicographic neighbours of each query, then ``rapidfuzz.process.cdist`` with
``score_cutoff`` over the window of pool terms whose length can still be within the bound
(the pool sorted by length; windows grow until enough allowed candidates are found), on all
cores, with exclusions kept in hash sets and integer arrays rather than data-frame filters.

References
----------
Schulz, C. & Juric, D. (2020). Can Embeddings Adequately Represent Medical Terminology? New
Large-Scale Medical Term Similarity Datasets Have the Answer! *Proceedings of the AAAI
Conference on Artificial Intelligence*, 34(05), 8775-8782.
https://doi.org/10.1609/aaai.v34i05.6404
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from data_schemas import columns as C
from data_schemas.pairs import stable_pair_id

from .nearest import PoolIndex, Progress, nearest_allowed
from .rf2 import Release

MODEL_MODULE = "900000000000012004"
FSN_TYPE = "900000000000003001"
SYNONYM_TYPE = "900000000000013009"
REFSETS = {
    "possibly-equivalent-to": "900000000000523009",
    "replaced-by": "900000000000526001",
    "same-as": "900000000000527005",
}
DATASETS = ("fsn-syn", "syn-syn", "possibly-equivalent-to", "replaced-by", "same-as")
STRATEGIES = C.NEGATIVE_STRATEGIES  # ("random", "levenshtein")
OUTPUT_COLUMNS = (
    C.PAIR_ID,
    C.TERM_1,
    C.TERM_2,
    C.AUTO_LABEL,
    C.DATASET,
    C.DIFFICULTY,
    C.NEGATIVE_STRATEGY,
    C.CONCEPT_ID_1,
    C.CONCEPT_ID_2,
)
STAT_COLUMNS = (
    "dataset",
    "difficulty",
    "positives",
    "negatives_random",
    "negatives_levenshtein",
    "mean_distance_positive",
    "mean_distance_random",
    "mean_distance_levenshtein",
)


def _prefixed(progress: Progress, key: tuple[str, ...]) -> Progress:
    """*progress* with the labels prefixed by *key* (``dataset/difficulty/strategy``)."""
    return lambda label, total: progress(f"{'/'.join(key)} {label}", total)


# ============================================================================ FSN cleaning
def _strip_deprecated(text: str) -> str:
    if text.startswith("[D]"):
        text = text[3:].strip()
    if text.endswith("[D]"):
        text = text[:-3].strip()
    return text


def clean_fsn(term: str) -> str:
    """The FSN without its semantic tag and without a ``[D]`` marker at its start or end.

    The rule of the AAAI 2020 authors' code (``clean_pref_term`` in babylonhealth/medisim,
    ``dataset_creation_from_SNOMED/positive_instances_utils.py``), exactly: when the FSN ends
    with ``)``, split it at its last ``" ("`` and keep the part before, unless that part ends
    with ``" or"`` or ``"&"``, or the parenthesis starts with ``&`` (then the parenthesis is
    part of the name, as in "... or (...)"). Nothing else is an exception: a name ending in
    "and" loses its tag like any other. ``[D]`` markers are removed before and after.

    >>> clean_fsn("Brenoxia of valum (disorder)")
    'Brenoxia of valum'
    >>> clean_fsn("Brenoxia (left) of valum (disorder)")
    'Brenoxia (left) of valum'
    >>> clean_fsn("Tremix of harbo or (stelan)")
    'Tremix of harbo or (stelan)'
    >>> clean_fsn("Quellin of darb and (body structure)")
    'Quellin of darb and'
    >>> clean_fsn("[D]Gorvin vexal (situation)"), clean_fsn("Gorvin vexal [D] (situation)")
    ('Gorvin vexal', 'Gorvin vexal')
    """
    text = _strip_deprecated(term.strip())
    if text.endswith(")"):
        parts = text.rsplit(" (", 1)
        if len(parts) == 2 and not parts[0].endswith((" or", "&")) and not parts[1].startswith("&"):
            text = parts[0]
    return _strip_deprecated(text)


def levenshtein_lower(a: str, b: str) -> int:
    """Levenshtein distance of the lower-cased terms (unit costs).

    >>> levenshtein_lower("Valum Brenoxia", "valum brenoxis")
    1
    """
    return Levenshtein.distance(a.lower(), b.lower())


def _pair_key(a: str, b: str) -> tuple[str, str]:
    la, lb = a.lower(), b.lower()
    return (la, lb) if la <= lb else (lb, la)


def _id_order(ids) -> list[str]:
    """Identifiers in numeric order (decimal strings without leading zeros)."""
    return sorted(ids, key=lambda s: (len(s), s))


# ============================================================================ positives
@dataclass
class Positives:
    """Positive pairs of each dataset and the similarity groups behind the exclusions.

    ``pairs[name]`` has columns ``term_1, term_2, concept_id_1, concept_id_2, distance``
    (distance of the lower-cased terms), duplicates removed, in a deterministic order.
    ``groups`` lists the term sets (concept term sets and association pairs) that define
    "similar directly or indirectly".
    """

    pairs: dict[str, pd.DataFrame]
    groups: list[list[str]] = field(default_factory=list)


def _synonym_pairs(
    ordered: list[str],
    active_fsn: dict[str, str],
    synonyms: dict[str, list[str]],
    progress: Progress | None,
) -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str, str, str]], list[list[str]]]:
    """Per concept (in *ordered*): its FSN–synonym and synonym–synonym pairs (synonyms equal
    to the FSN or to an earlier synonym, ignoring case, left out) and its group of terms."""
    fsn_syn: list[tuple[str, str, str, str]] = []
    syn_syn: list[tuple[str, str, str, str]] = []
    groups: list[list[str]] = []
    bar = progress("positives: synonyms", len(ordered)) if progress else None
    for n, cid in enumerate(ordered, start=1):
        f = active_fsn.get(cid)
        seen = {f.lower()} if f else set()
        syns = []
        for s in synonyms.get(cid, ()):
            if s.lower() not in seen:
                seen.add(s.lower())
                syns.append(s)
        pairs = [(f, s, cid, cid) for s in syns] if f else []
        fsn_syn.extend(pairs)
        syn_syn.extend(pairs)
        syn_syn.extend((a, b, cid, cid) for a, b in itertools.combinations(syns, 2))
        terms = ([f] if f else []) + syns
        if terms:
            groups.append(terms)
        if bar is not None and n % 10000 == 0:
            bar.update(10000)
    if bar is not None:
        bar.update(len(ordered) % 10000)
        bar.close()
    return fsn_syn, syn_syn, groups


def extract_positives(release: Release, progress: Progress | None = None) -> Positives:
    """All positive pairs of the five datasets from a release's current state."""
    concepts = release.concepts
    state = dict(
        zip(
            concepts["id"].astype(str),
            zip(concepts["active"].astype(str), concepts["moduleId"].astype(str)),
        )
    )
    medical = {
        cid for cid, (active, module) in state.items() if active == "1" and module != MODEL_MODULE
    }

    desc = release.descriptions
    desc = pd.DataFrame(
        {
            c: desc[c].astype(str)
            for c in ("id", "effectiveTime", "active", "conceptId", "typeId", "term")
        }
    )
    desc["term"] = desc["term"].str.strip()
    desc = desc[desc["term"] != ""]
    # The FSN of a concept: active first, then the most recent, then the smallest id.
    fsn = (
        desc[desc["typeId"] == FSN_TYPE]
        .assign(_dl=lambda f: f["id"].str.len())
        .sort_values(
            ["conceptId", "active", "effectiveTime", "_dl", "id"],
            ascending=[True, False, False, True, True],
            kind="stable",
        )
    )
    fsn = fsn.drop_duplicates("conceptId", keep="first")
    recent_fsn = {c: clean_fsn(t) for c, t in zip(fsn["conceptId"], fsn["term"])}
    active_fsn = {
        c: clean_fsn(t) for c, t, a in zip(fsn["conceptId"], fsn["term"], fsn["active"]) if a == "1"
    }
    syn = desc[(desc["typeId"] == SYNONYM_TYPE) & (desc["active"] == "1")]
    syn = syn.assign(_cl=syn["conceptId"].str.len(), _dl=syn["id"].str.len()).sort_values(
        ["_cl", "conceptId", "_dl", "id"], kind="stable"
    )
    synonyms: dict[str, list[str]] = {}
    for cid, term in zip(syn["conceptId"], syn["term"]):
        synonyms.setdefault(cid, []).append(term)

    fsn_syn, syn_syn, groups = _synonym_pairs(_id_order(medical), active_fsn, synonyms, progress)

    out = {"fsn-syn": _dedupe(fsn_syn), "syn-syn": _dedupe(syn_syn)}
    syn_syn_keys = set(zip(*(_lower_keys(out["syn-syn"]))))

    assoc = release.associations
    assoc = pd.DataFrame({c: assoc[c].astype(str) for c in assoc.columns}) if len(assoc) else assoc
    if len(assoc):
        assoc = assoc[
            (assoc["active"] == "1")
            & (assoc["moduleId"] != MODEL_MODULE)
            & assoc["refsetId"].isin(list(REFSETS.values()))
        ]
    source_groups_done: set[str] = set()
    for name, refset in REFSETS.items():
        rows: list[tuple[str, str, str, str]] = []
        if len(assoc):
            part = assoc[assoc["refsetId"] == refset]
            keyed = sorted(
                zip(part["referencedComponentId"], part["targetComponentId"]),
                key=lambda st: (len(st[0]), st[0], len(st[1]), st[1]),
            )
            for source, target in dict.fromkeys(keyed):
                src_state = state.get(source)
                if src_state is None or src_state[0] != "0" or src_state[1] == MODEL_MODULE:
                    continue  # the source must be an inactive concept outside the model module
                if target not in medical or target not in active_fsn or source not in recent_fsn:
                    continue
                term_1, term_2 = recent_fsn[source], active_fsn[target]
                if source not in source_groups_done:
                    source_groups_done.add(source)
                    groups.append([term_1] + synonyms.get(source, []))
                groups.append([term_1, term_2])
                if term_1.lower() == term_2.lower() or _pair_key(term_1, term_2) in syn_syn_keys:
                    continue
                rows.append((term_1, term_2, source, target))
        out[name] = _dedupe(rows)
    return Positives(out, groups)


def _lower_keys(frame: pd.DataFrame):
    keys = [_pair_key(a, b) for a, b in zip(frame[C.TERM_1], frame[C.TERM_2])]
    return ([k[0] for k in keys], [k[1] for k in keys])


def _dedupe(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """Drop exact and reversed duplicates (ignoring case), keeping the first; add distances."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for row in rows:
        key = _pair_key(row[0], row[1])
        if key[0] == key[1] or key in seen:
            continue
        seen.add(key)
        kept.append(row)
    frame = pd.DataFrame(
        kept, columns=[C.TERM_1, C.TERM_2, C.CONCEPT_ID_1, C.CONCEPT_ID_2], dtype=object
    )
    frame["distance"] = _distances(frame[C.TERM_1].tolist(), frame[C.TERM_2].tolist())
    return frame


def _distances(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    if not len(a):
        return np.zeros(0, dtype=np.int64)
    return np.asarray(
        process.cpdist(
            [x.lower() for x in a], [y.lower() for y in b], scorer=Levenshtein.distance, workers=-1
        ),
        dtype=np.int64,
    )


def split_difficulty(frame: pd.DataFrame, threshold: int = 5) -> dict[str, pd.DataFrame]:
    """``easy`` (distance <= threshold) and ``hard`` (the rest) parts of a positives frame."""
    easy = frame["distance"] <= threshold
    return {"easy": frame[easy].reset_index(drop=True), "hard": frame[~easy].reset_index(drop=True)}


# ============================================================================ similarity graph
def _gather(ptr: np.ndarray, values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Concatenate the CSR segments ``values[ptr[i]:ptr[i+1]]`` for i in *idx*."""
    starts = ptr[idx]
    lens = ptr[idx + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return values[:0]
    offsets = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total)
    return values[offsets]


class SimilarityGraph:
    """Terms (lower-cased) and the groups they belong to, as two CSR incidence arrays.

    :meth:`related` gives the terms within two steps, a step being "shares a group".

    >>> g = SimilarityGraph([["Akra", "Bel"], ["bel", "Cor"], ["Dun", "Eks"]])
    >>> sorted(g.term(i) for i in g.related(g.id("akra")))
    ['akra', 'bel', 'cor']
    """

    def __init__(self, groups: Sequence[Sequence[str]]):
        vocab: dict[str, int] = {}
        g_idx: list[int] = []
        t_idx: list[int] = []
        for g, terms in enumerate(groups):
            for t in dict.fromkeys(x.lower() for x in terms):
                g_idx.append(g)
                t_idx.append(vocab.setdefault(t, len(vocab)))
        self.vocab = vocab
        self.terms = list(vocab)
        n_terms, n_groups = len(vocab), len(groups)
        gi = np.asarray(g_idx, dtype=np.int64)
        ti = np.asarray(t_idx, dtype=np.int64)
        self.group_ptr = np.concatenate(([0], np.cumsum(np.bincount(gi, minlength=n_groups))))
        self.group_terms = ti  # already grouped by group, in order
        order = np.argsort(ti, kind="stable")
        self.term_ptr = np.concatenate(([0], np.cumsum(np.bincount(ti, minlength=n_terms))))
        self.term_groups = gi[order]

    def id(self, term: str) -> int:
        """The id of *term* (case-insensitive), or -1."""
        return self.vocab.get(term.lower(), -1)

    def term(self, i: int) -> str:
        return self.terms[i]

    def related(self, i: int) -> np.ndarray:
        """Ids of the terms similar to term *i* directly or indirectly (with *i* itself)."""
        if i < 0:
            return np.zeros(0, dtype=np.int64)
        idx = np.asarray([i])
        one = np.unique(
            _gather(self.group_ptr, self.group_terms, _gather(self.term_ptr, self.term_groups, idx))
        )
        groups2 = np.unique(_gather(self.term_ptr, self.term_groups, one))
        two = np.unique(_gather(self.group_ptr, self.group_terms, groups2))
        return np.union1d(two, idx)


# ============================================================================ negatives
@dataclass
class _Pool:
    gids: np.ndarray  # graph id of each pool term
    text: list[str]  # original spelling (first seen)
    concept: list[str]  # concept id of the first occurrence
    lower: list[str]


def _make_pool(pos: pd.DataFrame, graph: SimilarityGraph) -> _Pool:
    seen: dict[str, int] = {}
    text: list[str] = []
    concept: list[str] = []
    for t1, t2, c1, c2 in zip(
        pos[C.TERM_1], pos[C.TERM_2], pos[C.CONCEPT_ID_1], pos[C.CONCEPT_ID_2]
    ):
        for t, c in ((t1, c1), (t2, c2)):
            low = t.lower()
            if low not in seen:
                seen[low] = len(text)
                text.append(t)
                concept.append(c)
    lower = list(seen)
    gids = np.fromiter((graph.id(t) for t in lower), dtype=np.int64, count=len(lower))
    return _Pool(gids, text, concept, lower)


def _rng(seed: int, *parts: str) -> np.random.Generator:
    """A generator for one output file: the same for the same seed and file whatever else
    is built in the run."""
    return np.random.default_rng([int(seed), *(zlib.crc32(p.encode()) for p in parts)])


def _unordered(q: int, c: int) -> tuple[int, int]:
    return (q, c) if q <= c else (c, q)


class _NegativeDraw:
    """The state of one :func:`draw_negatives` run: the positives as pool indices, the
    related terms each may not be paired with, and the negatives drawn so far (each unique
    ignoring order)."""

    def __init__(
        self,
        pos: pd.DataFrame,
        graph: SimilarityGraph,
        rng: np.random.Generator,
        bar,
    ) -> None:
        self.pool = pool = _make_pool(pos, graph)
        self.g2p = g2p = np.full(len(graph.terms) + 1, -1, dtype=np.int64)
        g2p[pool.gids] = np.arange(len(pool.gids))
        self.graph = graph
        self.rng = rng
        self.bar = bar
        self.t1 = t1 = pos[C.TERM_1].tolist()
        self.t2 = t2 = pos[C.TERM_2].tolist()
        self.c1 = pos[C.CONCEPT_ID_1].tolist()
        self.c2 = pos[C.CONCEPT_ID_2].tolist()
        self.p1 = np.fromiter((g2p[graph.id(t)] for t in t1), dtype=np.int64, count=len(t1))
        self.p2 = np.fromiter((g2p[graph.id(t)] for t in t2), dtype=np.int64, count=len(t2))
        self.related_cache: dict[int, np.ndarray] = {}
        self.drawn: set[tuple[int, int]] = set()
        self.partners: dict[int, list[int]] = {}
        self.out: list[tuple] = []

    def related(self, p: int) -> np.ndarray:
        """Pool indices *p* may not be paired with: its related terms and itself."""
        if p not in self.related_cache:
            r = self.g2p[self.graph.related(int(self.pool.gids[p]))]
            self.related_cache[p] = np.union1d(r[r >= 0], [p])
        return self.related_cache[p]

    def take(self, i: int, q: int, c: int, term_2: str, cid_2: str, dist: int) -> None:
        self.drawn.add(_unordered(q, c))
        self.partners.setdefault(q, []).append(c)
        self.partners.setdefault(c, []).append(q)
        self.out.append((self.t1[i], term_2, self.c1[i], cid_2, dist, i))

    def tick(self, i: int) -> None:
        if self.bar is not None and (i + 1) % 1000 == 0:
            self.bar.update(1000)

    def finish(self) -> pd.DataFrame:
        if self.bar is not None:
            self.bar.update(len(self.t1) % 1000)
            self.bar.close()
        return pd.DataFrame(
            self.out,
            columns=[C.TERM_1, C.TERM_2, C.CONCEPT_ID_1, C.CONCEPT_ID_2, "distance", "source_row"],
        )

    # ------------------------------------------------------------------ random strategy
    def _random_partner(self, i: int, q: int, ex: set[int]) -> int:
        """The positive whose second term becomes the negative of positive *i* (-1: none):
        50 random tries, then a choice among every allowed one."""
        p2, drawn, rng = self.p2, self.drawn, self.rng
        n = len(self.t1)
        for _ in range(50 if n > 1 else 0):
            j = int(rng.integers(n - 1))
            j += j >= i
            c = int(p2[j])
            if c not in ex and _unordered(q, c) not in drawn:
                return j
        # few allowed terms left: choose among the allowed ones directly
        allowed = [
            j
            for j in range(n)
            if j != i and int(p2[j]) not in ex and _unordered(q, int(p2[j])) not in drawn
        ]
        return allowed[int(rng.integers(len(allowed)))] if allowed else -1

    def _random_from_pool(self, i: int, q: int, ex: set[int]) -> None:
        """No positive's second term is allowed: draw any allowed term of the pool."""
        pool = self.pool
        rest = [
            p for p in range(len(pool.text)) if p not in ex and _unordered(q, p) not in self.drawn
        ]
        if rest:
            c = rest[int(self.rng.integers(len(rest)))]
            self.take(
                i, q, c, pool.text[c], pool.concept[c], levenshtein_lower(self.t1[i], pool.text[c])
            )

    def random(self) -> None:
        t1, t2 = self.t1, self.t2
        for i in range(len(t1)):
            q = int(self.p1[i])
            ex = set(self.related(q).tolist())
            chosen = self._random_partner(i, q, ex)
            if chosen >= 0:
                c = int(self.p2[chosen])
                take_dist = levenshtein_lower(t1[i], t2[chosen])
                self.take(i, q, c, t2[chosen], self.c2[chosen], take_dist)
            else:
                self._random_from_pool(i, q, ex)
            self.tick(i)

    # ----------------------------------------------------------------- nearest strategy
    def nearest(self, workers: int, progress: Progress | None) -> None:
        pool, p1 = self.pool, self.p1
        queries = list(dict.fromkeys(p1.tolist()))
        need = np.bincount(p1, minlength=len(pool.text))
        index = PoolIndex(pool.lower)
        # one spare candidate per query: a mutual nearest neighbour drawn the other way
        # round ((c, q) before (q, c)) is then no reason to search again
        found = nearest_allowed(
            [pool.lower[q] for q in queries],
            pool.lower,
            excluded=[self.related(q) for q in queries],
            need=[int(need[q]) + 1 for q in queries],
            workers=workers,
            index=index,
            progress=progress,
        )
        candidates = dict(zip(queries, found))
        for i in range(len(self.t1)):
            q = int(p1[i])
            idx, dist = candidates[q]
            ok = np.fromiter(
                (_unordered(q, c) not in self.drawn for c in idx.tolist()),
                dtype=bool,
                count=len(idx),
            )
            if not ok.any():  # every stored candidate already drawn: search again
                again = np.union1d(self.related(q), self.partners.get(q, []))
                ((idx, dist),) = nearest_allowed(
                    [pool.lower[q]],
                    pool.lower,
                    excluded=[again],
                    need=1,
                    workers=workers,
                    index=index,
                )
                candidates[q] = (idx, dist)
                ok = np.ones(len(idx), dtype=bool)
            if ok.any():
                idx, dist = idx[ok], dist[ok]
                ties = idx[dist == dist[0]]
                rng = self.rng
                c = int(ties[int(rng.integers(len(ties)))]) if len(ties) > 1 else int(ties[0])
                self.take(i, q, c, pool.text[c], pool.concept[c], int(dist[0]))
            self.tick(i)


def draw_negatives(
    pos: pd.DataFrame,
    graph: SimilarityGraph,
    strategy: str,
    rng: np.random.Generator,
    *,
    workers: int = -1,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """One negative per positive of *pos* (fewer only when no allowed term exists).

    Returns a frame with ``term_1, term_2, concept_id_1, concept_id_2, distance`` and
    ``source_row`` (the positive it was drawn for). Positives are processed in order; each
    negative is unique within the result (ignoring case and order).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown negative strategy '{strategy}'")
    label = f"negatives ({strategy})"
    draw = _NegativeDraw(pos, graph, rng, progress(label, len(pos)) if progress else None)
    if strategy == "random":
        draw.random()
    else:
        draw.nearest(workers, progress)
    return draw.finish()


# ============================================================================ whole build
@dataclass
class BuildResult:
    """The built files and their statistics.

    ``files[(dataset, difficulty, strategy)]`` is a pairs frame with the columns of
    :data:`OUTPUT_COLUMNS`; ``statistics`` is the Table 2-like frame (:data:`STAT_COLUMNS`);
    ``missing_negatives`` counts positives for which no allowed negative existed.
    """

    files: dict[tuple[str, str, str], pd.DataFrame]
    statistics: pd.DataFrame
    positives: Positives
    missing_negatives: dict[tuple[str, str, str], int]


def build_datasets(
    release: Release,
    *,
    threshold: int = 5,
    seed: int = 42,
    strategies: Sequence[str] = STRATEGIES,
    datasets: Sequence[str] = DATASETS,
    workers: int = -1,
    progress: Progress | None = None,
) -> BuildResult:
    """Build the positives of all five datasets (the exclusions need all of them) and the
    requested dataset x difficulty x strategy files with their statistics.

    Each file gets its own random generator seeded by ``(seed, dataset, difficulty,
    strategy)``, so a file is the same whichever other files are built in the run.
    """
    positives = extract_positives(release, progress)
    graph = SimilarityGraph(positives.groups)
    files: dict[tuple[str, str, str], pd.DataFrame] = {}
    missing: dict[tuple[str, str, str], int] = {}
    negatives: dict[tuple[str, str, str], pd.DataFrame] = {}
    for name in datasets:
        for difficulty, pos in split_difficulty(positives.pairs[name], threshold).items():
            for strategy in strategies:
                key = (name, difficulty, strategy)
                rng = _rng(seed, *key)
                neg = draw_negatives(
                    pos,
                    graph,
                    strategy,
                    rng,
                    workers=workers,
                    progress=_prefixed(progress, key) if progress else None,
                )
                negatives[key] = neg
                missing[key] = len(pos) - len(neg)
                files[key] = _file_frame(pos, neg, key, _rng(seed, *key, "order"))
    stats = statistics_table(positives, negatives, threshold=threshold, datasets=datasets)
    return BuildResult(files, stats, positives, missing)


def _file_frame(
    pos: pd.DataFrame, neg: pd.DataFrame, key: tuple[str, str, str], rng: np.random.Generator
) -> pd.DataFrame:
    name, difficulty, strategy = key
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    C.TERM_1: pos[C.TERM_1],
                    C.TERM_2: pos[C.TERM_2],
                    C.AUTO_LABEL: 1,
                    C.CONCEPT_ID_1: pos[C.CONCEPT_ID_1],
                    C.CONCEPT_ID_2: pos[C.CONCEPT_ID_2],
                }
            ),
            pd.DataFrame(
                {
                    C.TERM_1: neg[C.TERM_1],
                    C.TERM_2: neg[C.TERM_2],
                    C.AUTO_LABEL: 0,
                    C.CONCEPT_ID_1: neg[C.CONCEPT_ID_1],
                    C.CONCEPT_ID_2: neg[C.CONCEPT_ID_2],
                }
            ),
        ],
        ignore_index=True,
    )
    frame[C.AUTO_LABEL] = frame[C.AUTO_LABEL].astype(np.int64)
    frame[C.DATASET] = name
    frame[C.DIFFICULTY] = difficulty
    frame[C.NEGATIVE_STRATEGY] = strategy
    frame[C.PAIR_ID] = [
        stable_pair_id(a, b, str(label), name, difficulty, strategy, ca, cb)
        for a, b, label, ca, cb in zip(
            frame[C.TERM_1],
            frame[C.TERM_2],
            frame[C.AUTO_LABEL],
            frame[C.CONCEPT_ID_1],
            frame[C.CONCEPT_ID_2],
        )
    ]
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    return frame[list(OUTPUT_COLUMNS)]


def statistics_table(
    positives: Positives,
    negatives: dict[tuple[str, str, str], pd.DataFrame],
    *,
    threshold: int = 5,
    datasets: Sequence[str] = DATASETS,
) -> pd.DataFrame:
    """Table 2 of the paper: per dataset (all, easy, hard) the number of positives and of
    negatives per strategy, and the mean Levenshtein distance (lower-cased terms) of the
    positives and of the random and Levenshtein negatives (empty when not built)."""
    rows = []
    for name in datasets:
        parts = split_difficulty(positives.pairs[name], threshold)
        for difficulty in ("all", "easy", "hard"):
            diffs = ("easy", "hard") if difficulty == "all" else (difficulty,)
            pos_d = np.concatenate([parts[d]["distance"].to_numpy(dtype=float) for d in diffs])
            row: dict[str, object] = {
                "dataset": name,
                "difficulty": difficulty,
                "positives": len(pos_d),
                "mean_distance_positive": _mean(pos_d),
            }
            for strategy in STRATEGIES:
                negs = [
                    negatives[(name, d, strategy)]
                    for d in diffs
                    if (name, d, strategy) in negatives
                ]
                if negs:
                    d = np.concatenate([n["distance"].to_numpy(dtype=float) for n in negs])
                    row[f"negatives_{strategy}"] = len(d)
                    row[f"mean_distance_{strategy}"] = _mean(d)
                else:
                    row[f"negatives_{strategy}"] = None
                    row[f"mean_distance_{strategy}"] = None
            rows.append(row)
    frame = pd.DataFrame(rows, columns=list(STAT_COLUMNS))
    for col in ("negatives_random", "negatives_levenshtein"):
        frame[col] = frame[col].astype("Int64")
    return frame


def _mean(values: np.ndarray) -> float:
    return round(float(values.mean()), 4) if len(values) else float("nan")


def format_statistics(stats: pd.DataFrame) -> str:
    """The statistics as an aligned text table, like Table 2 of the paper."""
    header = ("dataset", "split", "positives", "neg-R", "neg-L", "pos", "neg-R dist", "neg-L dist")
    lines = []
    for r in stats.itertuples(index=False):

        def num(v):
            return "" if v is None or pd.isna(v) else f"{v:,.2f}"

        def cnt(v):
            return "" if v is None or pd.isna(v) else f"{int(v):,}"

        lines.append(
            (
                r.dataset if r.difficulty == "all" else "",
                r.difficulty,
                cnt(r.positives),
                cnt(r.negatives_random),
                cnt(r.negatives_levenshtein),
                num(r.mean_distance_positive),
                num(r.mean_distance_random),
                num(r.mean_distance_levenshtein),
            )
        )
    widths = [
        max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(header)
    ]
    fmt = lambda row: "  ".join(
        c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
    )
    return "\n".join([fmt(header), fmt(tuple("-" * w for w in widths))] + [fmt(l) for l in lines])
