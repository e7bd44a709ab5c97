"""Fixtures for the file service: both resolvers, a workspace root and an outside sentinel tree."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.workspace.layout import Layout, build_layout

from agentloom.workspace.paths import openat2_available
from agentloom.workspace.service import WorkspaceHandle, WorkspaceService


@pytest.fixture(params=["openat2", "walk"])
def resolution(request: pytest.FixtureRequest) -> str:
    if request.param == "openat2" and not openat2_available():
        pytest.skip("openat2 is not available on this kernel; the walk is tested instead")
    return str(request.param)


@pytest.fixture
def service(resolution: str) -> WorkspaceService:
    return WorkspaceService(resolution=resolution, lock_timeout_s=30.0)  # type: ignore[arg-type]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return build_layout(tmp_path)


@pytest.fixture
async def handle(service: WorkspaceService, layout: Layout) -> WorkspaceHandle:
    return await service.open_view(layout.root, scope_id="scope-test")


@pytest.fixture
def ram_layout(tmp_path: Path) -> Iterator[Layout]:
    """The layout on tmpfs when there is one: the corpus runs tens of thousands of calls and
    path resolution does not depend on fsync latency (durability is tested on disk)."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="agentloom-ws-", dir=shm)) if shm.is_dir() else tmp_path / "ram"
    try:
        yield build_layout(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
