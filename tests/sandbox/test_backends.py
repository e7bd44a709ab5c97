"""Without bubblewrap: refuse, unless unsandboxed mode was explicitly allowed, and then
say so loudly and in every result."""

from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path

import pytest
from tests.sandbox.conftest import (
    OWNER,
    kill_all,
    processes_with,
    require_bwrap,
    run_command,
    scope_for,
    text,
)

from agentloom.sandbox import (
    BubblewrapGateway,
    EnvironmentPolicy,
    ExecCommand,
    SandboxError,
    UnsandboxedGateway,
    make_gateway,
)

MISSING = "/nonexistent/bin/bwrap"


def test_missing_bubblewrap_is_refused_naming_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(SandboxError) as caught:
        make_gateway(EnvironmentPolicy(), allow_unsandboxed=False, output_dir=tmp_path, bwrap=MISSING)
    assert caught.value.code == "SANDBOX_UNAVAILABLE"
    assert "apt-get install -y bubblewrap" in str(caught.value)


def test_allowed_unsandboxed_mode_falls_back_with_a_loud_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agentloom.sandbox"):
        gateway = make_gateway(
            EnvironmentPolicy(), allow_unsandboxed=True, output_dir=tmp_path, bwrap=MISSING
        )
    assert isinstance(gateway, UnsandboxedGateway) and gateway.sandbox_mode == "unsandboxed"
    assert any("UNSANDBOXED" in record.getMessage() for record in caplog.records)


def test_make_gateway_prefers_a_working_bubblewrap(tmp_path: Path) -> None:
    require_bwrap()
    gateway = make_gateway(EnvironmentPolicy(), allow_unsandboxed=True, output_dir=tmp_path)
    assert isinstance(gateway, BubblewrapGateway) and gateway.sandbox_mode == "bubblewrap"


@pytest.fixture
def unsandboxed(tmp_path: Path) -> UnsandboxedGateway:
    return UnsandboxedGateway(EnvironmentPolicy(allow_shell=True), output_dir=tmp_path / "out")


async def test_every_unsandboxed_result_says_it_was_not_sandboxed(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    assert handle.sandbox_mode == "unsandboxed"
    result = await run_command(unsandboxed, handle, ExecCommand(argv=("true",)))
    assert result.sandboxed is False and result.sandbox_mode == "unsandboxed"


async def test_unsandboxed_cwd_is_the_work_dir(unsandboxed: UnsandboxedGateway, work_dir: Path) -> None:
    (work_dir / "sub").mkdir()
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    result = await run_command(unsandboxed, handle, ExecCommand(argv=("pwd",), cwd="/work/sub"))
    assert Path(text(result).strip()) == (work_dir / "sub").resolve()


async def test_unsandboxed_shell_still_needs_allow_shell(tmp_path: Path, work_dir: Path) -> None:
    gateway = UnsandboxedGateway(EnvironmentPolicy(), output_dir=tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    with pytest.raises(SandboxError) as caught:
        await run_command(gateway, handle, ExecCommand(shell_script="true"))
    assert caught.value.code == "SHELL_NOT_ALLOWED"


async def test_unsandboxed_timeout_kills_the_process_group(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    token = f"600.{secrets.randbelow(10**9):09d}"
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    command = ExecCommand(shell_script=f"sleep {token} & (sleep {token} &); sleep {token}", timeout_s=0.5)
    result = await run_command(unsandboxed, handle, command)
    assert result.timed_out and result.signal == 9
    assert processes_with(token) == []


async def test_unsandboxed_setsid_child_does_not_hang_the_call(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    token = f"600.{secrets.randbelow(10**9):09d}"
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    try:
        # The escapee keeps stdout open; the capture gives up on it after a short grace.
        script = f"mkfifo up; setsid sh -c 'echo > up; exec sleep {token}' & read line < up; echo hi"
        result = await run_command(unsandboxed, handle, ExecCommand(shell_script=script))
        assert result.exit_code == 0 and result.stdout.head == b"hi\n"
        assert processes_with(token)  # no PID namespace: this is why unsandboxed receipts are never confirmed
    finally:
        kill_all(processes_with(token))


async def test_unsandboxed_revocation_is_never_confirmed_once_something_ran(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    scope = scope_for(work_dir)
    idle = await unsandboxed.revoke(scope.run_id, 1)
    assert idle.confirmed  # nothing ever ran for this run
    handle = await unsandboxed.ensure(scope, None, 2)
    execution = await unsandboxed.execute(handle, ExecCommand(argv=("sleep", "60")), OWNER, time.time() + 60)
    receipt = await unsandboxed.revoke(scope.run_id, 2)
    assert receipt.killed == 1 and receipt.confirmed is False
    assert (await execution.wait()).killed_by_revoke


async def test_a_newer_epoch_is_refused_when_the_old_one_cannot_be_proven_gone(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    scope = scope_for(work_dir)
    handle = await unsandboxed.ensure(scope, None, 1)
    await run_command(unsandboxed, handle, ExecCommand(argv=("true",)))
    with pytest.raises(SandboxError) as caught:
        await unsandboxed.ensure(scope, None, 2)
    assert caught.value.code == "REVOCATION_UNCONFIRMED"


def test_the_unsandboxed_gateway_does_not_inherit_the_host_environment() -> None:
    # Covered end to end by test_env.py (parametrised over both gateways); this pins the
    # launcher: the command's environment is exactly what the allowlist built.
    assert "AGENTLOOM_NEVER" not in os.environ
