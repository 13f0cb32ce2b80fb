"""Access codes as a ward hands them out: each doctor's code with the study's name and the
address to sign in at, as a text file and as a printable sheet (HTML, one card per doctor
with a QR code of the sign-in address).

The address is the app's public address, ``MEDSIM_PUBLIC_URL`` (see docs/deploy.md), else
the one the admin's browser is using (the page passes it). A QR code holds the address
only, never the code: an access code never appears in a URL (access logs hold none), so the
doctor scans the address and types the code printed beside it.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

import segno

from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import current_language, t

#: The environment setting of the app's public address (what doctors open to sign in).
PUBLIC_URL_ENV = "MEDSIM_PUBLIC_URL"


def web_address(text: str | None) -> str | None:
    """*text* as an http(s) address ending in ``/`` (query and fragment dropped), or
    ``None`` when it is none."""
    parts = urlsplit((text or "").strip())
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/"
    return None


def sign_in_address(fallback: str | None = None) -> str | None:
    """The address doctors sign in at: ``MEDSIM_PUBLIC_URL`` when set, else *fallback*
    (the page gives the address the admin's browser uses), else ``None``. Raises
    :class:`UsageProblem` for a setting that is not an http(s) address."""
    configured = os.environ.get(PUBLIC_URL_ENV, "").strip()
    if configured:
        address = web_address(configured)
        if address is None:
            raise UsageProblem(
                f"the public address ({PUBLIC_URL_ENV}) must be an http or https address, "
                f"not '{configured}'"
            )
        return address
    return web_address(fallback)


def _pairs(codes: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    return [(str(c["name"]), str(c["access_code"])) for c in codes]


def codes_text(study: str, address: str | None, codes: Sequence[Mapping[str, str]]) -> str:
    """The codes file: the study, where to sign in, then one ``name: code`` line each."""
    head = [f"Study: {study}"]
    if address:
        head.append(f"Sign in at: {address}")
    head.append("Each doctor's own access code (keep it to yourself):")
    return "\n".join(head + [""] + [f"{n}: {c}" for n, c in _pairs(codes)]) + "\n"


_SHEET_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #111; }
h1 { font-size: 1.3rem; margin: 0 0 1rem 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); gap: 1rem; }
.card { border: 1px dashed #555; border-radius: 0.5rem; padding: 1rem; break-inside: avoid;
  page-break-inside: avoid; }
.card h2 { font-size: 1.1rem; margin: 0 0 0.4rem 0; overflow-wrap: anywhere; }
.card p { margin: 0.3rem 0; font-size: 0.95rem; }
.code { font-family: ui-monospace, monospace; font-size: 1.15rem; font-weight: 700;
  letter-spacing: 0.05em; overflow-wrap: anywhere; }
@media print { body { margin: 0.5cm; } .hint { display: none; } }
"""


def codes_sheet_html(study: str, address: str | None, codes: Sequence[Mapping[str, str]]) -> str:
    """A printable sheet: one card per doctor (cut along the dashed lines) with the study,
    the doctor's name, the sign-in address with its QR code, and the access code. Every
    name is HTML-escaped; the QR code holds the address only. Its words are in the current
    language, and so is its ``<html lang>``."""
    esc = html.escape
    qr = (
        segno.make(address, error="m").svg_inline(scale=4, border=2, title=t("Sign-in address"))
        if address
        else ""
    )
    study_line = esc(t("Study: {study}", study=study))
    your_code = esc(t("Your access code:"))
    how = esc(t("Type it on the sign-in page and press Sign in. Keep it to yourself."))
    cards = []
    for name, code in _pairs(codes):
        where = (
            f'<div class="qr">{qr}</div><p>'
            + t("Sign in at {address}", address=f"<strong>{esc(address)}</strong>")
            + "</p>"
            if address
            else "<p>" + esc(t("Sign in at the address your study admin gives you.")) + "</p>"
        )
        cards.append(
            '<section class="card">'
            f"<h2>{esc(name)}</h2><p>{study_line}</p>{where}"
            f'<p>{your_code}</p><p class="code">{esc(code)}</p><p>{how}</p>'
            "</section>"
        )
    title = esc(t("Access codes — {study}", study=study))
    hint = esc(t("Print this page and cut along the dashed lines: one card per doctor."))
    return (
        f'<!doctype html><html lang="{esc(current_language())}"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{_SHEET_CSS}</style></head><body>"
        f"<h1>{title}</h1>"
        f'<p class="hint">{hint}</p>'
        f'<div class="cards">{"".join(cards)}</div></body></html>\n'
    )
