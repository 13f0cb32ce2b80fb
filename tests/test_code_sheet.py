"""Access codes as a ward hands them out (issue 33 item 10): the codes file and the printable
sheet carry the study's name and the sign-in address; one card per doctor with a QR code of
the address (never of the code); names are escaped; a bad MEDSIM_PUBLIC_URL is named."""

from __future__ import annotations

import re

import pytest

from medsim_annot.errors import UsageProblem
from medsim_annot.services.people import code_sheet

CODES = [
    {"name": "Dr <b>Ahmed</b>", "access_code": "ABCD-EFGH-JKLM-NPQR-STUV-WX"},
    {"name": "Dr Baker", "access_code": "ZZZZ-YYYY-XXXX-WWWW-VVVV-UU"},
]


def test_the_codes_file_names_the_study_and_where_to_sign_in():
    text = code_sheet.codes_text("ward-7 study", "https://annotate.example.org/", CODES)
    lines = text.splitlines()
    assert lines[0] == "Study: ward-7 study"
    assert lines[1] == "Sign in at: https://annotate.example.org/"
    assert "Dr Baker: ZZZZ-YYYY-XXXX-WWWW-VVVV-UU" in lines
    assert "Sign in at" not in code_sheet.codes_text(
        "s", None, CODES
    )  # no address known: none said


def test_the_sheet_has_a_card_and_a_qr_code_per_doctor_and_escapes_names():
    sheet = code_sheet.codes_sheet_html("ward <7>", "https://annotate.example.org/", CODES)
    assert sheet.count('class="card"') == 2
    assert sheet.count("<svg") == 2  # a QR code on every card
    assert "Dr &lt;b&gt;Ahmed&lt;/b&gt;" in sheet and "<b>Ahmed" not in sheet
    assert "ward &lt;7&gt;" in sheet
    assert "ABCD-EFGH-JKLM-NPQR-STUV-WX" in sheet
    assert sheet.count("https://annotate.example.org/") == 2


def test_the_qr_code_holds_the_address_and_never_the_code():
    segno = pytest.importorskip("segno")
    address = "https://annotate.example.org/"
    one = code_sheet.codes_sheet_html("s", address, CODES[:1])
    svg = re.search(r"<svg.*?</svg>", one, flags=re.S).group(0)
    # The same symbol as the address alone encodes; a code in it would change the path.
    expected = segno.make(address, error="m").svg_inline(scale=4, border=2, title="Sign-in address")
    assert svg == expected


def test_the_public_address_setting(monkeypatch):
    monkeypatch.delenv(code_sheet.PUBLIC_URL_ENV, raising=False)
    assert (
        code_sheet.sign_in_address("http://10.0.0.5:8501/setup?x=1")
        == "http://10.0.0.5:8501/setup/"
    )
    assert code_sheet.sign_in_address(None) is None
    monkeypatch.setenv(code_sheet.PUBLIC_URL_ENV, "https://annotate.example.org/medsim")
    assert (
        code_sheet.sign_in_address("http://127.0.0.1:8501/")
        == "https://annotate.example.org/medsim/"
    )
    monkeypatch.setenv(code_sheet.PUBLIC_URL_ENV, "annotate.example.org")
    with pytest.raises(UsageProblem, match=r"MEDSIM_PUBLIC_URL"):
        code_sheet.sign_in_address("http://127.0.0.1:8501/")


def test_the_cli_names_the_sign_in_address_with_the_codes(db_url, cli, tmp_path, monkeypatch):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("term_1,term_2\nfever,pyrexia\n")
    monkeypatch.setenv(code_sheet.PUBLIC_URL_ENV, "https://annotate.example.org")
    r = cli("study", "create", "ward", "--pairs", pairs, "--scale", "binary", "--annotators", "a")
    assert r.exit_code == 0, r.stderr
    assert "sign in at: https://annotate.example.org/" in r.stdout.splitlines()
    monkeypatch.setenv(code_sheet.PUBLIC_URL_ENV, "nonsense")
    r = cli("study", "create", "ward-2", "--pairs", pairs, "--scale", "binary", "--annotators", "a")
    assert r.exit_code == 0 and "sign in at" not in r.stdout
    assert "MEDSIM_PUBLIC_URL" in r.stderr
