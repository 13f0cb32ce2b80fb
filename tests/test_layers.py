"""Layering (docs/architecture.md): which package may import what, checked on module-level
imports.

- streamlit only in ``app.py``, ``serve.py`` and ``pages/``;
- ``data_schemas`` imports nothing of ours;
- the study store's SQL (sqlalchemy, psycopg, alembic) only in ``medsim_annot/storage/``
  (the embedding cache's private sqlite3 file in ``embeddings/`` is not the study store);
- ``medsim_annot.storage`` only from ``storage/`` itself and ``services/`` (services call its
  public functions: the names of ``storage/__init__`` and its query modules);
- ``commands/`` call services: no ``storage``, ``embeddings`` or ``builders`` imports there;
- pages call services only (no storage, no SQL);
- no circles, and no imports inside functions but the allow-listed lazy imports of heavy
  packages (:data:`LAZY_IMPORTS`, each with its reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SQL = {"sqlalchemy", "psycopg", "alembic"}


def _modules(path: Path) -> set[str]:
    """Every module imported at module level (also under ``if TYPE_CHECKING:``), dotted."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
            else:
                mod = node.module or ""
            names.add(mod)
            names |= {f"{mod}.{a.name}" for a in node.names}
    return names


def _top(path: Path) -> set[str]:
    return {m.split(".")[0] for m in _modules(path)}


def _files(*dirs: str) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        p = ROOT / d
        out += [p] if p.is_file() else sorted(p.rglob("*.py"))
    return [p for p in out if "migrations" not in p.parts]


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _imports_any(path: Path, prefixes: tuple[str, ...]) -> bool:
    return any(m == p or m.startswith(p + ".") for m in _modules(path) for p in prefixes)


def test_core_never_imports_streamlit():
    offenders = [_rel(p) for p in _files("medsim_annot", "data_schemas") if "streamlit" in _top(p)]
    assert offenders == []


def test_data_schemas_imports_nothing_of_ours():
    offenders = [_rel(p) for p in _files("data_schemas") if "medsim_annot" in _top(p)]
    assert offenders == []


def test_sql_only_in_storage():
    offenders = [
        _rel(p)
        for p in _files("medsim_annot", "data_schemas", "pages", "app.py")
        if SQL & _top(p) and not _rel(p).startswith("medsim_annot/storage/")
    ]
    assert offenders == []


def test_storage_only_from_services():
    offenders = [
        _rel(p)
        for p in _files("medsim_annot", "data_schemas", "pages", "app.py")
        if _imports_any(p, ("medsim_annot.storage",))
        and not _rel(p).startswith(("medsim_annot/storage/", "medsim_annot/services/"))
    ]
    assert offenders == []


def test_services_use_storage_public_functions():
    """Services import the storage package or its query modules, never the engine/session
    plumbing (``storage.db``) or the table classes directly (``storage.models``)."""
    offenders = [
        _rel(p)
        for p in _files("medsim_annot/services")
        if _imports_any(p, ("medsim_annot.storage.db", "medsim_annot.storage.models"))
    ]
    assert offenders == []


def _names_from(path: Path, module: str) -> set[str]:
    """The names *path* imports with ``from <module> import ...`` (at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == module
        for a in node.names
    }


def test_storage_exports_no_table_classes():
    """``storage/__init__`` gives callers plumbing and query modules, never a table class (a
    re-export would let a service build or read rows around the check above) nor the ORM's
    own classes under their names."""
    import medsim_annot.storage as storage
    from medsim_annot.storage import models

    tables = {
        name
        for name, obj in vars(models).items()
        if isinstance(obj, type) and issubclass(obj, models.Base)
    }
    assert "Item" in tables and "Event" in tables  # the check itself sees the models
    exported = set(storage.__all__) | {n for n in vars(storage) if not n.startswith("_")}
    assert tables & exported == set()
    assert {"Session", "Select", "select", "insert"} & exported == set()
    query_modules = {
        f.stem for f in (ROOT / "medsim_annot/storage").glob("*.py") if not f.stem.startswith("_")
    } - {"models", "db"}
    leaked = {
        _rel(p): sorted(
            _names_from(p, "medsim_annot.storage") - set(storage.__all__) - query_modules
        )
        for p in _files("medsim_annot", "pages", "app.py")
        if not _rel(p).startswith("medsim_annot/storage/")
    }
    assert {k: v for k, v in leaked.items() if v} == {}


def test_only_storage_events_writes_events():
    """Events are appended by ``storage/events.py`` alone, and every stored detail goes
    through its one serialiser (``events.detail_json``): no other module constructs an
    ``Event`` row or serialises a ``detail_json`` of its own."""
    offenders = []
    for p in _files("medsim_annot"):
        if _rel(p) in ("medsim_annot/storage/events.py", "medsim_annot/storage/models.py"):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                own = [
                    k
                    for k in node.keywords
                    if k.arg == "detail_json"
                    and not (
                        isinstance(k.value, ast.Call)
                        and getattr(k.value.func, "id", None) == "detail_json"
                    )
                ]
                if name == "Event" or own:
                    offenders.append(f"{_rel(p)}:{node.lineno}")
    assert offenders == []


def test_commands_call_services():
    offenders = [
        _rel(p)
        for p in _files("medsim_annot/commands", "medsim_annot/cli.py")
        if _imports_any(
            p, ("medsim_annot.storage", "medsim_annot.embeddings", "medsim_annot.builders")
        )
    ]
    assert offenders == []


def test_pages_call_services():
    offenders = [
        _rel(p)
        for p in _files("pages", "app.py", "serve.py")
        if (SQL | {"sqlite3"}) & _top(p)
        or _imports_any(
            p, ("medsim_annot.storage", "medsim_annot.embeddings", "medsim_annot.builders")
        )
    ]
    assert offenders == []


def test_pages_share_one_problems_table_and_no_dashboard_cache():
    """Pages show an InputError's problems through ``pages._ui.show_problems`` only (no page
    builds its own table from ``.problems``), and keep no ``st.cache_data`` copy of the
    dashboard: the service's cache is the one."""
    builders = [
        _rel(p)
        for p in _files("pages", "app.py")
        if _rel(p) != "pages/_ui.py" and ".problems" in p.read_text(encoding="utf-8")
    ]
    assert builders == []
    cached = [
        _rel(p)
        for p in _files("pages")
        if "cache_data" in p.read_text(encoding="utf-8")
        and "dashboard_svc" in p.read_text(encoding="utf-8")
    ]
    assert cached == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (:func:`_modules`: at module level, under
    ``TYPE_CHECKING`` and inside functions alike).

    Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so an import of a
    module is an edge to it and to each package above it — except the importer's own
    packages, which Python has already started: a package's ``__init__`` importing its own
    submodules, and those importing one another, are not circles."""
    files = _files("medsim_annot")
    known = {_module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for p in files:
        me = _module_name(p)
        mine = {".".join(me.split(".")[:i]) for i in range(1, me.count(".") + 2)}
        if p.name == "__init__.py":
            mine.add(me)
        edges: set[str] = set()
        for name in _modules(p):
            parts = name.split(".")
            hits = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
            target = next((h for h in hits if h in known), None)
            if target is None:
                continue
            up = target.split(".")
            edges |= {".".join(up[:i]) for i in range(1, len(up) + 1)} & known
        graph[me] = edges - mine
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_circles_are_found():
    """The check itself: a circle is found, a package importing its own submodules is not."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"p": {"p.x"}, "p.x": {"p.y"}, "p.y": set()}) == []


def test_no_import_circles():
    """No module of ours imports, directly or through others, a module that imports it
    (``docs/architecture.md``: arrows point down; a circle means a job is in the wrong
    room). A package's ``__init__`` may import its own submodules."""
    graph = _import_graph()
    assert "medsim_annot.services.people.signin" in graph  # the check sees the tree
    assert _circles(graph) == []


#: The imports a function may make: module -> {imported module: why it is lazy}. Heavy
#: optional packages, and heavy dependencies loaded only when the feature runs so that
#: ``medsim --help``, each command and the server start without them; each also has a comment
#: at the import saying why. An imported module matches its entry and the entry's submodules.
EXTRA = "the optional [embeddings] extra (torch)"
CLI_START = "CLI start-up"
LAZY_IMPORTS: dict[str, dict[str, str]] = {
    "medsim_annot.services.predictions": {"sentence_transformers": EXTRA},
    "medsim_annot.embeddings.contextual": {"sentence_transformers": EXTRA},
    "medsim_annot.embeddings.installed": {"huggingface_hub": "optional: comes with " + EXTRA},
    "medsim_annot.builders.engines": {
        "pyspark": "the optional [spark] extra",
        "duckdb": f"0.2-0.3 s, only when the engine starts ({CLI_START})",
    },
    "medsim_annot.storage.arrow": {"adbc_driver_postgresql": "the PostgreSQL-only driver"},
    "medsim_annot.io": {"openpyxl": f"~0.15 s, only to read an .xlsx workbook ({CLI_START})"},
    "medsim_annot.storage.db": {"alembic": f"~0.3 s, only when a store is opened ({CLI_START})"},
    "medsim_annot.embeddings.loaders": {"gensim": f"~0.1 s, only to read vectors ({CLI_START})"},
    "medsim_annot.embeddings.lexical": {"sklearn": f"~0.3 s, only for TF-IDF ({CLI_START})"},
    "medsim_annot.embeddings.evaluate": {"sklearn": f"~0.3 s, only for ROC ({CLI_START})"},
    "medsim_annot.stats.aggregate": {"crowdkit": f"~0.7 s, only to fit a model ({CLI_START})"},
    "medsim_annot.stats.icc": {"pingouin": f"~1.5 s (plotting), only for an ICC ({CLI_START})"},
    "medsim_annot.stats.ppi": {"sklearn": f"~0.3 s, only to calibrate scores ({CLI_START})"},
}


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import inside a function of *path*."""
    found: set[tuple[int, str]] = set()
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                found |= {(node.lineno, a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                found.add((node.lineno, "." * node.level + (node.module or "")))
    return sorted(found)


def _lazy_entry(module: str, imported: str) -> tuple[str, str] | None:
    """The allow-list's entry that lets *module* import *imported* inside a function."""
    return next(
        (
            (module, lazy)
            for lazy in LAZY_IMPORTS.get(module, {})
            if imported == lazy or imported.startswith(lazy + ".")
        ),
        None,
    )


def _commented(lines: list[str], lineno: int) -> bool:
    """Whether the import at *lineno* (1-based), or the run of imports it ends, has a comment
    on its lines or on the line before the run."""
    first = lineno - 1
    while first > 0 and lines[first - 1].lstrip().startswith(("import ", "from ")):
        first -= 1
    return any("#" in line for line in lines[max(first - 1, 0) : lineno])


def test_imports_at_module_level_only():
    """An import inside a function hides which jobs depend on which (and kept the circles
    alive): every module imports at module level, except the allow-listed lazy imports of
    heavy packages above, each with a comment saying why at the import."""
    offenders, undocumented, used = [], [], set()
    for p in _files("medsim_annot", "data_schemas", "pages", "app.py", "serve.py"):
        lines = p.read_text(encoding="utf-8").splitlines()
        for lineno, imported in _function_imports(p):
            entry = _lazy_entry(_module_name(p), imported)
            if entry is None:
                offenders.append(f"{_rel(p)}:{lineno} {imported}")
                continue
            used.add(entry)
            if not _commented(lines, lineno):
                undocumented.append(f"{_rel(p)}:{lineno} {imported}")
    assert offenders == []
    assert undocumented == []
    listed = {(m, lazy) for m, entries in LAZY_IMPORTS.items() for lazy in entries}
    assert listed - used == set()  # no stale entries
