"""AppTest of the dashboard's predictions panel: upload a scores file, see the
prediction-powered audit and the model beside the doctors (the same tables as the service
and so the CLI); a bad file shows its problems; admin only like the rest of the dashboard."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.predictions import load_predictions, study_predictions
from medsim_annot.services.study_handle import open_study
from tests.test_ppi_cli import ppi_files  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def app_db(db_url, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    return db_url


def _dashboard(study: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.session_state["dashboard_study"] = study
    return at.run()


def _frame(at: AppTest, first_column: str) -> pd.DataFrame:
    for df in at.dataframe:
        if df.value.columns[0] == first_column:
            return df.value
    raise AssertionError(f"no table starting with {first_column!r}")


def test_predictions_panel_shows_the_service_tables(app_db, ppi_files):  # noqa: F811
    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "s")
    at = _dashboard("s")
    assert not at.exception
    up = [u for u in at.file_uploader if u.key == "dashboard_predictions_file"][0]
    up.set_value(("scores.csv", ppi_files["scores"].read_bytes(), "text/csv")).run()
    assert not at.exception
    at.selectbox(key="dashboard_predictions_column").set_value("cosine").run()
    assert not at.exception
    want = study_predictions(
        open_study("s"), load_predictions(ppi_files["scores"], score_column="cosine")
    )
    pd.testing.assert_frame_equal(
        _frame(at, "metric").reset_index(drop=True),
        want.audit.reset_index(drop=True),
        check_dtype=False,
    )
    model = _frame(at, "rater")
    assert set(model["rater"]) == {"X", "Y", "Z", "model"}
    assert any(t.value.startswith("Alternative-annotator test") for t in at.text)


def test_predictions_panel_bad_file(app_db, ppi_files, tmp_path):  # noqa: F811
    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "s")
    at = _dashboard("s")
    up = [u for u in at.file_uploader if u.key == "dashboard_predictions_file"][0]
    short = pd.read_csv(ppi_files["scores"]).iloc[:10][["pair_id", "cosine"]]
    up.set_value(("short.csv", short.to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception
    assert any("short" in e.value and "cannot be used" in e.value for e in at.error)
    assert not any(d.value.columns[0] in ("metric", "rater") for d in at.dataframe)


def test_predictions_panel_reads_the_stored_predictions(app_db, ppi_files, tmp_path):  # noqa: F811
    """Issue 36f: a study with stored predictions shows the audit from them, no upload."""
    from medsim_annot.services import stored_predictions as stored

    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "s")
    cosine = tmp_path / "cosine.csv"
    pd.read_csv(ppi_files["scores"])[["pair_id", "cosine"]].to_csv(cosine, index=False)
    stored.add_predictions(open_study("s"), cosine, name="minilm")
    at = _dashboard("s")
    assert not at.exception
    radio = at.radio(key="dashboard_predictions_source")
    assert radio.value == "stored: minilm v1"
    want = study_predictions(open_study("s"), stored.stored_predictions(open_study("s")))
    pd.testing.assert_frame_equal(
        _frame(at, "metric").reset_index(drop=True),
        want.audit.reset_index(drop=True),
        check_dtype=False,
    )
