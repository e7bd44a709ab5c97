"""The sandbox package's public names are a curated list."""

from __future__ import annotations

import agentloom.sandbox as sandbox

EXPECTED = {
    "BubblewrapGateway",
    "BusinessOwner",
    "CapturedStream",
    "EnvironmentPolicy",
    "ExecCommand",
    "ExecutionHandle",
    "ExecutionOwnerRef",
    "ExecutionResult",
    "ExecutionState",
    "ExecutionStatus",
    "HookOwner",
    "LandlockGateway",
    "RevocationReceipt",
    "SANDBOX_GID",
    "SANDBOX_UID",
    "SandboxBackend",
    "SandboxError",
    "SandboxGateway",
    "SandboxHandle",
    "SandboxMode",
    "SandboxScope",
    "SandboxView",
    "StreamCapture",
    "UnsandboxedGateway",
    "build_environment",
    "landlock_available",
    "make_gateway",
    "reclaim_spools",
    "sandbox_identity",
    "scratch_folder",
}


def test_sandbox_exports_exactly_the_curated_names() -> None:
    assert set(sandbox.__all__) == EXPECTED
    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None
