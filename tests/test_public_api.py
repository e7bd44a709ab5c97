"""The public surface is a contract: ``agentloom.__all__`` is curated and pinned here."""

from __future__ import annotations

import agentloom

EXPECTED = {
    "AgentLoomError", "AgentSpec", "ArtifactRef", "CancelToken", "CapabilityRegistry",
    "CapabilitySpec", "CatalogError", "ConfigError", "EventBus", "FencedOut", "HandlerRef",
    "HookDecision", "HookMatch", "HookOutcome", "HookSpec", "InvocationContext", "Kernel",
    "Limits", "OperationError", "OperationResult", "OwnerRef", "RegistrationError",
    "RequestItem", "RetryPolicy", "RunError", "RunHandle", "RunLease", "RunResult", "Runtime",
    "RuntimeOptions", "StoreError", "StrictInput", "Tool", "ToolContext", "ToolResult", "hook",
    "open_store", "tool",
}


def test_public_names_are_exactly_the_curated_list() -> None:
    assert set(agentloom.__all__) == EXPECTED
    for name in agentloom.__all__:
        assert getattr(agentloom, name) is not None


def test_importing_agentloom_does_not_import_optional_drivers() -> None:
    import subprocess
    import sys

    code = "import sys, agentloom; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
