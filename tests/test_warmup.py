"""The background import warm-up serve.py starts (issue 25, item 7): every module it names
exists (a misspelt name would be skipped silently and its page would pay the import again),
and a module that fails to import does not stop the others."""

from __future__ import annotations

import importlib
import sys

from medsim_annot import warmup


def test_every_warmed_module_imports():
    for name in warmup.MODULES:
        importlib.import_module(name)


def test_a_failing_module_does_not_stop_the_warm_up():
    sys.modules.pop("colorsys", None)
    thread = warmup.warm_in_background(("medsim_annot.no_such_module", "colorsys"))
    thread.join(60)
    assert not thread.is_alive() and thread.daemon
    assert "colorsys" in sys.modules
