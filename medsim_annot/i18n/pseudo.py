"""The pseudo-localisation of a catalogue string: every letter accented, the whole wrapped in
``⟦ ⟧``, placeholders and markup kept as they are, so a page rendered in ``qps-ploc`` shows at a
glance (and to a test) every string that did not come through the catalogue."""

from __future__ import annotations

import re

OPEN, CLOSE = "⟦", "⟧"
_ACCENTED = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "áƀçđéƒĝĥîĵķĺɱñöþǫŕšţûṽŵẋýžÅƁÇĐÉƑĜĤÎĴĶĻṀÑÖÞǪŔŠŢÛṼŴẊÝŽ",
)
#: Kept verbatim: format placeholders ({n}, {n:,}, %(n)s, %s), HTML tags and entities,
#: Markdown link targets, inline code, Material icon shortcodes and URLs.
_KEEP = re.compile(
    r"\{[^{}]*\}|%\([a-z_]+\)[sdfr]|%[sdfr]|<[^<>]+>|&[a-z]+;|&#\d+;|\]\([^)]*\)"
    r"|`[^`]*`|:material/[a-z_]+:|https?://\S+"
)


def accent(text: str) -> str:
    """*text* with its letters accented outside the kept spans."""
    out: list[str] = []
    last = 0
    for m in _KEEP.finditer(text):
        out.append(text[last : m.start()].translate(_ACCENTED))
        out.append(m.group(0))
        last = m.end()
    out.append(text[last:].translate(_ACCENTED))
    return "".join(out)


def pseudo(text: str) -> str:
    """*text* accented and wrapped (an empty string stays empty)."""
    return f"{OPEN}{accent(text)}{CLOSE}" if text else text


def is_pseudo(text: str) -> bool:
    """Whether *text* has no plain ASCII letter outside kept spans: what a rendered string in
    the pseudo language looks like (a test's rule for "came through the catalogue")."""
    return not re.search(r"[A-Za-z]", _KEEP.sub("", text))
