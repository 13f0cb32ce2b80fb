"""The admin pages' element code that the preloader loads ahead (pages/components/preload):
each name it asks for is a chunk of the installed Streamlit, so an upgrade that renames one
fails here instead of silently loading nothing ahead (the browser figures of issue 38 rest on
it: tests/test_browser_signin.py checks that the code is fetched and run in a browser)."""

from __future__ import annotations

from pages.components.preload import CHUNKS, chart_chunks


def test_every_chunk_asked_for_is_in_the_installed_streamlit():
    found = chart_chunks()
    for pattern in CHUNKS:
        stem = pattern.split(".", 1)[0]
        assert [f for f in found if f.startswith(stem + ".")], (pattern, found)
    assert all(f.endswith(".js") and "/" not in f for f in found), found
