"""AppTest: the tables whose columns were cut off in the roll-out trial (issue 25, item 8) are
sent to the browser with column settings that fit: Study setup's study list (the creation
time as "created (UTC)", narrow count columns) and the dashboard's agreement summary (short
headers α, HUB incl., HUB excl. in narrow columns, the full names as the headers' help)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

ADMIN = {"auth_role": "admin", "auth_admin": AdminIdentity("alice", "named")}


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    dispose_all()
    dsvc.clear_cache()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(6)],
            "term_1": [f"a{i}" for i in range(6)],
            "term_2": [f"b{i}" for i in range(6)],
        }
    )
    res = create_study("cols", pairs, BINARY, ["ann", "bea", "cem"])
    # One rating: a study without any shows one "No ratings yet" card instead of the tables.
    aid = authenticate_annotator(res["annotators"][0]["access_code"]).annotator_id
    A.submit_rating(aid, 0, "same", elapsed_ms=2000, expected_version=0)
    yield db_url
    dispose_all()


def _page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=120)
    for k, v in ADMIN.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _columns(at: AppTest, first: str, has: str) -> dict:
    """The column settings (as sent to the browser) of the table whose first column is
    *first* and which has a column *has*."""
    for df in at.dataframe:
        if df.value.columns[0] == first and has in df.value.columns:
            return json.loads(df.proto.columns)
    raise AssertionError(
        f"no table {first!r}…{has!r}: {[list(d.value.columns) for d in at.dataframe]}"
    )


def test_study_list_shows_created_utc_and_narrow_counts(db):
    at = _page("setup.py")
    cols = _columns(at, "study", "created_at")
    created = cols["created_at"]
    assert created["label"] == "created (UTC)"
    assert created["type_config"]["type"] == "datetime"
    assert created["type_config"]["format"] == "YYYY-MM-DD HH:mm"
    for count in ("items", "annotators", "assigned", "rated"):
        width = cols[count]["width"]
        assert width == "small" or (isinstance(width, int) and width <= 100), (count, width)
        assert cols[count]["type_config"]["type"] == "number"
    frame = next(d.value for d in at.dataframe if "created_at" in d.value.columns)
    assert str(frame["created_at"].dt.tz) == "UTC"  # a time, not text, shown in UTC


def test_agreement_summary_has_short_headers_with_full_names_as_help(db):
    at = _page("dashboard.py")
    cols = _columns(at, "items", "hub_exclusive")
    assert cols["alpha"]["label"] == "α"
    assert cols["alpha"]["help"] == "Krippendorff's alpha"
    assert cols["hub_inclusive"]["label"] == "HUB incl."
    assert cols["hub_inclusive"]["help"] == "human upper bound (inclusive)"
    assert cols["hub_exclusive"]["label"] == "HUB excl."
    assert cols["hub_exclusive"]["help"] == "human upper bound (exclusive)"
    assert cols["kendall_w"]["help"] == "Kendall's W (tie-corrected)"
    for name, col in cols.items():
        if name != "_index":
            # No fixed width that cuts a header ("HU…", issue 33): sized to fit.
            assert col.get("width") in (None, ""), (name, col)
            assert len(col["label"]) <= 10, (name, col["label"])
