"""Named crash points for kill tests (DBOS-style debug triggers).

``AGENTLOOM_CRASH_AT`` holds a comma-separated list of ``name`` or ``name@n``
entries; when the pipeline passes the n-th occurrence (default first) of a named
phase boundary *after its commit*, the process SIGKILLs itself. (``delivered`` of a call
whose rows are carried into its invocation's next commit comes before that commit;
``handle_received`` is where a handler asked to commit a remote handle, before that commit —
``handle_saved`` is after it.) Unset — the
normal case — each check is one set lookup.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "intent_saved",
    "hook_committed",
    "attempt_started",
    "handle_received",
    "handle_saved",
    "effect_done",
    "raw_saved",
    "effective_saved",
    "delivered",
)

_targets: dict[str, int] = {}
_seen: dict[str, int] = {}


def _load() -> None:
    _targets.clear()
    _seen.clear()
    for entry in filter(None, (e.strip() for e in os.environ.get("AGENTLOOM_CRASH_AT", "").split(","))):
        name, _, count = entry.partition("@")
        _targets[name] = int(count or 1)


_load()


def reached(name: str) -> None:
    """Mark that phase boundary ``name`` was passed; die here if a test asked for it."""
    if not _targets or name not in _targets:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] == _targets[name]:
        os.kill(os.getpid(), signal.SIGKILL)


def reload() -> None:
    """Re-read ``AGENTLOOM_CRASH_AT`` (for tests that set it in-process)."""
    _load()
