"""The AAAI 2020 rules on a small hand-made synthetic RF2 release, expected positives by hand.

Every term is invented (the SNOMED CT licence forbids shipping SNOMED content). The release
has history (Full files with several effectiveTimes), and each of the paper's rules has a
concept, description or association row that exercises it; see the comments below.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsim_annot.builders import snomed
from medsim_annot.builders.rf2 import read_release
from medsim_annot.builders.synthetic_rf2 import (
    CORE_MODULE,
    MODEL_MODULE,
    POSSIBLY_EQUIVALENT_TO,
    REPLACED_BY,
    SAME_AS,
    WAS_A,
    SyntheticRelease,
)

T1, T2, T3, T4 = "20180131", "20190131", "20200131", "20210131"
ON = ((T1, True),)


def _inactive_source(r: SyntheticRelease, fsn: str, *, reactivated: bool = False) -> str:
    cid = r.new_id()
    states = [(T1, True, CORE_MODULE), (T2, False, CORE_MODULE)]
    if reactivated:
        states.append((T3, True, CORE_MODULE))
    r.add_concept(cid, states)
    r.add_description(cid, fsn, "fsn", ON)
    return cid


def handmade_release(r: SyntheticRelease | None = None) -> tuple[SyntheticRelease, dict]:
    """The hand-made release (added to *r* when given); returns it and the concept ids."""
    if r is None:
        r = SyntheticRelease()
        r.add_metadata_concepts()
    c = {}
    # A synonym equal to the clean FSN is dropped; an inactivated synonym is dropped.
    c["brenox"] = r.concept(
        "Brenoxia of valum (disorder)", "Brenoxia of valum", "Valum brenoxia", "Brenoxial valumitis"
    )
    r.add_description(c["brenox"], "Brenox valum old", "syn", ((T1, True), (T3, False)))
    # Case-equal synonyms dropped; a reactivated synonym kept.
    c["gorvin"] = r.concept(
        "Gorvin vexal (finding)", "GORVIN VEXAL", "gorvin vexal", "Vexal of gorvin"
    )
    r.add_description(
        c["gorvin"], "Gorvinic vexaloma", "syn", ((T1, True), (T2, False), (T4, True))
    )
    # Synonyms at distance 5 (easy) and 6 (hard) of the FSN; the FSN text changed once (the
    # old FSN description inactivated, a new one added).
    c["trask"] = r.new_id()
    r.add_concept(c["trask"])
    r.add_description(
        c["trask"], "Traskelion mordantic (disorder)", "fsn", ((T1, True), (T3, False))
    )
    r.add_description(c["trask"], "Traskelion mordant (disorder)", "fsn", ((T3, True),))
    r.add_description(c["trask"], "Traskelion mordantiosis", "syn", ON)  # +5 characters
    r.add_description(c["trask"], "Traskelion mordantiosism", "syn", ON)  # +6 characters
    # Non-ASCII terms; a non-ASCII case variant.
    c["odem"] = r.concept("Ödemal brantisis (disorder)", "ÖDEMAL BRANTISIS", "Brantisis ödemal")
    # FSN cleaning edge cases.
    c["or"] = r.concept("Tremix of harbo or (stelan) (disorder)", "Harbo tremix")
    c["nested"] = r.concept("Plurax (left) of daro (finding)", "Left daro plurax")
    c["amp"] = r.concept("Delvo trinal (& quist)", "Quist delvo")
    c["and"] = r.concept("Quellin of darb and (body structure)", "Darb quellin")
    c["or_end"] = r.concept("Fimbrel sappo or (dwint part)", "Sappo fimbrel")
    c["dstart"] = r.concept("[D]Lorvax pinthic (situation)", "Pinthic lorvax")
    c["dend"] = r.concept("Morvanic strell [D] (situation)", "Strell morvanic")
    # An inactive concept (no pairs), a reactivated concept (pairs) whose FSN text changed.
    c["inact"] = r.new_id()
    r.add_concept(c["inact"], ((T1, True, CORE_MODULE), (T3, False, CORE_MODULE)))
    r.add_description(c["inact"], "Sennic ploom (disorder)", "fsn", ON)
    r.add_description(c["inact"], "Ploom sennic", "syn", ON)
    c["react"] = r.new_id()
    r.add_concept(
        c["react"], ((T1, True, CORE_MODULE), (T2, False, CORE_MODULE), (T3, True, CORE_MODULE))
    )
    r.add_description(
        c["react"],
        "",
        "fsn",
        ((T1, True, "Quandrel fobixia (disorder)"), (T3, True, "Quandrel fobix (disorder)")),
    )
    r.add_description(c["react"], "Fobix quandrel", "syn", ON)
    # A concept in the model component module (no pairs).
    c["model"] = r.concept(
        "Kelmic structure (synthetic metadata)", "Kelm structure", module=MODEL_MODULE
    )
    # Terms shared across concepts.
    c["sharedA"] = r.concept("Pelorix dunal (disorder)", "Dunal ache")
    c["sharedB"] = r.concept("Vintrix moly (finding)", "Dunal ache", "Moly vintrix")
    # An exact duplicate (ignoring case) and a reversed duplicate from two concepts each.
    c["dupA"] = r.concept("Sorbic nelm (disorder)", "Nelm sorbic")
    c["dupB"] = r.concept("Sorbic nelm (finding)", "nelm sorbic")
    c["revA"] = r.concept("Hastor plen (disorder)", "Plen hastor")
    c["revB"] = r.concept("Plen hastor (finding)", "Hastor plen")

    # Associations (sources are inactive concepts).
    s = {}
    s["pe_easy"] = _inactive_source(r, "Brenoxia of valim (disorder)")
    r.add_association(POSSIBLY_EQUIVALENT_TO, s["pe_easy"], c["brenox"], ((T2, True),))
    s["pe_hard"] = _inactive_source(r, "Zantric holp (disorder)")
    r.add_association(POSSIBLY_EQUIVALENT_TO, s["pe_hard"], c["gorvin"], ((T2, True),))
    s["rb_easy"] = _inactive_source(r, "Quandrel fobixes (disorder)")
    r.add_association(REPLACED_BY, s["rb_easy"], c["react"], ((T2, True),))
    s["rb_hard"] = _inactive_source(r, "Stavic ormune (disorder)")
    r.add_association(REPLACED_BY, s["rb_hard"], c["odem"], ((T2, True),))
    s["sa_easy"] = _inactive_source(r, "[D]Pelorix dunel (disorder)")  # [D] at the start
    r.add_association(SAME_AS, s["sa_easy"], c["sharedA"], ((T2, True),))
    s["sa_hard"] = _inactive_source(r, "Murnox helt (disorder)")
    r.add_association(SAME_AS, s["sa_hard"], c["trask"], ((T2, True),))
    # A source whose FSN ends in "and (tag)": the tag goes on both sides of the pair.
    s["and_src"] = _inactive_source(r, "Darbic quellin and (disorder)")
    r.add_association(REPLACED_BY, s["and_src"], c["and"], ((T2, True),))
    # A source with two targets.
    s["two"] = _inactive_source(r, "Kelvaric broma (disorder)")
    r.add_association(POSSIBLY_EQUIVALENT_TO, s["two"], c["odem"], ((T2, True),))
    r.add_association(POSSIBLY_EQUIVALENT_TO, s["two"], c["sharedB"], ((T2, True),))
    # An inactivated association (dropped) and a reactivated one (kept).
    s["off"] = _inactive_source(r, "Jolvo tress (disorder)")
    r.add_association(REPLACED_BY, s["off"], c["gorvin"], ((T2, True), (T3, False)))
    s["again"] = _inactive_source(r, "Rostel vimp (disorder)")
    r.add_association(
        POSSIBLY_EQUIVALENT_TO, s["again"], c["sharedA"], ((T2, True), (T3, False), (T4, True))
    )
    # The pair is already a SYN-SYN pair (dropped); the two terms are equal (dropped).
    s["in_syn"] = _inactive_source(r, "Valum brenoxia (disorder)")
    r.add_association(SAME_AS, s["in_syn"], c["brenox"], ((T2, True),))
    s["equal"] = _inactive_source(r, "gorvin VEXAL (disorder)")
    r.add_association(REPLACED_BY, s["equal"], c["gorvin"], ((T2, True),))
    # The same pair in two refsets (kept in both).
    s["both"] = _inactive_source(r, "Nimbral sett (disorder)")
    r.add_association(POSSIBLY_EQUIVALENT_TO, s["both"], c["react"], ((T2, True),))
    r.add_association(REPLACED_BY, s["both"], c["react"], ((T2, True),))
    # A model-module association row (dropped); another refset (ignored).
    s["model_row"] = _inactive_source(r, "Farnic oll (disorder)")
    r.add_association(SAME_AS, s["model_row"], c["odem"], ((T2, True),), module=MODEL_MODULE)
    r.add_association(WAS_A, s["model_row"], c["trask"], ((T2, True),))
    # The most recent FSN of a source: a newer FSN replaced an older one ...
    s["newer"] = r.new_id()
    r.add_concept(s["newer"], ((T1, True, CORE_MODULE), (T3, False, CORE_MODULE)))
    r.add_description(s["newer"], "Wexil durant (disorder)", "fsn", ((T1, True), (T3, False)))
    r.add_description(s["newer"], "Wexilic durantine (disorder)", "fsn", ((T3, True),))
    r.add_association(REPLACED_BY, s["newer"], c["trask"], ((T3, True),))
    # ... and a source whose only FSN was inactivated too (its most recent FSN is used).
    s["fsn_off"] = r.new_id()
    r.add_concept(s["fsn_off"], ((T1, True, CORE_MODULE), (T3, False, CORE_MODULE)))
    r.add_description(s["fsn_off"], "Obrix calm (disorder)", "fsn", ((T1, True), (T3, False)))
    r.add_association(SAME_AS, s["fsn_off"], c["sharedB"], ((T3, True),))
    # A reactivated source concept (association dropped) and an inactive target (dropped).
    s["react_src"] = _inactive_source(r, "Halvic tumber (disorder)", reactivated=True)
    r.add_association(REPLACED_BY, s["react_src"], c["odem"], ((T2, True),))
    s["dead_target"] = _inactive_source(r, "Cresto pild (disorder)")
    r.add_association(REPLACED_BY, s["dead_target"], c["inact"], ((T3, True),))
    # A model-module source concept (dropped).
    s["model_src"] = r.new_id()
    r.add_concept(s["model_src"], ((T1, True, MODEL_MODULE), (T2, False, MODEL_MODULE)))
    r.add_description(s["model_src"], "Gantel morb (disorder)", "fsn", ON)
    r.add_association(SAME_AS, s["model_src"], c["odem"], ((T2, True),))
    return r, {**c, **{f"s_{k}": v for k, v in s.items()}}


# (dataset, difficulty, term_1, term_2), written out by hand.
EXPECTED = {
    "fsn-syn": [
        ("hard", "Brenoxia of valum", "Valum brenoxia"),  # words swapped: distance 15
        ("hard", "Brenoxia of valum", "Brenoxial valumitis"),
        ("hard", "Gorvin vexal", "Vexal of gorvin"),
        ("easy", "Gorvin vexal", "Gorvinic vexaloma"),  # +"ic" +"oma": distance 5
        ("easy", "Traskelion mordant", "Traskelion mordantiosis"),
        ("hard", "Traskelion mordant", "Traskelion mordantiosism"),
        ("hard", "Ödemal brantisis", "Brantisis ödemal"),
        ("hard", "Tremix of harbo or (stelan)", "Harbo tremix"),
        ("hard", "Plurax (left) of daro", "Left daro plurax"),
        ("hard", "Delvo trinal (& quist)", "Quist delvo"),
        ("hard", "Quellin of darb and", "Darb quellin"),  # "and" keeps no tag
        ("hard", "Fimbrel sappo or (dwint part)", "Sappo fimbrel"),
        ("hard", "Lorvax pinthic", "Pinthic lorvax"),
        ("hard", "Morvanic strell", "Strell morvanic"),
        ("hard", "Quandrel fobix", "Fobix quandrel"),
        ("hard", "Pelorix dunal", "Dunal ache"),
        ("hard", "Vintrix moly", "Dunal ache"),
        ("hard", "Vintrix moly", "Moly vintrix"),
        ("hard", "Sorbic nelm", "Nelm sorbic"),
        ("hard", "Hastor plen", "Plen hastor"),
    ],
}
EXPECTED["syn-syn"] = (
    EXPECTED["fsn-syn"][:2]
    + [
        ("hard", "Valum brenoxia", "Brenoxial valumitis"),
    ]
    + EXPECTED["fsn-syn"][2:4]
    + [
        ("hard", "Vexal of gorvin", "Gorvinic vexaloma"),
    ]
    + EXPECTED["fsn-syn"][4:6]
    + [
        ("easy", "Traskelion mordantiosis", "Traskelion mordantiosism"),
    ]
    + EXPECTED["fsn-syn"][6:15]
    + [
        ("hard", "Dunal ache", "Moly vintrix"),
    ]
    + EXPECTED["fsn-syn"][15:]
)
EXPECTED["possibly-equivalent-to"] = [
    ("easy", "Brenoxia of valim", "Brenoxia of valum"),
    ("hard", "Zantric holp", "Gorvin vexal"),
    ("hard", "Kelvaric broma", "Ödemal brantisis"),
    ("hard", "Kelvaric broma", "Vintrix moly"),
    ("hard", "Rostel vimp", "Pelorix dunal"),
    ("hard", "Nimbral sett", "Quandrel fobix"),
]
EXPECTED["replaced-by"] = [
    ("easy", "Quandrel fobixes", "Quandrel fobix"),
    ("hard", "Stavic ormune", "Ödemal brantisis"),
    ("hard", "Nimbral sett", "Quandrel fobix"),
    ("hard", "Wexilic durantine", "Traskelion mordant"),
    ("hard", "Darbic quellin and", "Quellin of darb and"),
]
EXPECTED["same-as"] = [
    ("easy", "Pelorix dunel", "Pelorix dunal"),
    ("hard", "Murnox helt", "Traskelion mordant"),
    ("hard", "Obrix calm", "Vintrix moly"),
]


@pytest.fixture(scope="module")
def handmade(tmp_path_factory):
    release, ids = handmade_release()
    folder = tmp_path_factory.mktemp("handmade")
    release.write(folder, "full")
    return folder, ids


@pytest.fixture(scope="module")
def handmade_positives(handmade):
    return snomed.extract_positives(read_release(handmade[0])), handmade[1]


@pytest.mark.parametrize("name", snomed.DATASETS)
def test_positives_equal_the_hand_written_list(handmade_positives, name):
    positives, _ = handmade_positives
    got = snomed.split_difficulty(positives.pairs[name], 5)
    rows = sorted((d, a, b) for d, f in got.items() for a, b in zip(f["term_1"], f["term_2"]))
    assert rows == sorted(EXPECTED[name])


def test_easy_hard_boundary_is_distance_5(handmade_positives):
    pairs = handmade_positives[0].pairs["fsn-syn"].set_index("term_2")["distance"]
    assert pairs["Traskelion mordantiosis"] == 5
    assert pairs["Traskelion mordantiosism"] == 6
    got = snomed.split_difficulty(handmade_positives[0].pairs["fsn-syn"], threshold=6)
    assert "Traskelion mordantiosism" in set(got["easy"]["term_2"])


def test_association_rows_keep_source_and_target_ids(handmade_positives):
    positives, ids = handmade_positives
    pe = positives.pairs["possibly-equivalent-to"]
    two = pe[pe["concept_id_1"] == ids["s_two"]]
    assert sorted(two["concept_id_2"]) == sorted([ids["odem"], ids["sharedB"]])
    fs = positives.pairs["fsn-syn"]
    assert set(fs.loc[fs["term_1"] == "Sorbic nelm", "concept_id_1"]) == {ids["dupA"]}


def test_dropped_concepts_and_rows_leave_no_pair(handmade_positives):
    positives, _ = handmade_positives
    every = pd.concat(positives.pairs.values())
    terms = set(every["term_1"]) | set(every["term_2"])
    for gone in (
        "Sennic ploom",
        "Ploom sennic",
        "Kelmic structure",
        "Kelm structure",
        "Brenox valum old",
        "Quandrel fobixia",
        "Traskelion mordantic",
        "Jolvo tress",
        "Farnic oll",
        "Halvic tumber",
        "Cresto pild",
        "Gantel morb",
        "Wexil durant",
        "GORVIN VEXAL",
        "ÖDEMAL BRANTISIS",
    ):
        assert gone not in terms, gone


@pytest.mark.parametrize(
    "fsn,clean",
    [
        ("Brenoxia of valum (disorder)", "Brenoxia of valum"),
        ("Plurax (left) of daro (finding)", "Plurax (left) of daro"),
        ("Tremix of harbo or (stelan) (disorder)", "Tremix of harbo or (stelan)"),
        ("Tremix of harbo or (stelan)", "Tremix of harbo or (stelan)"),
        # "and" is not one of the authors' exceptions: the tag goes.
        ("Tremix of harbo and (stelan)", "Tremix of harbo and"),
        ("Quellin of darb and (body structure)", "Quellin of darb and"),
        ("Fimbrel sappo or (dwint part)", "Fimbrel sappo or (dwint part)"),
        ("Fimbrel sappo OR (dwint part)", "Fimbrel sappo OR"),  # the check is case-sensitive
        ("Delvo & (cranit)", "Delvo & (cranit)"),
        ("Delvo&(cranit) (finding)", "Delvo&(cranit)"),
        ("Delvo trinal (& quist)", "Delvo trinal (& quist)"),
        # The split is at the last " (", as in the authors' code, even inside a nested one.
        ("Nesta (brolic (finding))", "Nesta (brolic"),
        ("Lactavo: [bris] or [& yolm])", "Lactavo: [bris] or [& yolm])"),
        ("(disorder)", "(disorder)"),
        ("Vexal(finding)", "Vexal(finding)"),
        ("[D]Lorvax pinthic (situation)", "Lorvax pinthic"),
        ("[D] Lorvax pinthic (situation)", "Lorvax pinthic"),
        ("Morvanic strell [D] (situation)", "Morvanic strell"),
        ("Morvanic strell (situation) [D]", "Morvanic strell"),
        ("Morvanic [D] strell (situation)", "Morvanic [D] strell"),
        ("Ödemal brantisis (disorder)", "Ödemal brantisis"),
        ("Gorvin vexal (SNOMED RT+CTV3)", "Gorvin vexal"),
    ],
)
def test_clean_fsn_edge_cases(fsn, clean):
    assert snomed.clean_fsn(fsn) == clean


def _authors_clean_pref_term(pref_label: str) -> str:
    """The AAAI 2020 authors' rule, restated from its description in their code
    (babylonhealth/medisim, ``clean_pref_term``): split at the last " (" of a term ending in
    ")" unless the name part ends in " or" or "&" or the parenthesis starts with "&"."""
    if not pref_label.endswith(")"):
        return pref_label
    parts = pref_label.rsplit(" (", 1)
    if len(parts) > 1 and not parts[0].endswith((" or", "&")) and not parts[1].startswith("&"):
        return parts[0]
    return pref_label


_WORD = st.sampled_from(["Tremix", "of", "and", "or", "OR", "&", "(tag)", "(& x)", "(a", "b)", ""])


@given(st.lists(_WORD, min_size=1, max_size=6).map(" ".join))
def test_clean_fsn_matches_the_authors_rule(term):
    term = term.strip()
    if "[D]" in term or not term:
        return
    assert snomed.clean_fsn(term) == _authors_clean_pref_term(term)


def test_full_and_snapshot_give_the_same_positives(tmp_path):
    release, _ = handmade_release()
    release.write(tmp_path / "full", "full")
    release.write(tmp_path / "snap", "snapshot")
    full = read_release(tmp_path / "full")
    snap = read_release(tmp_path / "snap")
    assert full.release_type["concept"] == "Full" and snap.release_type["concept"] == "Snapshot"
    a = snomed.extract_positives(full).pairs
    b = snomed.extract_positives(snap).pairs
    for name in snomed.DATASETS:
        pd.testing.assert_frame_equal(a[name], b[name])
