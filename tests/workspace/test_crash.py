"""A process SIGKILLed between the durable temp file and the rename leaves the old file intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.workspace._atomic import CRASH_ENV
from agentloom.workspace.paths import TEMP_PREFIX
from agentloom.workspace.service import WorkspaceHandle, WorkspaceService

pytestmark = pytest.mark.kill

WRITER = """
import asyncio, sys
from pathlib import Path
from agentloom.workspace.service import WorkspaceService

async def main() -> None:
    service = WorkspaceService(resolution=sys.argv[2])
    handle = await service.open_view(Path(sys.argv[1]), scope_id="crash")
    if sys.argv[3] == "replace":
        current = await service.read(handle, "data.txt")
        await service.write(handle, "data.txt", "NEW " * 50_000, mode="replace", if_match=current.etag)
    else:
        await service.write(handle, "fresh.txt", "NEW " * 50_000)
    print("survived", flush=True)

asyncio.run(main())
"""


def run_writer(root: Path, resolution: str, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, CRASH_ENV: "after_temp_fsync"}
    return subprocess.run(
        [sys.executable, "-c", WRITER, str(root), resolution, mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("mode", ["replace", "create_only"])
async def test_kill_between_temp_fsync_and_rename_leaves_the_old_content_intact(
    mode: str, resolution: str, service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    root = handle.root
    old = b"old content\n" * 100
    (root / "data.txt").write_bytes(old)
    proc = run_writer(root, resolution, mode)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "survived" not in proc.stdout
    assert (root / "data.txt").read_bytes() == old
    assert not (root / "fresh.txt").exists()
    leftovers = [n for n in os.listdir(root) if n.startswith(TEMP_PREFIX)]
    assert len(leftovers) == 1
    assert (root / leftovers[0]).read_bytes() == b"NEW " * 50_000  # durable, just never renamed
    names = [e.name for e in (await service.list(handle)).entries]
    assert not any(n.startswith(TEMP_PREFIX) for n in names)
    assert (await service.glob(handle, "*")).paths == tuple(sorted(names))
    current = await service.read(handle, "data.txt")
    await service.write(handle, "data.txt", "after\n", mode="replace", if_match=current.etag)
    assert (root / "data.txt").read_text() == "after\n"
