"""The workflow runs this process drives now, by run id (issue 37).

A tool an agent node calls for its workflow (``collab.*``, ``artifact.publish``) is handed its
call's ``AttemptContext`` only; ``driving(run_id)`` gives it the ``ProgramRun`` of the
workflow run the call belongs to (the store, the commit path, the lease), or ``None`` when no
workflow run of that id is driven here — the call is then not made for a workflow node.

Owns: the registry. Does not own: driving a run (``squad.driver``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agentloom.agent.programs import ProgramRun

__all__ = ["driven", "driving"]

_RUNS: dict[str, ProgramRun] = {}


@contextmanager
def driven(run: ProgramRun) -> Iterator[None]:
    """Register ``run`` as driven by this process for the block."""
    _RUNS[run.run_id] = run
    try:
        yield
    finally:
        if _RUNS.get(run.run_id) is run:
            del _RUNS[run.run_id]


def driving(run_id: str) -> ProgramRun | None:
    """The workflow run ``run_id`` if this process drives it now."""
    return _RUNS.get(run_id)
