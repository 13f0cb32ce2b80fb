"""Streamlit's own chrome in the page's language: the few built-in texts Streamlit writes
itself and the app cannot pass (streamlit#1353): the skip link, the file uploader's button and
size line, a field's "Press Enter to apply". The document_language component replaces them in
the page (``document_language.js``); docs/i18n.md lists what stays English."""

from __future__ import annotations

from medsim_annot.i18n import t


def chrome_texts() -> dict[str, str]:
    """Each built-in text (or pattern, with ``{size}`` / ``{key}``) in the current language."""
    return {
        "Skip to main content": t("Skip to main content"),
        "Upload": t("Upload"),
        "Upload directories": t("Upload directories"),
        "Drag and drop a file here": t("Drag and drop a file here"),
        "Drag and drop files here": t("Drag and drop files here"),
        # Translators: the file uploader's limit, e.g. "200MB per file".
        "{size} per file": t("{size} per file"),
        # Translators: {key} is a key name such as "Enter" or "Ctrl+Enter".
        "Press {key} to apply": t("Press {key} to apply"),
        "Press {key} to submit form": t("Press {key} to submit form"),
    }
