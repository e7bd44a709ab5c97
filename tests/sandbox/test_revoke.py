"""Revocation (000 §7.2): executions are tracked per (run, lease epoch); revoking kills
every process of the run up to that epoch, waits until they are gone, and says so — under
each confining backend."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
from tests.sandbox.conftest import OWNER, confined_gateway, processes_with, run_command, scope_for, searchable

from agentloom.sandbox import (
    BubblewrapGateway,
    EnvironmentPolicy,
    ExecCommand,
    HookOwner,
    LandlockGateway,
    SandboxError,
)


@pytest.fixture
def gateway(backend: str, tmp_path: Path) -> BubblewrapGateway | LandlockGateway:
    searchable(tmp_path)
    return confined_gateway(backend, EnvironmentPolicy(), tmp_path / "out")


def long_command(token: str) -> ExecCommand:
    # A setsid'd grandchild and a plain one: neither may outlive the revocation.
    return ExecCommand(
        argv=("sh", "-c", f"setsid sleep {token} & sleep {token} & sleep {token}"), timeout_s=60
    )


def new_token() -> str:
    return f"600.{secrets.randbelow(10**9):09d}"


async def test_revoke_kills_a_long_process_and_returns_a_confirmed_receipt(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    token = new_token()
    scope = scope_for(work_dir)
    handle = await gateway.ensure(scope, None, 3)
    execution = await gateway.execute(handle, long_command(token), OWNER, time.time() + 60)
    before = time.time()
    receipt = await gateway.revoke(scope.run_id, 3)
    assert (receipt.run_id, receipt.lease_epoch, receipt.killed, receipt.confirmed) == (
        scope.run_id,
        3,
        1,
        True,
    )
    assert receipt.at >= before
    result = await execution.wait()
    assert result.killed_by_revoke and result.signal == 9 and not result.timed_out
    assert (await gateway.inspect(execution.execution_id)).state == "revoked"
    assert processes_with(token) == []


async def test_a_revoked_epoch_can_neither_execute_nor_be_ensured_again(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    scope = scope_for(work_dir)
    handle = await gateway.ensure(scope, None, 1)
    await gateway.revoke(scope.run_id, 1)
    with pytest.raises(SandboxError) as caught:
        await gateway.execute(handle, ExecCommand(argv=("touch", "/work/x")), OWNER, time.time() + 60)
    assert caught.value.code == "LEASE_REVOKED"
    with pytest.raises(SandboxError):
        await gateway.ensure(scope, None, 1)
    assert not (work_dir / "x").exists()


async def test_a_newer_epoch_first_revokes_the_older_ones(gateway: BubblewrapGateway, work_dir: Path) -> None:
    old_token, new_token_ = new_token(), new_token()
    scope = scope_for(work_dir)
    old = await gateway.ensure(scope, None, 1)
    stale = await gateway.execute(old, long_command(old_token), OWNER, time.time() + 60)
    new = await gateway.ensure(scope, None, 2)  # takeover: epoch 1 is wound down first
    assert (await stale.wait()).killed_by_revoke
    assert processes_with(old_token) == []
    with pytest.raises(SandboxError) as caught:
        await gateway.execute(old, ExecCommand(argv=("true",)), OWNER, time.time() + 60)
    assert caught.value.code == "LEASE_REVOKED"
    current = await gateway.execute(
        new, long_command(new_token_), HookOwner(hook_invocation_id="h1"), time.time() + 60
    )
    again = await gateway.revoke(scope.run_id, 1)  # idempotent, and spares epoch 2
    assert (again.killed, again.confirmed) == (0, True)
    assert (await gateway.inspect(current.execution_id)).state == "running"
    final = await gateway.revoke(scope.run_id, 2)
    assert (final.killed, final.confirmed) == (1, True)
    assert processes_with(new_token_) == []


async def test_revoke_touches_only_its_own_run(gateway: BubblewrapGateway, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    scope_a, scope_b = scope_for(tmp_path / "a"), scope_for(tmp_path / "b")
    token_a, token_b = new_token(), new_token()
    ea = await gateway.execute(
        await gateway.ensure(scope_a, None, 1), long_command(token_a), OWNER, time.time() + 60
    )
    eb = await gateway.execute(
        await gateway.ensure(scope_b, None, 1), long_command(token_b), OWNER, time.time() + 60
    )
    receipt = await gateway.revoke(scope_a.run_id, 1)
    assert receipt.killed == 1 and receipt.confirmed
    assert (await ea.wait()).killed_by_revoke
    assert (await gateway.inspect(eb.execution_id)).state == "running"
    await gateway.terminate(eb.execution_id)
    assert processes_with(token_a) == processes_with(token_b) == []


async def test_revoking_a_run_with_nothing_running_is_confirmed(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    scope = scope_for(work_dir)
    handle = await gateway.ensure(scope, None, 1)
    done = await run_command(gateway, handle, ExecCommand(argv=("true",)))
    assert done.exit_code == 0
    receipt = await gateway.revoke(scope.run_id, 1)
    assert (receipt.killed, receipt.confirmed) == (0, True)
    never = await gateway.revoke("a-run-never-seen", 7)
    assert (never.killed, never.confirmed) == (0, True)


async def test_background_processes_die_with_a_finished_command(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    token = new_token()
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    script = f"setsid sleep {token} >/dev/null 2>&1 </dev/null & (sleep {token} >/dev/null 2>&1 &); echo bye"
    result = await run_command(gateway, handle, ExecCommand(argv=("sh", "-c", script)))
    assert result.exit_code == 0 and result.stdout.head == b"bye\n"
    assert processes_with(token) == []  # the PID namespace went with the command
