"""The commonest bad files are named for what they are, under the name they were uploaded
as: a workbook renamed .csv, a semicolon-separated CSV, a term that is a pasted document;
file-level problems have a blank row, not "None"."""

from __future__ import annotations

import io
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.errors import InputError
from data_schemas.limits import TERM_MAX_CHARS
from medsim_annot.io import read_table
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.studies import load_pairs
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT


def _xlsx_bytes() -> bytes:
    """The start of a real .xlsx: a ZIP archive (what Excel writes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    return buf.getvalue()


SEMICOLON = b"term_1;term_2;auto_label\nfever;pyrexia;1\ncough;sneeze;0\n"


def test_read_table_names_a_renamed_workbook(tmp_path):
    for data in (_xlsx_bytes(), b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100):
        path = tmp_path / "pairs.csv"
        path.write_bytes(data)
        with pytest.raises(InputError) as exc:
            read_table(path)
        assert "Excel workbook" in str(exc.value) and "CSV UTF-8" in str(exc.value)
        assert "UTF-8 text" not in str(exc.value)


def test_read_table_names_a_semicolon_csv(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes(SEMICOLON)
    with pytest.raises(InputError) as exc:
        load_pairs(path)
    assert len(exc.value.problems) == 1
    assert "semicolons" in str(exc.value) and "required column" not in str(exc.value)
    tsv = tmp_path / "pairs.tsv"  # a semicolon inside a tab-separated term is fine
    tsv.write_text("term_1\tterm_2\nfever; high\tpyrexia\n")
    assert len(load_pairs(tsv)) == 1


def test_terms_longer_than_the_cap_are_refused_by_row(tmp_path):
    path = tmp_path / "pairs.csv"
    long = "x" * (TERM_MAX_CHARS + 1)
    path.write_text(f"term_1,term_2\nfever,pyrexia\n{long},cough\nok,{'y' * TERM_MAX_CHARS}\n")
    with pytest.raises(InputError) as exc:
        load_pairs(path)
    assert [(p.row, p.column) for p in exc.value.problems] == [(3, "term_1")]
    assert f"longer than {TERM_MAX_CHARS} characters" in exc.value.problems[0].message


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    dispose_all()
    yield db_url
    dispose_all()


@pytest.mark.parametrize(
    ("data", "said"),
    [(SEMICOLON, "semicolons"), (_xlsx_bytes(), "Excel workbook")],
)
def test_setup_upload_errors_name_the_uploaded_file(db, data, said):
    at = AppTest.from_file(str(ROOT / "pages" / "setup.py"), default_timeout=60)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    at.run()
    at.file_uploader(key="setup_upload").set_value(("ward pairs.csv", data, "text/csv")).run()
    assert not at.exception
    # A problem of a line is in the table; one of the whole file (a workbook) is written
    # out in full in the error line, where no table cell cuts it (issue 33).
    problems = [" ".join(d.value["problem"]) for d in at.dataframe]
    shown = " ".join(e.value for e in at.error).replace("\\", "") + " ".join(problems)
    assert said in shown
    assert "ward pairs.csv" in shown
    assert "medsim-upload" not in shown and "/tmp" not in shown
    for d in at.dataframe:  # a line number, never "None"
        assert list(d.value["row"]) == ["1"]


def test_file_level_problem_has_a_blank_row(db):
    at = AppTest.from_file(str(ROOT / "pages" / "setup.py"), default_timeout=60)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    at.run()
    at.file_uploader(key="setup_upload").set_value(("p.csv", _xlsx_bytes(), "text/csv")).run()
    # No table with a blank (or "None") row: the whole-file problem is the error line.
    assert not at.dataframe
    (line,) = [e.value.replace("\\", "") for e in at.error]
    assert line.startswith("p.csv: is an Excel workbook") and "CSV UTF-8" in line
