"""Sandbox fixtures: a real bubblewrap gateway (skipped where bwrap is missing, failed in
CI), scopes on fresh temporary work folders, and helpers that run one command."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.ids import new_id
from agentloom.sandbox import (
    BubblewrapGateway,
    BusinessOwner,
    EnvironmentPolicy,
    ExecCommand,
    ExecutionResult,
    SandboxGateway,
    SandboxHandle,
    SandboxScope,
)

OWNER = BusinessOwner(operation_id="op-test", attempt_no=1)


def require_bwrap() -> None:
    if shutil.which("bwrap"):
        return
    if os.environ.get("CI"):
        pytest.fail(
            "bubblewrap is not installed and CI must run the sandbox suite (apt-get install -y bubblewrap)"
        )
    pytest.skip("bubblewrap is not installed (apt-get install -y bubblewrap)")


@pytest.fixture(scope="module")
def shell_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BubblewrapGateway]:
    """A bubblewrap gateway whose policy allows shell scripts (the probes are scripts)."""
    require_bwrap()
    out = tmp_path_factory.mktemp("sandbox-out")
    yield BubblewrapGateway(EnvironmentPolicy(allow_shell=True), output_dir=out)


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def scope_for(
    work_dir: Path, *, run_id: str | None = None, readonly_mounts: tuple[tuple[Path, str], ...] = ()
) -> SandboxScope:
    return SandboxScope(
        workspace_scope_id="ws-test",
        run_id=run_id or new_id(),
        work_dir=work_dir,
        readonly_mounts=readonly_mounts,
    )


async def run_command(
    gateway: SandboxGateway, handle: SandboxHandle, command: ExecCommand, *, deadline_s: float = 60.0
) -> ExecutionResult:
    execution = await gateway.execute(handle, command, OWNER, time.time() + deadline_s)
    return await execution.wait()


def text(result: ExecutionResult) -> str:
    return (result.stdout.head + result.stdout.tail).decode(errors="replace")


def processes_with(token: str) -> list[int]:
    """Host PIDs whose command line contains ``token`` (zombies have none)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
