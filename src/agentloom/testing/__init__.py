"""Test utilities that ship with AgentLoom.

``killharness``: a real-process kill harness for crash/recovery tests. Run
``python -m agentloom.testing.killharness --help``; :func:`observe` and
:func:`violations` read back a run and check the recovery invariants.

``TestModel`` / ``ScriptModel``: the offline models (deterministic tool-calling test model;
a model replaying turns from a YAML script) — plug them in with ``Kernel.add_model``.
``ScriptedOpenAIServer``: a real HTTP server on 127.0.0.1 speaking the OpenAI Chat
Completions and Responses streaming wire formats, scripted turn by turn.

Names are re-exported lazily so that ``python -m agentloom.testing.killharness``
does not import its own module twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloom.testing.killharness import (
        HOOK_OFFSET,
        LedgerAppend,
        Observed,
        build_kernel,
        observe,
        read_ledger,
        run_harness,
        violations,
    )

_ELSEWHERE = {
    "TestModel": "agentloom.models.offline",
    "ScriptModel": "agentloom.models.offline",
    "ScriptedOpenAIServer": "agentloom.testing.openai_server",
}

__all__ = [
    "HOOK_OFFSET",
    "LedgerAppend",
    "Observed",
    "ScriptModel",
    "ScriptedOpenAIServer",
    "TestModel",
    "build_kernel",
    "observe",
    "read_ledger",
    "run_harness",
    "violations",
]


def __getattr__(name: str) -> Any:
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    if name in __all__:
        from agentloom.testing import killharness

        return getattr(killharness, name)
    raise AttributeError(f"module 'agentloom.testing' has no attribute {name!r}")
