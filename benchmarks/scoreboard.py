"""What ``make bench`` measured, collected as it goes and shown in one table at the end.

Every benchmark reports its figures through ``report(...)`` (``benchmarks/__main__.py``),
which hands each one to :data:`BOARD`: the figure, its unit, the straightforward baseline
measured in the same run, the goal an issue set for it and whether the goal is met. The
benchmarks print each line as it comes; :meth:`Scoreboard.table` then puts every figure
that has a goal into one table — goal, value, same-run baseline, ✓ / ✗ — so a regression
shows in one look, without running anything again. A figure whose goal cannot be judged
(its value could not be measured) shows ``?``.

``MEDSIM_BENCH_JSON=path`` also writes every figure to *path* (JSON), to keep a run beside
the next one.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    bench: str  # the benchmark module without ``bench_``
    name: str
    value: float
    unit: str
    baseline: float | None = None
    goal: str | None = None
    ok: bool | None = None
    lower_is_better: bool = True

    @property
    def ratio(self) -> float | None:
        """How many times better than the baseline (> 1: better)."""
        if self.baseline is None or not self.value or not _finite(self.baseline):
            return None
        return self.baseline / self.value if self.lower_is_better else self.value / self.baseline

    @property
    def mark(self) -> str:
        if self.ok is None:
            return "?" if not _finite(self.value) else "·"
        return "✓" if self.ok else "✗"

    def line(self) -> str:
        """The line a benchmark prints when it reports the figure."""
        out = f"  {self.name}: {_num(self.value)} {self.unit}"
        if self.baseline is not None and self.value:
            out += f"  | baseline {_num(self.baseline)} {self.unit}  | ratio {_ratio(self.ratio)}"
        if self.goal:
            out += f"  | goal {self.goal}"
        if self.ok is not None:
            out += "  [OK]" if self.ok else "  [MISSED]"
        return out


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _num(x: float) -> str:
    return f"{x:,.4g}"


def _ratio(r: float | None) -> str:
    return "–" if r is None or not math.isfinite(r) else f"{r:,.1f}x"


def _unit(unit: str) -> str:
    # Some units carry the detail of a count, e.g. "(0/0/0; 1200 acknowledged ...)": the
    # table keeps the short part in front of the detail.
    return unit.split(" (", 1)[0] if not unit.startswith("(") else ""


@dataclass
class Scoreboard:
    figures: list[Figure] = field(default_factory=list)
    bench: str = ""

    def start(self, bench: str) -> None:
        """The figures reported from now on belong to *bench* (a module name)."""
        self.bench = bench.removeprefix("bench_")

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def report(
        self,
        name: str,
        value: float,
        unit: str,
        *,
        baseline: float | None = None,
        goal: str | None = None,
        ok: bool | None = None,
        lower_is_better: bool = True,
    ) -> Figure:
        return self.add(
            Figure(self.bench, name, float(value), unit, baseline, goal, ok, lower_is_better)
        )

    def goals(self) -> list[Figure]:
        return [f for f in self.figures if f.goal or f.ok is not None]

    def missed(self) -> list[Figure]:
        return [f for f in self.figures if f.ok is False]

    def table(self) -> str:
        """Every figure with a goal: one row each, in the order they were measured."""
        rows = [("", "bench", "figure", "value", "goal", "baseline (same run)", "ratio")]
        for f in self.goals():
            unit = _unit(f.unit)
            base = "–" if f.baseline is None else f"{_num(f.baseline)} {unit}".strip()
            rows.append(
                (
                    f.mark,
                    f.bench,
                    f.name,
                    f"{_num(f.value)} {unit}".strip(),
                    f.goal or "",
                    base,
                    _ratio(f.ratio),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        right = {3, 5, 6}
        lines = []
        for k, r in enumerate(rows):
            cells = [
                c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))
            ]
            lines.append(" | ".join(cells).rstrip())
            if k == 0:
                lines.append("-+-".join("-" * w for w in widths))
        met = sum(f.ok is True for f in self.goals())
        missed = self.missed()
        lines.append(
            f"{len(self.goals())} figures with a goal: {met} met ✓, {len(missed)} missed ✗"
            + (f" (in {', '.join(dict.fromkeys(f.bench for f in missed))})" if missed else "")
            + f"; {len(self.figures)} figures in all"
        )
        return "\n".join(lines)

    def dump(self, path: Path) -> None:
        path.write_text(
            json.dumps([asdict(f) for f in self.figures], indent=1, ensure_ascii=False),
            encoding="utf-8",
        )


#: The board of this ``make bench`` run.
BOARD = Scoreboard()
