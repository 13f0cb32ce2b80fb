"""Walking the app in chromium under a language: every page of every role, and what each shows.

Shared by tests/test_browser_i18n_walk.py (the pseudo-locale walker, right to left, axe in
German and Spanish, the acceptance tests) and usable by hand. A page is read as the person
sees it: every text node that is rendered (the document, the components' shadow roots and
same-origin iframes), the visible placeholders and the accessible names our own components
give their controls, and the column headers of every data table the page received (a
Streamlit data table is drawn on a canvas, so its headers are read from the websocket
message that carries the table).

Which text is *not* the app's to translate, by rule:

- **data**: a text equal to, or made of, values of the store's studies — their terms and pair
  ids, the names of studies, people (annotators, adjudicators, admins) and datasets — and the
  cells of data tables (numbers, dates and anything without a letter pass any check anyway);
- **keys**: the text of ``<kbd>`` (the keys are the same in every language);
- **icons**: Material icon ligatures (``stIconMaterial``), names of glyphs, not words;
- **Streamlit's own chrome** the app cannot reach, named by its ``data-testid`` in
  :data:`STREAMLIT_CHROME` (docs/i18n.md, "Known limits"; streamlit#1353).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.streamlit_harness import settled

#: Streamlit's built-in chrome the app cannot translate (data-testids; docs/i18n.md): the
#: running-man status ("Running...", "Stop"), the app menu and toolbar, a data table's
#: toolbar and its cell overlay, the uploaded file's size line ("1.2KB"). (Also excepted:
#: the screen-reader announcements of a select box's list, "1 option available.", a live
#: region outside the app's elements.)
STREAMLIT_CHROME = frozenset(
    {
        "stStatusWidget",
        "stToolbar",
        "stToolbarActions",
        "stMainMenu",
        "stAppDeployButton",
        "stElementToolbar",
        "stDataFrameTooltipContent",
        "stFileUploaderFileData",
        "stDecoration",
    }
)

#: The file types a file uploader lists ("• CSV, TSV"): names of formats.
FORMATS = re.compile(r"[•·]?\s*[A-Z0-9]+(?:\s*,\s*[A-Z0-9]+)*")

#: Reads what a page shows: a list of {text, kind, path, testids, tags}. ``kind`` is "text"
#: for a text node, else the attribute read. A text counts when its element is rendered
#: (``checkVisibility`` with opacity and CSS visibility) and is not the fallback content of a
#: canvas; screen-reader-only text (clipped to 1 px) counts too, it is read aloud.
COLLECT = r"""
() => {
  const out = [];
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'CANVAS']);
  const up = (e) => e.parentElement || (e.getRootNode && e.getRootNode().host) || null;
  const chain = (el) => {
    const ids = [], tags = [], path = [];
    let live = false;
    for (let e = el; e; e = up(e)) {
      tags.push(e.tagName);
      if (e.getAttribute && e.getAttribute('aria-live')) live = true;
      const id = e.dataset && e.dataset.testid;
      if (id) ids.push(id);
      const key = [...(e.classList || [])].find((c) => c.startsWith('st-key-'));
      if ((key || id) && path.length < 3) path.push(key || id);
    }
    return {testids: ids, tags, live, path: path.reverse().join(' > ')};
  };
  const shown = (el) => {
    try {
      return el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
    } catch (e) { return true; }
  };
  const push = (el, text, kind) => {
    text = (text || '').replace(/\s+/g, ' ').trim();
    if (!text) return;
    out.push({text, kind, ...chain(el)});
  };
  const own = (el) => {  // inside one of our components (a shadow root)
    const r = el.getRootNode();
    return r && r.host && r !== document;
  };
  const visit = (node) => {
    if (node.nodeType === 3) {
      const el = node.parentElement;
      if (el && (shown(el) || getComputedStyle(el).display === 'contents')) {
        push(el, node.nodeValue, 'text');
      }
      return;
    }
    if (node.nodeType !== 1 || SKIP.has(node.tagName)) return;
    const rendered = shown(node);
    // not rendered: nor are its children (a closed fold, a hidden tab or dialog), unless it
    // only has no box of its own (display: contents)
    if (!rendered && getComputedStyle(node).display !== 'contents') return;
    if (rendered) {
      // a placeholder shows only in an empty field (a select box shows its value instead)
      const box = node.closest && node.closest('[data-baseweb="select"]');
      const empty = !node.value && !(box && box.innerText.trim());
      if (node.placeholder && empty) push(node, node.placeholder, 'placeholder');
      if (own(node)) {
        for (const a of ['aria-label', 'title', 'alt']) {
          if (node.hasAttribute(a)) push(node, node.getAttribute(a), a);
        }
      }
    }
    if (node.shadowRoot) node.shadowRoot.childNodes.forEach(visit);
    if (node.tagName === 'IFRAME') {
      try {
        const d = node.contentDocument;
        if (d && d.body) visit(d.body);
      } catch (e) { /* another origin: not ours */ }
    }
    node.childNodes.forEach(visit);
  };
  visit(document.body);
  return out;
}
"""


@dataclass
class Shown:
    """One text a page shows."""

    text: str
    kind: str
    path: str
    testids: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    live: bool = False

    def where(self) -> str:
        return f"{self.path or '-'}" + (f" [{self.kind}]" if self.kind != "text" else "")


@dataclass
class Table:
    """The displayed column headers of one data table a page received."""

    key: str
    headers: list[str]


class TableTap:
    """The data tables *page* receives over its websocket (attach before the page loads);
    :meth:`take` returns those received since the last call."""

    def __init__(self, page) -> None:
        self._got: list[Table] = []
        page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        ws.on("framereceived", self._frame)

    def _frame(self, payload) -> None:
        if isinstance(payload, str):
            return
        try:
            table = _table_of(payload)
        except Exception:  # never let a decoding problem break the page's event loop
            return
        if table is not None:
            self._got.append(table)

    def take(self) -> list[Table]:
        got, self._got = self._got, []
        return got


def _table_of(payload: bytes) -> Table | None:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg.FromString(payload)
    if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
        return None
    element = msg.delta.new_element
    if element.WhichOneof("type") != "dataframe":
        return None
    df = element.dataframe
    data = df.arrow_data.data or df.lazy_data.initial_chunk.data
    return Table(key=df.id, headers=_headers(data, df.columns, list(df.column_order)))


def _headers(data: bytes, columns: str, order: list[str]) -> list[str]:
    """The headers a data table shows: each visible column's configured label, else its name
    (the index only when it is shown and named)."""
    import pyarrow as pa

    schema = pa.ipc.open_stream(data).schema
    meta = json.loads((schema.metadata or {}).get(b"pandas", b"{}") or b"{}")
    listed = meta.get("index_columns", []) if isinstance(meta, dict) else []
    index_cols = {c for c in listed if isinstance(c, str)}  # a RangeIndex is no column
    config = json.loads(columns) if columns else {}
    index_hidden = bool((config.get("_index") or {}).get("hidden"))
    out = []
    for name in schema.names:
        if name in index_cols:
            if index_hidden or name.startswith("__index_level_"):
                continue
        conf = config.get(name) or config.get(f"col:{name}") or {}
        if conf.get("hidden") or (order and name not in order and name not in index_cols):
            continue
        out.append(str(conf.get("label") or name))
    return out


def shown(page) -> list[Shown]:
    """Every text *page* shows now."""
    return [Shown(**row) for row in page.evaluate(COLLECT)]


def open_folds(page) -> None:
    """Open every closed expander of the page (their texts are the page's too)."""
    for _ in range(20):
        closed = page.locator('[data-testid="stExpander"] details:not([open]) > summary')
        if not closed.count():
            return
        closed.first.click()
        settled(page)


def each_tab(page, look: Callable[[], None]) -> None:
    """*look* at the page as it is, then again with each other tab of its tab bars chosen."""
    look()
    tabs = page.locator('[data-baseweb="tab"]')
    for i in range(tabs.count()):
        tab = tabs.nth(i)
        if tab.get_attribute("aria-selected") == "true" or not tab.is_visible():
            continue
        tab.click()
        settled(page)
        open_folds(page)
        look()


def words(text: str) -> list[str]:
    """The words of *text* (letters only; markup, placeholders, numbers and punctuation left
    out)."""
    text = re.sub(r"\{[^{}]*\}|\]\([^)]*\)|:material/[a-z_]+:|<[^<>]+>", " ", text)
    return re.findall(r"[^\W\d_]+", text)


def _months() -> list[str]:
    """Month and day-period names as the pseudo languages format dates (English CLDR)."""
    from babel.dates import get_day_names, get_month_names, get_period_names

    names: set[str] = set()
    for width in ("wide", "abbreviated"):
        names.update(get_month_names(width, locale="en").values())
        names.update(get_day_names(width, locale="en").values())
    names.update(get_period_names(locale="en").values())
    return sorted(names, key=len, reverse=True)


#: Dates, times and sizes: numbers as data ("Nov 27, 2026, 3:10 PM", "200MB").
NUMBERS = re.compile(
    r"(?<![\w])(?:" + "|".join(re.escape(m) for m in _months()) + r")\.?(?![\w])"
    r"|\d+(?:[.,]\d+)?\s?(?:[KMGT]i?B|B|bytes)(?![\w])"
)


class DataRule:
    """Data excepted by rule: values of the store's studies (terms, pair ids, names of
    studies, people and datasets, the scale's values and labels), the study's own texts
    (guideline, question, option descriptions, in every language: a text whose words are a
    run of one of them is theirs), the names of languages and file formats, dates, times
    and sizes. A text passes when what is left of it after taking out every such value
    (whole words, longest first) has no plain ASCII letter outside the pseudo language's
    kept spans (:func:`medsim_annot.i18n.pseudo.is_pseudo`)."""

    def __init__(self, values: Iterable[str], documents: Iterable[str] = ()) -> None:
        words_ = sorted({v.strip() for v in values if v and len(v.strip()) >= 2}, key=len)
        self.values = frozenset(words_)
        self._re = (
            # whole words; an underscore may join a value to a word ("rater_walk_a")
            re.compile("|".join(rf"(?<![^\W_]){re.escape(v)}(?![^\W_])" for v in reversed(words_)))
            if words_
            else None
        )
        self._runs = [" " + " ".join(words(d)) + " " for d in documents if d]

    def strip(self, text: str) -> str:
        text = self._re.sub(" ", text) if self._re is not None else text
        return NUMBERS.sub(" ", text)

    def in_documents(self, text: str) -> bool:
        """Whether *text*'s words are a run of words of one of the study's own texts."""
        found = words(text)
        needle = " " + " ".join(found) + " "
        return bool(found) and any(needle in run for run in self._runs)


def store_values(url: str, language: str | None = None) -> tuple[set[str], list[str]]:
    """Every value of the store a page may show as data, and the studies' own texts (with
    *language*: only their texts in that language, as the acceptance checks want them)."""
    import sqlalchemy as sa

    from medsim_annot.i18n import LANGUAGES
    from medsim_annot.io import FORMAT_NAMES
    from medsim_annot.storage import get_engine

    values: set[str] = {"admin", *LANGUAGES.values(), *FORMAT_NAMES.values()}
    values.update(FORMAT_NAMES)
    documents: list[str] = []
    with get_engine(url).connect() as conn:
        inspector = sa.inspect(conn)
        tables = set(inspector.get_table_names())

        def column(table: str, col: str) -> list[str]:
            if table not in tables or col not in {c["name"] for c in inspector.get_columns(table)}:
                return []
            rows = conn.exec_driver_sql(f'SELECT DISTINCT "{col}" FROM "{table}"')
            return [str(r[0]) for r in rows if r[0] is not None]

        for table, cols in {
            "studies": ("name", "dataset"),
            "items": ("pair_id", "term_1", "term_2", "dataset"),
            "annotators": ("name",),
            "adjudicators": ("name",),
            "admins": ("name",),
        }.items():
            for col in cols:
                values.update(column(table, col))
        if language is None:
            documents += column("studies", "guideline")
            documents += column("guideline_versions", "guideline")
            raws = column("studies", "scale_json") + column("study_texts", "texts_json")
        else:
            raws = [
                str(r[0])
                for r in conn.exec_driver_sql(
                    "SELECT texts_json FROM study_texts WHERE language = ?", (language,)
                )
            ]
        for raw in raws:
            _texts_of(json.loads(raw), values, documents)
    return values, documents


def _texts_of(node: object, values: set[str], documents: list[str]) -> None:
    """The strings of a scale's or a study's texts' JSON: short ones as values (an option's
    value, label), every one as a document."""
    if isinstance(node, dict):
        for v in node.values():
            _texts_of(v, values, documents)
    elif isinstance(node, list):
        for v in node:
            _texts_of(v, values, documents)
    elif isinstance(node, str) and node.strip():
        documents.append(node)
        if len(node) <= 40:
            values.add(node)


def chrome_or_data(item: Shown, rule: DataRule, is_ok: Callable[[str], bool]) -> bool:
    """Whether *item* is excepted by rule (data, keys, icons, Streamlit's own chrome) or
    passes *is_ok* once data are taken out."""
    if is_ok(item.text):
        return True
    if "stIconMaterial" in item.testids or "KBD" in item.tags or "CODE" in item.tags:
        return True  # icon ligatures, keys, and code (kept verbatim by the pseudo language)
    if STREAMLIT_CHROME.intersection(item.testids):
        return True
    if item.live and not item.testids:  # a select's announcement ("1 option available.")
        return True
    if "stTable" in item.testids and "TD" in item.tags:  # a cell of a data table
        return True
    if "stFileUploaderDropzoneInstructions" in item.testids and FORMATS.fullmatch(item.text):
        return True  # the uploader's file types after its size line: names of formats
    return is_ok(rule.strip(item.text)) or rule.in_documents(item.text)


class Walk:
    """What each page (area) of a walk showed that escaped: {page: [texts]}."""

    def __init__(self, rule: DataRule, is_ok: Callable[[str], bool]) -> None:
        self.rule = rule
        self.is_ok = is_ok
        self.escapes: dict[str, dict[str, str]] = defaultdict(dict)
        self.pages: list[str] = []
        self.tables = 0  # data tables whose headers were read

    def look(self, page, name: str, tables: TableTap | None = None) -> None:
        if name not in self.pages:
            self.pages.append(name)
        for item in shown(page):
            if not chrome_or_data(item, self.rule, self.is_ok):
                self.escapes[name].setdefault(item.text, item.where())
        for table in tables.take() if tables is not None else []:
            self.tables += 1
            for header in table.headers:
                if not (self.is_ok(header) or self.is_ok(self.rule.strip(header))):
                    self.escapes[name].setdefault(header, f"table {table.key or '-'} header")

    def passing(self) -> list[str]:
        return [p for p in self.pages if not self.escapes.get(p)]

    def report(self) -> str:
        lines = []
        for name, texts in self.escapes.items():
            if not texts:
                continue
            lines.append(f"## {name} ({len(texts)})")
            lines += [f"- {text!r}  ({where})" for text, where in texts.items()]
        return "\n".join(lines)
