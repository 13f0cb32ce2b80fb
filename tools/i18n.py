"""The catalogues' command: ``python tools/i18n.py extract|update|compile|check``.

``extract`` writes ``medsim_annot/locale/<area>.pot`` from the code; ``update`` brings each
language's ``.po`` to them; ``compile`` writes the ``.mo`` files; ``check`` lists every message
missing, untranslated, fuzzy, stale or with other placeholders, and fails if there is one.
``make messages`` runs extract, update and compile; docs/i18n.md says what a translator edits.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from medsim_annot.i18n import extract as ex


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "check"
    if what == "extract":
        for path in ex.write_templates(ex.extract()):
            print(path.relative_to(ex.ROOT))
    elif what == "update":
        for path in ex.update(ex.extract()):
            print(path.relative_to(ex.ROOT))
    elif what == "compile":
        print(f"{len(ex.compile_all())} catalogues compiled")
    elif what == "check":
        problems = ex.check()
        for p in problems:
            print(p)
        print(f"{len(problems)} problem(s)")
        return 1 if problems else 0
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
