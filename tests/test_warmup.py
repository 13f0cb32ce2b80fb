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


def test_serve_py_imports_the_dashboard_stack_before_it_serves():
    """The Dashboard's stack is imported synchronously by serve.py (a background import was
    still running when the first admin arrived, and the page waited for it)."""
    import subprocess

    from tests.conftest import ROOT

    code = (
        "import runpy, sys; sys.path.insert(0, '.'); runpy.run_path('serve.py');"
        "from medsim_annot import warmup;"
        "print(all(m in sys.modules and not getattr(sys.modules[m].__spec__, '_initializing',"
        " False) for m in warmup.BEFORE_SERVING))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1:] == ["True"], out.stdout + out.stderr
    assert set(warmup.BEFORE_SERVING) <= set(warmup.MODULES)
