"""A synthetic SNOMED CT RF2 release: invented concepts, written in the real file layout.

The SNOMED CT licence forbids shipping SNOMED content, so every test and benchmark of the
SNOMED builder runs on a release this module writes. Nothing here is SNOMED text: the terms
are invented (pseudo-medical words built from syllables). Only the *format* is SNOMED's:
RF2 tab-separated files with CRLF line ends, standard file names, metadata identifiers
(module, description type and association refset ids, which are public format constants),
and component identifiers (SCTIDs) with a valid Verhoeff check digit.

An SCTID is ``item identifier + [namespace] + partition identifier + check digit``; the
partition says what the id names (``00`` concept, ``01`` description in the short format;
``10`` and ``11`` in the long format that carries a 7-digit namespace). The invented
components use the long format with namespace ``9999999``.

References
----------
Verhoeff, J. (1969). *Error detecting decimal codes*. Mathematical Centre Tracts 29,
Mathematisch Centrum, Amsterdam.
SNOMED International. *SNOMED CT Technical Implementation Guide*, section "Component
features - Identifiers" (SCTID structure and check digit) and "Release file naming".
"""

from __future__ import annotations

import bisect
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------- Verhoeff
_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)
_INV = (0, 4, 3, 2, 1, 5, 6, 7, 8, 9)


def verhoeff_check_digit(digits: str) -> str:
    """The Verhoeff check digit to append to the decimal string *digits*.

    The dihedral group :math:`D_5` product :math:`d`, the position permutation
    :math:`p^{(i \\bmod 8)}` and the inverse table give
    :math:`c = \\mathrm{inv}(d(\\dots d(d(0, p^{1}(a_0)), p^{2}(a_1)) \\dots))` over the
    digits :math:`a_0, a_1, \\dots` read from the right.

    >>> verhoeff_check_digit("236")   # Verhoeff's worked example
    '3'
    >>> verhoeff_check_digit("90000000000001200")  # the model component module id ...4
    '4'
    """
    if not digits.isdigit():
        raise ValueError(f"not a decimal string: {digits!r}")
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _D[c][_P[(i + 1) % 8][int(ch)]]
    return str(_INV[c])


def verhoeff_valid(number: str) -> bool:
    """Whether the last digit of *number* is its Verhoeff check digit.

    >>> verhoeff_valid("2363"), verhoeff_valid("2364")
    (True, False)
    """
    if not number.isdigit() or len(number) < 2:
        return False
    c = 0
    for i, ch in enumerate(reversed(number)):
        c = _D[c][_P[i % 8][int(ch)]]
    return c == 0


SYNTHETIC_NAMESPACE = "9999999"
PARTITION_CONCEPT = "10"  # long format (with namespace): concept
PARTITION_DESCRIPTION = "11"  # long format: description


def sctid(item: int, partition: str, namespace: str | None = SYNTHETIC_NAMESPACE) -> str:
    """An SCTID: item identifier, namespace (long format only), partition, check digit.

    >>> sctid(1, "10")
    '19999999103'
    >>> verhoeff_valid(sctid(123456, "11"))
    True
    """
    body = f"{int(item)}{namespace or ''}{partition}"
    if len(body) + 1 > 18:
        raise ValueError("an SCTID has at most 18 digits")
    return body + verhoeff_check_digit(body)


# --------------------------------------------------------------------------- metadata ids
CORE_MODULE = "900000000000207008"
MODEL_MODULE = "900000000000012004"
FSN = "900000000000003001"
SYNONYM = "900000000000013009"
CASE_INSENSITIVE = "900000000000448009"
POSSIBLY_EQUIVALENT_TO = "900000000000523009"
REPLACED_BY = "900000000000526001"
SAME_AS = "900000000000527005"
WAS_A = "900000000000528000"  # another historical association; the builder ignores it
PRIMITIVE = sctid(1, PARTITION_CONCEPT)  # an invented definition status concept

CONCEPT_HEADER = ("id", "effectiveTime", "active", "moduleId", "definitionStatusId")
DESCRIPTION_HEADER = (
    "id",
    "effectiveTime",
    "active",
    "moduleId",
    "conceptId",
    "languageCode",
    "typeId",
    "term",
    "caseSignificanceId",
)
ASSOCIATION_HEADER = (
    "id",
    "effectiveTime",
    "active",
    "moduleId",
    "refsetId",
    "referencedComponentId",
    "targetComponentId",
)

T0 = "20200131"  # the default effectiveTime of invented components


@dataclass
class SyntheticRelease:
    """Invented RF2 content held in memory: rows of the concept, description and
    association files, including history (several rows per id with different
    ``effectiveTime`` values, as in a Full release).

    Build it with :meth:`concept` (one call per concept with its FSN and synonyms) or the
    lower-level ``add_*`` methods, then :meth:`write` it as a Full and/or Snapshot release.

    >>> r = SyntheticRelease()
    >>> c = r.concept("Brenoxia of the valum (disorder)", "Valum brenoxia")
    >>> len(r.concepts), len(r.descriptions), verhoeff_valid(c)
    (1, 2, True)
    """

    concepts: list[tuple[str, ...]] = field(default_factory=list)
    descriptions: list[tuple[str, ...]] = field(default_factory=list)
    associations: list[tuple[str, ...]] = field(default_factory=list)
    next_item: int = 100
    _seen_ids: set = field(default_factory=set)

    def new_id(self, partition: str = PARTITION_CONCEPT) -> str:
        """A fresh SCTID with a valid check digit in the synthetic namespace."""
        self.next_item += 1
        return sctid(self.next_item, partition)

    def add_concept(self, cid: str, states=((T0, True, CORE_MODULE),)) -> str:
        """Rows for concept *cid*: one per ``(effectiveTime, active, moduleId)`` state."""
        for time, active, module in states:
            self.concepts.append((cid, time, "1" if active else "0", module, PRIMITIVE))
        return cid

    def add_description(
        self,
        concept_id: str,
        term: str,
        kind: str = "syn",
        states=((T0, True),),
        *,
        did: str | None = None,
        module: str = CORE_MODULE,
    ) -> str:
        """Rows for one description of *concept_id*; *kind* is ``fsn`` or ``syn``, or a list
        of kinds per state (a description whose type changed); *states* are
        ``(effectiveTime, active)`` pairs, or ``(effectiveTime, active, term)`` triples for a
        description whose text changed."""
        did = did or self.new_id(PARTITION_DESCRIPTION)
        kinds = [kind] * len(states) if isinstance(kind, str) else list(kind)
        for state, k in zip(states, kinds):
            time, active = state[0], state[1]
            text = state[2] if len(state) > 2 else term
            type_id = {"fsn": FSN, "syn": SYNONYM}[k]
            self.descriptions.append(
                (
                    did,
                    time,
                    "1" if active else "0",
                    module,
                    concept_id,
                    "en",
                    type_id,
                    text,
                    CASE_INSENSITIVE,
                )
            )
        return did

    def add_association(
        self,
        refset: str,
        source: str,
        target: str,
        states=((T0, True),),
        *,
        module: str = CORE_MODULE,
        member_id: str | None = None,
    ) -> str:
        """Rows for one association refset member (*source* -> *target*) per state."""
        member_id = member_id or str(
            uuid.uuid5(uuid.NAMESPACE_OID, f"{refset}:{source}:{target}:{len(self.associations)}")
        )
        for time, active in states:
            self.associations.append(
                (member_id, time, "1" if active else "0", module, refset, source, target)
            )
        return member_id

    def concept(
        self,
        fsn: str,
        *synonyms: str,
        active: bool = True,
        module: str = CORE_MODULE,
        time: str = T0,
        cid: str | None = None,
    ) -> str:
        """One concept with its FSN and active synonyms, all at *time*; returns its id."""
        cid = cid or self.new_id(PARTITION_CONCEPT)
        self.add_concept(cid, ((time, active, module),))
        self.add_description(cid, fsn, "fsn", ((time, True),), module=module)
        for s in synonyms:
            self.add_description(cid, s, "syn", ((time, True),), module=module)
        return cid

    def add_metadata_concepts(self) -> None:
        """The metadata concepts the files refer to (model module), with invented names."""
        for mid in (
            CORE_MODULE,
            MODEL_MODULE,
            FSN,
            SYNONYM,
            PRIMITIVE,
            CASE_INSENSITIVE,
            POSSIBLY_EQUIVALENT_TO,
            REPLACED_BY,
            SAME_AS,
            WAS_A,
        ):
            self.concept(
                f"Synthetic metadata item {mid[-7:]} (synthetic metadata)",
                f"Synthetic metadata item {mid[-7:]} alias",
                module=MODEL_MODULE,
                cid=mid,
            )

    # ------------------------------------------------------------------ writing
    def write(
        self,
        folder: str | Path,
        release: str = "both",
        *,
        date: str = "20250131",
        edition: str = "INT",
    ) -> Path:
        """Write the release under *folder* in the standard layout.

        *release* is ``full``, ``snapshot`` or ``both``. The Snapshot holds, for each id,
        its row with the latest ``effectiveTime`` (what a real Snapshot is).
        """
        folder = Path(folder)
        kinds = {"full": ("Full",), "snapshot": ("Snapshot",), "both": ("Full", "Snapshot")}[
            release
        ]
        for kind in kinds:
            files = (
                (
                    f"{kind}/Terminology/sct2_Concept_{kind}_{edition}_{date}.txt",
                    CONCEPT_HEADER,
                    self.concepts,
                ),
                (
                    f"{kind}/Terminology/sct2_Description_{kind}-en_{edition}_{date}.txt",
                    DESCRIPTION_HEADER,
                    self.descriptions,
                ),
                (
                    f"{kind}/Refset/Content/der2_cRefset_Association{kind}_{edition}_{date}.txt",
                    ASSOCIATION_HEADER,
                    self.associations,
                ),
            )
            for name, header, rows in files:
                if kind == "Snapshot":
                    rows = _snapshot(rows)
                path = folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="") as fh:
                    fh.write("\t".join(header) + "\r\n")
                    for row in sorted(rows, key=lambda r: (r[0], r[1])):
                        fh.write("\t".join(row) + "\r\n")
        return folder


def _snapshot(rows):
    latest: dict[str, tuple] = {}
    for row in rows:
        if row[0] not in latest or row[1] >= latest[row[0]][1]:
            latest[row[0]] = row
    return list(latest.values())


# --------------------------------------------------------------------------- invented words
_ONSETS = (
    "b",
    "br",
    "c",
    "ch",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "ph",
    "pl",
    "r",
    "s",
    "st",
    "t",
    "th",
    "tr",
    "v",
    "x",
    "z",
)
_VOWELS = ("a", "e", "i", "o", "u", "y", "ae", "io", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "x", "m", "th", "st")
_FUNCTION_WORDS = ("of", "of the", "with", "due to", "in", "and", "on", "without", "by")
_SUFFIXES = ("itis", "osis", "oma", "algia", "ectomy", "al", "ic", "ous", "ia", "ism")


def invented_word(rng: random.Random) -> str:
    """A pronounceable invented word of 1-3 syllables (never a real SNOMED term)."""
    syllables = rng.choice((1, 1, 2, 2, 2, 3))
    word = "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
    )
    if rng.random() < 0.2:
        word += rng.choice(_SUFFIXES)
    return word


def invented_vocabulary(size: int, seed: int = 0) -> list[str]:
    """*size* distinct invented words."""
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        words.setdefault(invented_word(rng), None)
    return list(words)


def invented_terms(
    n: int,
    *,
    seed: int = 0,
    vocabulary: int = 20000,
    min_words: int = 2,
    max_words: int = 10,
    family: float = 0.5,
) -> list[str]:
    """*n* distinct realistic-looking invented terms of *min_words*-*max_words* words
    (about 30 characters on average), drawn with Zipf-like word frequencies.

    A share *family* of the terms are variants of an earlier term with one word replaced,
    added or dropped, as terminologies have families of near-identical terms ("... of left
    ...", "... of right ..."); this gives the nearest-neighbour structure of a real pool.

    >>> terms = invented_terms(200, seed=1)
    >>> len(set(terms)), all(2 <= len(t.split()) for t in terms)
    (200, True)
    """
    rng = random.Random(seed)
    vocab = invented_vocabulary(vocabulary, seed)
    weights = [1.0 / (i + 10) for i in range(len(vocab))]
    cum = []
    total = 0.0
    for w in weights:
        total += w
        cum.append(total)
    lengths = (2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 5, 5, 6, 7, 8, 10)

    def word() -> str:
        return vocab[min(bisect.bisect_left(cum, rng.random() * total), len(vocab) - 1)]

    out: dict[str, None] = {}
    made: list[list[str]] = []
    while len(out) < n:
        if made and rng.random() < family:
            words = list(rng.choice(made))
            op = rng.random()
            if op < 0.6 or len(words) <= min_words:
                words[rng.randrange(len(words))] = word()
            elif op < 0.75 and len(words) < max_words:
                words.insert(rng.randrange(len(words) + 1), word())
            else:
                del words[rng.randrange(len(words))]
        else:
            k = rng.choice([x for x in lengths if min_words <= x <= max_words])
            words = [word() for _ in range(k)]
            if k >= 3 and rng.random() < 0.5:
                words[rng.randrange(1, k - 1)] = rng.choice(_FUNCTION_WORDS).split()[0]
        text = " ".join(words)
        text = text[0].upper() + text[1:]
        if text not in out:
            out[text] = None
            made.append(words)
    return list(out)


_TAGS = (
    "disorder",
    "finding",
    "procedure",
    "body structure",
    "substance",
    "qualifier value",
    "morphologic abnormality",
    "regime/therapy",
    "observable entity",
    "situation",
)


def _small_edit(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(1, len(chars) + 1)
        if rng.random() < 0.5 and pos < len(chars):
            chars[pos] = rng.choice("aeiourstnl")
        else:
            chars.insert(pos, rng.choice("aeiourstnl"))
    return "".join(chars)


def generate_release(
    n_concepts: int = 300, *, seed: int = 0, metadata: bool = True
) -> SyntheticRelease:
    """A random release of about *n_concepts* invented concepts with realistic structure.

    Each concept has an FSN with a semantic tag and 0-4 synonyms (a preferred term equal to
    the FSN without its tag, near variants and unrelated-looking synonyms); some terms are
    shared between concepts; about 12% of the concepts are inactive with associations of
    each of the three kinds (some to two targets, some later inactivated); some
    descriptions were inactivated or reactivated over several releases.
    """
    rng = random.Random(seed)
    release = SyntheticRelease()
    if metadata:
        release.add_metadata_concepts()
    terms = invented_terms(n_concepts * 4, seed=seed, vocabulary=max(500, n_concepts * 3))
    rng.shuffle(terms)
    pos = 0

    def take() -> str:
        nonlocal pos
        pos += 1
        return terms[pos - 1]

    times = ("20180131", "20190131", "20200131", "20210131")
    active_ids: list[str] = []
    all_terms: list[str] = []
    for _ in range(n_concepts):
        name = take()
        fsn = f"{name} ({rng.choice(_TAGS)})"
        cid = release.new_id()
        history = rng.random()
        if history < 0.05:  # inactivated then reactivated
            release.add_concept(
                cid,
                (
                    (times[0], True, CORE_MODULE),
                    (times[1], False, CORE_MODULE),
                    (times[2], True, CORE_MODULE),
                ),
            )
        else:
            release.add_concept(cid, ((times[0], True, CORE_MODULE),))
        release.add_description(cid, fsn, "fsn", ((times[0], True),))
        syns = [name] if rng.random() < 0.8 else []
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            r = rng.random()
            if r < 0.3:  # a near variant (one word changed)
                words = name.split()
                words[rng.randrange(len(words))] = invented_word(rng)
                syns.append(" ".join(words))
            elif r < 0.45 and all_terms:  # a term shared with another concept
                syns.append(rng.choice(all_terms))
            else:
                syns.append(take())
        for s in syns:
            r = rng.random()
            if r < 0.05:  # inactivated synonym
                release.add_description(cid, s, "syn", ((times[0], True), (times[2], False)))
            elif r < 0.08:  # reactivated synonym
                release.add_description(
                    cid, s, "syn", ((times[0], True), (times[1], False), (times[3], True))
                )
            else:
                release.add_description(cid, s, "syn", ((times[0], True),))
        active_ids.append(cid)
        all_terms.extend(syns)
    refsets = (POSSIBLY_EQUIVALENT_TO, REPLACED_BY, SAME_AS)
    for i in range(max(6, n_concepts // 6)):
        source = release.new_id()
        release.add_concept(source, ((times[0], True, CORE_MODULE), (times[2], False, CORE_MODULE)))
        target = rng.choice(active_ids)
        target_fsn = next(d[7] for d in release.descriptions if d[4] == target and d[6] == FSN)
        base = target_fsn.rsplit(" (", 1)[0]
        if rng.random() < 0.45:  # lexically close source (an easy pair): 1-4 letters edited
            source_name = _small_edit(base, rng)
        else:
            source_name = take()
        prefix = "[D]" if rng.random() < 0.1 else ""
        release.add_description(
            source, f"{prefix}{source_name} ({rng.choice(_TAGS)})", "fsn", ((times[0], True),)
        )
        refset = refsets[i % 3]
        states = (
            ((times[2], True),) if rng.random() > 0.1 else ((times[2], True), (times[3], False))
        )
        release.add_association(refset, source, target, states)
        if rng.random() < 0.15:  # a source with two targets
            release.add_association(refset, source, rng.choice(active_ids), ((times[2], True),))
    return release
