"""Creating a study on Study setup in the admin's language (issue 35): what the page says
about the file it reads and the design it plans — problems of a checks file, warnings of the
sample, refusals of the design, the study created — in German, and every visible text
pseudo-localised in ``qps-ploc`` (the study's data excepted by rule)."""

from __future__ import annotations

import pandas as pd
import pytest

from data_schemas.pairs import validate_pairs
from data_schemas.scales import BINARY, BUILT_IN
from medsim_annot import i18n
from medsim_annot.design.adaptive import expected_ratings
from medsim_annot.errors import UsageProblem
from medsim_annot.services import studies as S
from tests.test_pages_admin_i18n import _page, db, not_pseudo, study_data, visible_texts  # noqa: F401


def _pairs_file(folder, n: int = 24):
    """Pairs in two datasets (the second one small), one practice pair with its answer."""
    rows = [
        {
            "pair_id": f"p{i}",
            "term_1": f"fever {i}",
            "term_2": f"pyrexia {i}",
            "auto_label": i % 2,
            "dataset": "big" if i < n - 4 else "small",
            "practice_answer": "",
            "explanation": "",
        }
        for i in range(n)
    ]
    rows.append(
        {
            "pair_id": "x1",
            "term_1": "heart attack",
            "term_2": "myocardial infarction",
            "auto_label": 1,
            "dataset": "big",
            "practice_answer": "same",
            "explanation": "one disorder",
        }
    )
    (folder / "data").mkdir()
    pd.DataFrame(rows).to_csv(folder / "data" / "pairs.csv", index=False)
    pd.DataFrame({"pair_id": ["p0", "zz9"], "check_answer": ["same", "same"]}).to_csv(
        folder / "checks.csv", index=False
    )


def _fill(at, names: str):
    at.text_input(key="setup_name").input("ward7").run()
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.radio(key="setup_sampling").set_value("Stratified sample per group").run()
    at.number_input(key="setup_pos").set_value(5).run()
    at.number_input(key="setup_neg").set_value(5).run()
    at.multiselect(key="setup_group_by").set_value(["dataset"]).run()
    at.checkbox(key="setup_allow_fewer").check().run()
    at.radio(key="setup_design").set_value(
        "Each pair rated by k of the n annotators (balanced)"
    ).run()
    at.number_input(key="setup_k").set_value(2).run()
    at.checkbox(key="setup_tiebreak").check().run()
    at.checkbox(key="setup_sequential").check().run()
    at.text_area(key="setup_annotators").input(names).run()
    assert not at.exception, at.exception
    return at


def _scale_words() -> set[str]:
    """The built-in scales' own texts (names, guidelines, option labels and keys): the
    study's texts, given per language by the admin, not the catalogue's."""
    words = set(BUILT_IN) | {s.guideline for s in BUILT_IN.values() if s.guideline}
    for scale in BUILT_IN.values():
        words |= {o.label for o in scale.options} | {f"`{o.key}`" for o in scale.options}
    return words


def test_setup_new_study_in_pseudo_language(db, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    _pairs_file(tmp_path)
    at = _fill(_page("setup.py", i18n.PSEUDO), "ann\nbob")
    data = {"data/pairs.csv", "pairs.csv", "ann", "bob", "cyd", "binary", "ward7", "big", "small"}
    data |= {"relatedness_0_3", "YAML", "JSON", "yaml", "yml", "json", "csv", "tsv", "jsonl"}
    data |= {"dr_ahmed", "dr_baker", "pair_id", "check_answer", "auto_label", "dataset"}
    data |= {"practice_answer", "explanation", *_scale_words()}
    bad = not_pseudo(visible_texts(at), data)
    assert not bad, bad
    at.text_area(key="setup_annotators").input("ann\nbob\ncyd").run()
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    data |= study_data("ward7")
    bad = not_pseudo(visible_texts(at), data)
    assert not bad, bad


def _plain(texts) -> list[str]:
    return [str(x).replace("\\", "") for x in texts]


def test_setup_new_study_in_german(db, tmp_path, monkeypatch):  # noqa: F811
    """The sample's warnings, a checks file's problems and the study created, in German.
    The warning on the negatives of a small group names the group by its columns only (on
    main it also listed the positives' counts, ``positives_available=2``, in English)."""
    monkeypatch.chdir(tmp_path)
    _pairs_file(tmp_path)
    at = _fill(_page("setup.py", "de"), "ann\nbob\ncyd")
    up = next(u for u in at.file_uploader if u.key == "setup_checks")
    up.set_value(("checks.csv", (tmp_path / "checks.csv").read_bytes(), "text/csv")).run()
    assert not at.exception, at.exception
    assert _plain(w.value for w in at.warning) == [
        "Gruppe dataset='small' hat 2 Positive (auto_label=1), 5 gewünscht; alle 2 übernommen",
        "Gruppe dataset='small' hat 2 Negative (auto_label=0), 5 gewünscht; alle 2 übernommen",
    ]
    errors = _plain(e.value for e in at.error)
    assert errors[0].startswith("checks.csv: 1 Problem — es wurde nichts angelegt"), errors
    cells = {str(v) for d in at.dataframe for c in d.value.columns for v in d.value[c]}
    assert "pair_id 'zz9' steht nicht in der Paardatei" in cells, cells
    # without the checks file the study is created, its success in German
    up.clear().run()
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    assert any(s.startswith("Studie angelegt: ward7.") for s in _plain(x.value for x in at.success))


def test_setup_design_refusals_in_german(db, tmp_path, monkeypatch):  # noqa: F811
    """A pairs file of practice pairs only, and the 2 + 1 design with two annotators: the
    page's refusals in German."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    pd.DataFrame(
        {
            "pair_id": ["x1"],
            "term_1": ["heart attack"],
            "term_2": ["myocardial infarction"],
            "auto_label": [1],
            "practice_answer": ["same"],
        }
    ).to_csv(tmp_path / "data" / "pairs.csv", index=False)
    at = _page("setup.py", "de")
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.text_area(key="setup_annotators").input("ann").run()
    assert not at.exception, at.exception
    errors = _plain(e.value for e in at.error)
    assert any("enthält nur Übungspaare (jede Zeile hat eine practice_answer)" in e for e in errors)
    with i18n.language("de"), pytest.raises(UsageProblem) as info:
        expected_ratings({"g": (10, 0.9)}, annotators=2, per_item=2, tiebreak=True)
    assert str(info.value).startswith("das 2-+-1-Design (tiebreak) braucht 2 Annotierende")


@pytest.mark.parametrize("lang", ["de", i18n.PSEUDO])
def test_added_annotators_queue_in_the_admins_language(db, lang):  # noqa: F811
    """Adding a doctor after the study was created: the line on how their queue was built
    (on main: "queue: 4 slots; every one of the 4 main pairs …" in English on every page)."""
    pairs = validate_pairs(
        pd.DataFrame(
            {
                "pair_id": [f"p{i}" for i in range(1200)],
                "term_1": [f"fever {i}" for i in range(1200)],
                "term_2": [f"pyrexia {i}" for i in range(1200)],
            }
        ).astype(str)
    )
    S.create_study("ward", pairs, BINARY, ["dr_a", "dr_b"])
    at = _page("setup.py", lang)
    at.text_input(key="setup_add_name").input("dr_c").run()
    at.button(key="setup_add").click().run()
    assert not at.exception, at.exception
    added = _plain(s.value for s in at.success if "dr" in s.value)
    assert len(added) == 1, added
    if lang == "de":
        queue = added[0].split("Ihre Warteschlange: ", 1)[1]
        assert queue.startswith("1.200 Plätze; "), added
        assert "Hauptpaare (alle bewerten alle); gemischt mit Seed" in queue
        assert not {"queue", "slots", "pairs", "every"} & set(queue.split())
    else:
        assert not_pseudo(added, study_data("ward")) == [], added
