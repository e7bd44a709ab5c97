"""What every peer shares: the scripted workload, the step clock, the figures and the table.

The workload is the same for every peer: a deterministic in-process model (no network) that
answers turn ``k`` with one call of the tool ``append_line`` with ``{"text": "step k"}`` while
``k < steps`` and with a final text answer on turn ``steps``; the tool appends to an in-memory
list and returns a short string. One *step* is one model turn plus one tool call, so a run of
``steps`` steps makes ``steps + 1`` model turns and ``steps`` tool calls.

Each fake model derives ``k`` from the length of the history it is handed (two items per
completed step after the opening prompt), never from a counter, so it is stateless, O(1) per
turn, and one model serves any number of concurrent runs.

Step clock: ``perf_counter_ns`` is taken just before the run is started and again on entry to
every tool call; step ``i`` costs the time from the previous mark to tool call ``i``. So a step
covers the rest of the previous tool call, whatever the framework records after it, the next
model turn, and the dispatch of the next tool call. The first step also carries the run's
start-up (the input checkpoint, for LangGraph); the closing model turn and the run's end are
outside every step and only in ``total_ns``.
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TOOL_NAME = "append_line"
TOOL_DESCRIPTION = "Append one line of text to the notebook."
FINAL_TEXT = "done"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
EDGE = 10  # how many steps "first" and "last" average over


def pg_url() -> str:
    """The server the PostgreSQL peers use: ``$AGENTLOOM_BENCH_PG``, else ``$AGENTLOOM_TEST_PG``."""
    return os.environ.get("AGENTLOOM_BENCH_PG") or os.environ.get("AGENTLOOM_TEST_PG") or DEFAULT_PG


def missing(*modules: str) -> str | None:
    """``None`` when every module imports, else why the first one does not."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"{exc} (install the bench extra: pip install -e '.[bench]')"
    return None


def step_text(k: int) -> str:
    return f"step {k}"


def tool_reply(text: str) -> str:
    return f"ok: {text}"


def turn_index(history_len: int, *, leading: int = 1) -> int:
    """Completed steps in a history of ``leading`` opening items then (call, result) pairs."""
    return (history_len - leading) // 2


class StepClock:
    """Marks the start of a run and every tool entry; see the module docstring."""

    __slots__ = ("lines", "marks")

    def __init__(self) -> None:
        self.marks: list[int] = []
        self.lines: list[str] = []

    def start(self) -> None:
        self.marks.append(time.perf_counter_ns())

    def tool(self, text: str) -> str:
        """The tool body every peer wraps: mark the step, append the line, answer."""
        self.marks.append(time.perf_counter_ns())
        self.lines.append(text)
        return tool_reply(text)

    def step_ns(self) -> list[int]:
        return [b - a for a, b in zip(self.marks, self.marks[1:], strict=False)]


@dataclass(frozen=True, kw_only=True, slots=True)
class StepFigures:
    """One measured run of ``steps`` steps.

    ``bytes_per_step[i]`` is what the store kept for step ``i`` (logical: the stored lengths of
    the rows it wrote, as the peer's module docstring defines); ``stored_growth`` is the
    physical growth of the store over the whole run (file or relation sizes), ``None`` for a
    store kept only in memory.
    """

    label: str
    steps: int
    step_ns: list[int]
    total_ns: int
    bytes_per_step: list[int] | None = None
    stored_growth: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConcurrentFigures:
    """``n_runs`` runs of ``steps`` steps started together in one process and event loop.

    ``rss_before`` is the resident set after imports and a warm-up run, just before the runs
    start (``VmRSS``); ``peak_rss`` is the process's high-water mark (``VmHWM`` in
    ``/proc/self/status``), its peak since it started, so run it in a fresh process
    (``in_child``). Not ``getrusage().ru_maxrss``: Linux carries the parent's peak into a forked
    child through ``exec``, so a child of a big parent reports the parent's figure.
    """

    label: str
    n_runs: int
    steps: int
    wall_ns: int
    rss_before: int
    peak_rss: int

    @property
    def runs_per_s(self) -> float:
        return self.n_runs / (self.wall_ns / 1e9)


def _proc_status_bytes(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def current_rss() -> int:
    return _proc_status_bytes("VmRSS")


def peak_rss() -> int:
    return _proc_status_bytes("VmHWM")


def check_run(clock: StepClock, steps: int, final: object) -> None:
    """Fail loudly when a peer did not run the scripted workload to the end."""
    if clock.lines != [step_text(k) for k in range(steps)]:
        raise RuntimeError(f"expected {steps} tool calls in order, saw {len(clock.lines)}")
    if final != FINAL_TEXT:
        raise RuntimeError(f"expected the final answer {FINAL_TEXT!r}, got {final!r}")


# -- statistics ---------------------------------------------------------------------------------
def median_us(values: Sequence[int]) -> float:
    return statistics.median(values) / 1e3


def first_us(values: Sequence[int], n: int = EDGE) -> float:
    return statistics.fmean(values[:n]) / 1e3


def last_us(values: Sequence[int], n: int = EDGE) -> float:
    return statistics.fmean(values[-n:]) / 1e3


def flat_ratio(values: Sequence[int], n: int = EDGE) -> float:
    """Mean of the last ``n`` steps over the mean of the first ``n`` (≤ 1.2 is the target)."""
    return statistics.fmean(values[-n:]) / statistics.fmean(values[:n])


def merge(runs: Sequence[StepFigures]) -> StepFigures:
    """Repeated runs of one peer, step by step: the median of each step's samples."""
    first = runs[0]
    step_ns = [int(statistics.median(samples)) for samples in zip(*(r.step_ns for r in runs), strict=True)]
    total = int(statistics.median(r.total_ns for r in runs))
    return StepFigures(label=first.label, steps=first.steps, step_ns=step_ns, total_ns=total,
                       bytes_per_step=runs[-1].bytes_per_step, stored_growth=runs[-1].stored_growth,
                       notes=first.notes)


# -- printing -----------------------------------------------------------------------------------
def _bytes_cells(fig: StepFigures) -> tuple[str, str, str, str]:
    if fig.bytes_per_step is None:
        return ("-", "-", "-", "-")
    b = fig.bytes_per_step
    growth = "-" if fig.stored_growth is None else f"{fig.stored_growth / fig.steps:,.0f}"
    return (f"{statistics.fmean(b):,.0f}", f"{statistics.fmean(b[:EDGE]):,.0f}",
            f"{statistics.fmean(b[-EDGE:]):,.0f}", growth)


def print_table(figures: Sequence[StepFigures], *, out: Any = None) -> None:
    """label, median µs/step, first/last-10 means, their ratio, logical and physical bytes/step."""
    out = out or sys.stdout
    head = ("peer", "median µs/step", "first10 µs", "last10 µs", "last/first",
            "B/step mean", "B first10", "B last10", "disk B/step")
    rows = [head]
    for f in figures:
        rows.append((f.label, f"{median_us(f.step_ns):,.1f}", f"{first_us(f.step_ns):,.1f}",
                     f"{last_us(f.step_ns):,.1f}", f"{flat_ratio(f.step_ns):.2f}", *_bytes_cells(f)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for n, r in enumerate(rows):
        cells = [r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))]
        print("  ".join(cells), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def print_concurrent(figures: Sequence[ConcurrentFigures], *, out: Any = None) -> None:
    out = out or sys.stdout
    for c in figures:
        print(f"{c.label}: {c.n_runs} runs × {c.steps} steps in {c.wall_ns / 1e9:.2f} s = "
              f"{c.runs_per_s:,.0f} runs/s ({c.runs_per_s * c.steps:,.0f} steps/s); "
              f"RSS {c.rss_before / 2**20:,.0f} MiB before, peak {c.peak_rss / 2**20:,.0f} MiB "
              f"(+{(c.peak_rss - c.rss_before) / 2**20:,.0f} MiB)", file=out)


# -- isolation ----------------------------------------------------------------------------------
BENCH_DIR = Path(__file__).resolve().parent.parent


def in_child(module: str, func: str, timeout_s: float = 600.0, **kwargs: Any) -> dict[str, Any]:
    """Run ``peers.<module>.<func>(**kwargs)`` (a coroutine function returning a dataclass) in a
    fresh interpreter and return its fields, so its peak RSS is its own."""
    code = (
        "import asyncio, dataclasses, json, sys\n"
        f"sys.path.insert(0, {str(BENCH_DIR)!r})\n"
        f"from peers.{module} import {func} as f\n"
        f"print(json.dumps(dataclasses.asdict(asyncio.run(f(**json.loads(sys.argv[1]))))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, json.dumps(kwargs)], capture_output=True,
                          text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"peers.{module}.{func} failed in its child process:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def as_dict(figures: StepFigures | ConcurrentFigures) -> dict[str, Any]:
    return asdict(figures)
