"""Issue #34 (LOW): a size cap on a work folder and on the private ``TMPDIR`` of Landlock
without a mount namespace. The command is a steady writer (1 MiB files, paced, 256 MiB in
all if nothing stops it); the cap is 16 MiB. Under every backend a managed work folder is
watched (``sandbox._disk``) and the command killed with ``disk_limit`` well before its end;
``TMPDIR`` is a tmpfs of ``tmp_size_bytes`` in a namespace view (a write past it fails with
``ENOSPC``) and a watched folder in the host view (the command is killed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.environment.test_s9_workspace_tools import call
from tests.sandbox.conftest import confined_gateway, run_command, scope_for, searchable, text, view_of

from agentloom.assembly import environment_policy
from agentloom.config.loader import parse_config
from agentloom.kernel import Kernel
from agentloom.sandbox import EnvironmentPolicy, ExecCommand, ExecutionResult
from agentloom.sandbox._disk import folder_bytes

MIB = 1 << 20
CAP = 16 * MIB
WRITER = r"""
import os, sys, time
folder = sys.argv[1] if sys.argv[1] != "TMPDIR" else os.environ["TMPDIR"]
chunk = b"x" * (1 << 20)
for i in range(256):
    try:
        with open(os.path.join(folder, f"f{i}"), "wb") as f:
            f.write(chunk)
    except OSError as exc:
        print("WRITE_FAILED", exc.errno, i, flush=True)
        sys.exit(3)
    time.sleep(0.01)  # a steady writer: 256 MiB in no less than 2.5 s
print("WROTE_ALL", flush=True)
"""


def _policy() -> EnvironmentPolicy:
    return EnvironmentPolicy(max_work_bytes=CAP, tmp_size_bytes=CAP, default_timeout_s=60)


async def _write(backend: str, work_dir: Path, out: Path, target: str,
                 env: dict[str, str]) -> tuple[ExecutionResult, str]:
    """Run the steady writer into ``target`` (``.``: the work folder; ``TMPDIR``) under a
    gateway of ``backend`` whose caps are ``CAP``: its result and ``inspect``'s state."""
    gateway = confined_gateway(backend, _policy(), out)
    try:
        (work_dir / "writer.py").write_text(WRITER)
        handle = await gateway.ensure(scope_for(work_dir), None, 1)
        command = ExecCommand(argv=("/usr/bin/python3", "writer.py", target), env_patch=env)
        result = await run_command(gateway, handle, command)
        return result, (await gateway.inspect(result.execution_id)).state
    finally:
        await gateway.aclose()


async def test_i34_a_work_folder_past_max_work_bytes_kills_the_command(
    backend: str, work_dir: Path, tmp_path: Path
) -> None:
    result, state = await _write(backend, work_dir, tmp_path / "out", ".", {})
    assert "WROTE_ALL" not in text(result)
    assert result.disk_limit is not None and "the work folder" in result.disk_limit, result
    assert result.exit_code is None and result.signal == 9
    assert CAP < folder_bytes(work_dir) < 128 * MIB  # stopped a tick or so past the cap
    assert state == "terminated"


async def test_i34_tmpdir_is_capped_at_tmp_size_bytes_in_every_view(
    backend: str, work_dir: Path, tmp_path: Path
) -> None:
    env = {"TMPDIR": "/tmp"} if view_of(backend) == "namespace" else {}
    result, _ = await _write(backend, work_dir, tmp_path / "out", "TMPDIR", env)
    out = text(result)
    assert "WROTE_ALL" not in out
    if view_of(backend) == "namespace":  # a tmpfs of tmp_size_bytes: ENOSPC at the cap
        assert "WRITE_FAILED 28" in out and result.exit_code == 3, out
    else:
        assert result.disk_limit is not None and "TMPDIR" in result.disk_limit, (out, result)


def test_i34_sandbox_max_work_bytes_is_a_config_key(tmp_path: Path) -> None:
    config = parse_config({"version": 1, "agents": {"main": {"model": {"builtin": "test"}}},
                           "sandbox": {"max_work_bytes": CAP}}, base_dir=tmp_path)
    assert environment_policy(config).max_work_bytes == CAP
    with pytest.raises(Exception, match="max_work_bytes"):
        parse_config({"version": 1, "agents": {"main": {"model": {"builtin": "test"}}},
                      "sandbox": {"max_work_bytes": 10}}, base_dir=tmp_path)


async def test_i34_exec_past_the_cap_is_unknown_with_exec_disk_limit(
    backend: str, tmp_path: Path
) -> None:
    searchable(tmp_path)
    kernel = Kernel(f"sqlite:///{tmp_path / 'k.db'}", workspace_root=tmp_path / "shared",
                    sandbox=_policy(), sandbox_backend=backend)  # type: ignore[arg-type]
    try:
        kernel.publish("rel", ["fs.write", "exec"], roles={"main": ["fs.write", "exec"]})
        lease = await kernel.start_run()
        wrote = await call(kernel, lease, "fs_write", path="writer.py", content=WRITER)
        assert wrote.succeeded, wrote.error
        ran = await call(kernel, lease, "exec", argv=["/usr/bin/python3", "writer.py", "."])
        assert ran.outcome == "unknown" and ran.error.code == "EXEC_DISK_LIMIT", ran.error
        assert "the work folder grew past its cap" in ran.error.message
    finally:
        kernel.close()
