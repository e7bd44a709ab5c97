"""Which sandbox runs (``sandbox.backend``): ``auto`` is bubblewrap, else Landlock, else a
refusal naming both fixes — never unconfined; ``none`` runs commands unconfined only when
asked for by name, says so in every result, and still reaps every process it started."""

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
    open_to_others,
    processes_with,
    require_bwrap,
    require_landlock,
    run_command,
    scope_for,
    searchable,
    text,
)

from agentloom.sandbox import (
    BubblewrapGateway,
    EnvironmentPolicy,
    ExecCommand,
    LandlockGateway,
    SandboxError,
    UnsandboxedGateway,
    _kernel,
    make_gateway,
)

MISSING = "/nonexistent/bin/bwrap"


@pytest.fixture
def no_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel answers as one without Landlock does (ABI 0)."""
    monkeypatch.setattr(_kernel, "landlock_abi", lambda: 0)


def broken_bwrap(folder: Path) -> str:
    """A ``bwrap`` that installs fine but cannot create namespaces (as in many containers)."""
    path = folder / "bwrap"
    path.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "bubblewrap 0.8.0"; exit 0; }\n'
                    'echo "bwrap: No permissions to create new namespace" >&2; exit 1\n')
    path.chmod(0o755)
    open_to_others(folder)  # the sandbox uid runs it by its path
    return str(path)


def test_s7_2_auto_with_neither_backend_refuses_exec_naming_both_fixes(
    tmp_path: Path, no_landlock: None
) -> None:
    with pytest.raises(SandboxError) as caught:
        make_gateway(EnvironmentPolicy(), backend="auto", output_dir=tmp_path, bwrap=MISSING)
    message = str(caught.value)
    assert caught.value.code == "SANDBOX_UNAVAILABLE"
    assert "apt-get install -y bubblewrap" in message and "Landlock" in message
    assert "backend: none" in message


def test_missing_bubblewrap_is_refused_naming_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(SandboxError) as caught:
        make_gateway(EnvironmentPolicy(), backend="bubblewrap", output_dir=tmp_path, bwrap=MISSING)
    assert caught.value.code == "SANDBOX_UNAVAILABLE"
    assert "apt-get install -y bubblewrap" in str(caught.value)


def test_landlock_asked_for_on_a_kernel_without_it_is_refused(tmp_path: Path, no_landlock: None) -> None:
    with pytest.raises(SandboxError) as caught:
        make_gateway(EnvironmentPolicy(), backend="landlock", output_dir=tmp_path)
    assert caught.value.code == "SANDBOX_UNAVAILABLE" and "lsm=" in str(caught.value)


def test_auto_without_bubblewrap_uses_landlock(tmp_path: Path) -> None:
    require_landlock()
    gateway = make_gateway(EnvironmentPolicy(), backend="auto", output_dir=tmp_path, bwrap=MISSING)
    assert isinstance(gateway, LandlockGateway) and gateway.sandbox_mode == "landlock"


def test_a_bubblewrap_that_cannot_start_falls_to_landlock_never_to_unconfined(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    require_landlock()
    with caplog.at_level(logging.INFO, logger="agentloom.sandbox"):
        gateway = make_gateway(EnvironmentPolicy(), backend="auto", output_dir=tmp_path / "out",
                               bwrap=broken_bwrap(tmp_path))
    assert isinstance(gateway, LandlockGateway)
    assert any("No permissions to create new namespace" in r.getMessage() for r in caplog.records)


def test_a_bubblewrap_that_cannot_start_with_no_landlock_is_refused(
    tmp_path: Path, no_landlock: None
) -> None:
    with pytest.raises(SandboxError) as caught:
        make_gateway(EnvironmentPolicy(), backend="auto", output_dir=tmp_path / "out",
                     bwrap=broken_bwrap(tmp_path))
    assert "No permissions to create new namespace" in str(caught.value)


def test_auto_prefers_a_working_bubblewrap(tmp_path: Path) -> None:
    require_bwrap()
    searchable(tmp_path)
    gateway = make_gateway(EnvironmentPolicy(), backend="auto", output_dir=tmp_path / "out")
    assert isinstance(gateway, BubblewrapGateway) and gateway.sandbox_mode == "bubblewrap"


def test_backend_none_is_unconfined_only_by_name_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, no_landlock: None
) -> None:
    with caplog.at_level(logging.WARNING, logger="agentloom.sandbox"):
        gateway = make_gateway(EnvironmentPolicy(), backend="none", output_dir=tmp_path, bwrap=MISSING)
    assert isinstance(gateway, UnsandboxedGateway) and gateway.sandbox_mode == "unsandboxed"
    assert any("UNSANDBOXED" in record.getMessage() for record in caplog.records)


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


async def test_unsandboxed_timeout_kills_every_process_it_started(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    token = f"600.{secrets.randbelow(10**9):09d}"
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    script = f"sleep {token} & (setsid sleep {token} &); sleep {token}"
    command = ExecCommand(shell_script=script, timeout_s=0.5)
    result = await run_command(unsandboxed, handle, command)
    assert result.timed_out and result.signal == 9
    assert processes_with(token) == []


async def test_a_setsid_child_dies_with_its_command_even_unsandboxed(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    token = f"600.{secrets.randbelow(10**9):09d}"
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    try:
        # The escapee keeps stdout open; its reaper kills it when the command ends.
        script = f"mkfifo up; setsid sh -c 'echo > up; exec sleep {token}' & read line < up; echo hi"
        result = await run_command(unsandboxed, handle, ExecCommand(shell_script=script))
        assert result.exit_code == 0 and result.stdout.head == b"hi\n"
        assert processes_with(token) == []
    finally:
        kill_all(processes_with(token))


async def test_unsandboxed_revocation_is_confirmed_once_the_reaper_emptied_its_tree(
    unsandboxed: UnsandboxedGateway, work_dir: Path
) -> None:
    scope = scope_for(work_dir)
    idle = await unsandboxed.revoke(scope.run_id, 1)
    assert idle.confirmed  # nothing ever ran for this run
    handle = await unsandboxed.ensure(scope, None, 2)
    token = f"600.{secrets.randbelow(10**9):09d}"
    command = ExecCommand(shell_script=f"(setsid sleep {token} &); sleep {token}")
    execution = await unsandboxed.execute(handle, command, OWNER, time.time() + 60)
    receipt = await unsandboxed.revoke(scope.run_id, 2)
    assert receipt.killed == 1 and receipt.confirmed is True
    assert (await execution.wait()).killed_by_revoke
    assert processes_with(token) == []


async def test_the_unsandboxed_gateway_does_not_inherit_the_host_environment(
    unsandboxed: UnsandboxedGateway, work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOOM_NEVER", "host secret")
    handle = await unsandboxed.ensure(scope_for(work_dir), None, 1)
    result = await run_command(unsandboxed, handle, ExecCommand(argv=("env",)))
    assert "AGENTLOOM_NEVER" not in text(result) and "PATH=" in text(result)
    assert os.environ["AGENTLOOM_NEVER"] == "host secret"
