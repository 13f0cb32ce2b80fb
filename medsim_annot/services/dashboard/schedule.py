"""A tiny scheduler for a declared graph of named steps: each :class:`Step` names its function
and the results (or given inputs) it takes; :func:`run` calls every step once its inputs are
there. It knows nothing of the dashboard: :mod:`~medsim_annot.services.dashboard.compute`
declares the steps.

Steps run in one of two lanes: ``"here"`` steps in the calling thread, in the order they are
declared; ``"beside"`` steps in a pool of *workers* threads beside it, each as soon as its
inputs are there (NumPy and pandas release the GIL in their large operations, so the two
lanes overlap). ``workers=0`` runs every step in the calling thread, in declaration order:
the same results, one after the other.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from threading import Event as Signal  # (the name Event is the event log's)
from typing import Any, Literal

Lane = Literal["here", "beside"]


@dataclass(frozen=True)
class Step:
    """One step: ``fn(*inputs)``, where each input names a given value or another step."""

    fn: Callable[..., Any]
    inputs: tuple[str, ...] = ()
    lane: Lane = "here"


class _Outcome:
    """The result of one step once it is there (or its exception)."""

    def __init__(self) -> None:
        self.ready = Signal()
        self.value: Any = None
        self.error: BaseException | None = None

    def get(self) -> Any:
        self.ready.wait()
        if self.error is not None:
            raise self.error
        return self.value


def run(steps: Mapping[str, Step], given: Mapping[str, Any], *, workers: int = 1) -> dict[str, Any]:
    """Every step's result, by name (the *given* values included).

    *steps* are declared so that each comes after the steps it takes (checked). A beside
    step starts as soon as a worker is free and its inputs are there, the first declared
    first. A step that raises makes the steps that take its result raise the same
    exception; :func:`run` raises it once every step has finished.

    >>> steps = {"b": Step(lambda a: a + 1, ("a",), "beside"), "c": Step(lambda b: 2 * b, ("b",))}
    >>> run(steps, {"a": 1})["c"], run(steps, {"a": 1}, workers=0)["c"]
    (4, 4)
    """
    known = set(given)
    for name, step in steps.items():
        missing = [i for i in step.inputs if i not in known]
        if missing:
            raise ValueError(f"step {name!r} takes {', '.join(missing)}, declared after it")
        known.add(name)
    out: dict[str, _Outcome] = {}
    for name, value in given.items():
        out[name] = _Outcome()
        out[name].value = value
        out[name].ready.set()
    out.update({name: _Outcome() for name in steps})
    beside = [n for n, s in steps.items() if s.lane == "beside"] if workers > 0 else []
    started: set[str] = set()
    turn = threading.Condition()

    def next_beside() -> str | None:
        with turn:
            while True:
                waiting = [n for n in beside if n not in started]
                if not waiting:
                    return None
                for n in waiting:
                    if all(out[i].ready.is_set() for i in steps[n].inputs):
                        started.add(n)
                        return n
                turn.wait()

    def work() -> None:
        while (n := next_beside()) is not None:
            _call(steps[n], out, n)
            with turn:
                turn.notify_all()

    # Each thread runs in a copy of the caller's context: the steps see the caller's
    # context variables (the page's language, so a sentence a step writes is in it).
    threads = [
        threading.Thread(
            target=contextvars.copy_context().run, args=(work,), name=f"dashboard-{k}", daemon=True
        )
        for k in range(min(workers, len(beside)))
    ]
    for t in threads:
        t.start()
    for name, step in steps.items():
        if name not in beside:
            _call(step, out, name)
            with turn:
                turn.notify_all()
    for t in threads:
        t.join()
    return {name: o.get() for name, o in out.items()}


def _call(step: Step, out: dict[str, _Outcome], name: str) -> None:
    o = out[name]
    try:
        o.value = step.fn(*(out[i].get() for i in step.inputs))
    except BaseException as exc:  # raised again to whoever takes the result, and by run()
        o.error = exc
    finally:
        o.ready.set()
