"""The command contract: what runs, where, as whom, for how long, and what is refused
before anything runs."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from pathlib import Path

import pytest
from tests.sandbox.conftest import OWNER, processes_with, require_bwrap, run_command, scope_for, text

from agentloom.sandbox import (
    BubblewrapGateway,
    EnvironmentPolicy,
    ExecCommand,
    SandboxError,
    SandboxScope,
    sandbox_identity,
)


@pytest.fixture
def gateway(tmp_path: Path) -> BubblewrapGateway:
    require_bwrap()
    return BubblewrapGateway(EnvironmentPolicy(), output_dir=tmp_path / "out")


def sleep_token() -> str:
    return f"600.{secrets.randbelow(10**9):09d}"


async def test_shell_script_is_refused_without_allow_shell(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    with pytest.raises(SandboxError) as caught:
        await run_command(gateway, handle, ExecCommand(shell_script="touch /work/ran"))
    assert caught.value.code == "SHELL_NOT_ALLOWED"
    assert caught.value.error.external_outcome == "not_started"
    assert not (work_dir / "ran").exists()


@pytest.mark.parametrize("cwd", ["/etc", "/", "..", "/work/../etc", "sub/../../x", "/workspace", "//etc"])
def test_cwd_outside_work_is_refused(cwd: str) -> None:
    with pytest.raises(SandboxError) as caught:
        ExecCommand(argv=("pwd",), cwd=cwd)
    assert caught.value.code == "CWD_OUTSIDE_WORK"


@pytest.mark.parametrize(
    ("cwd", "expected"), [("/work", "/work"), ("sub", "/work/sub"), ("/work/sub/.", "/work/sub")]
)
async def test_cwd_is_work_or_below(
    gateway: BubblewrapGateway, work_dir: Path, cwd: str, expected: str
) -> None:
    (work_dir / "sub").mkdir()
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(gateway, handle, ExecCommand(argv=("pwd",), cwd=cwd))
    assert text(result).strip() == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"argv": ("a",), "shell_script": "a"},
        {"argv": ()},
        {"argv": ["ls"]},
        {"argv": ("a\0b",)},
        {"argv": ("ls",), "timeout_s": 0},
        {"argv": ("ls",), "timeout_s": float("nan")},
    ],
)
def test_a_command_needs_exactly_one_well_formed_argv_or_shell_script(kwargs: dict[str, object]) -> None:
    with pytest.raises(SandboxError) as caught:
        ExecCommand(**kwargs)  # type: ignore[arg-type]
    assert caught.value.code == "COMMAND_INVALID"


async def test_argv_runs_without_a_shell(gateway: BubblewrapGateway, work_dir: Path) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(
        gateway, handle, ExecCommand(argv=("echo", "a;touch /work/x", "$HOME", "`id`"))
    )
    assert text(result) == "a;touch /work/x $HOME `id`\n"
    assert not (work_dir / "x").exists()


async def test_writing_work_works_and_files_are_owned_by_the_mapped_uid(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    # argv may name a shell explicitly: only ``shell_script`` needs ``allow_shell``
    script = "echo hi > /work/new && stat -c %u:%g /work/new && id -u"
    result = await run_command(gateway, handle, ExecCommand(argv=("/bin/sh", "-c", script)))
    inside_owner, inside_uid = text(result).split()
    assert inside_owner == "65534:65534" and inside_uid == "65534"
    # uid 65534 in the sandbox is the launcher's uid on the host (bubblewrap's mapping):
    # the runtime's own, or, when the runtime is root, the sandbox uid — never root.
    st = (work_dir / "new").stat()
    expected = sandbox_identity() or (os.getuid(), os.getgid())
    assert (st.st_uid, st.st_gid) == expected and st.st_uid != 0
    assert (work_dir / "new").read_text() == "hi\n"


async def test_the_sandbox_has_no_capabilities_and_no_new_privileges(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(
        gateway, handle, ExecCommand(argv=("grep", "-E", "^(CapEff|CapPrm|NoNewPrivs)", "/proc/self/status"))
    )
    fields = dict(line.split(":\t") for line in text(result).splitlines())
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0
    assert fields["NoNewPrivs"].strip() == "1"


async def test_only_stdio_is_open_and_stdin_is_empty(gateway: BubblewrapGateway, work_dir: Path) -> None:
    leaked = os.open(__file__, os.O_RDONLY)
    os.set_inheritable(leaked, True)
    try:
        handle = await gateway.ensure(scope_for(work_dir), None, 1)
        fds = await run_command(gateway, handle, ExecCommand(argv=("ls", "/proc/self/fd")))
        stdin = await run_command(gateway, handle, ExecCommand(argv=("cat",), timeout_s=5))
    finally:
        os.close(leaked)
    assert set(text(fds).split()) <= {"0", "1", "2", "3"}  # 3: the directory ls is reading
    assert stdin.exit_code == 0 and stdin.stdout.total_bytes == 0 and not stdin.timed_out


async def test_only_work_and_a_private_tmp_are_writable(gateway: BubblewrapGateway, work_dir: Path) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    for target in ("/usr/x", "/x", "/etc/x", "/proc/sys/kernel/hostname", "/dev/x"):
        result = await run_command(gateway, handle, ExecCommand(argv=("touch", target)))
        assert result.exit_code != 0, target
    for target in ("/tmp/x", "/work/x", "/dev/shm/x"):
        result = await run_command(gateway, handle, ExecCommand(argv=("touch", target)))
        assert result.exit_code == 0, target


async def test_readonly_mounts_are_visible_and_read_only(
    gateway: BubblewrapGateway, tmp_path: Path, work_dir: Path
) -> None:
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# demo\n")
    scope = scope_for(work_dir, readonly_mounts=((skill, "/skills/demo"),))
    handle = await gateway.ensure(scope, None, 1)
    read = await run_command(gateway, handle, ExecCommand(argv=("cat", "/skills/demo/SKILL.md")))
    write = await run_command(gateway, handle, ExecCommand(argv=("touch", "/skills/demo/x")))
    assert text(read) == "# demo\n"
    assert write.exit_code != 0 and not (skill / "x").exists()


@pytest.mark.parametrize(
    "target", ["/etc/x", "/work/skills", "/skills", "/skills/../etc", "skills/x", "/usr/x"]
)
def test_readonly_mounts_outside_the_allowed_roots_are_refused(tmp_path: Path, target: str) -> None:
    with pytest.raises(SandboxError) as caught:
        SandboxScope(
            workspace_scope_id="w", run_id="r", work_dir=tmp_path, readonly_mounts=((tmp_path, target),)
        )
    assert caught.value.code == "MOUNT_INVALID"


async def test_an_image_digest_is_refused_by_a_host_runtime_gateway(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    with pytest.raises(SandboxError) as caught:
        await gateway.ensure(scope_for(work_dir), "sha256:" + "0" * 64, 1)
    assert caught.value.code == "IMAGE_UNSUPPORTED"


async def test_a_missing_work_dir_is_refused(gateway: BubblewrapGateway, tmp_path: Path) -> None:
    with pytest.raises(SandboxError) as caught:
        await gateway.ensure(scope_for(tmp_path / "missing"), None, 1)
    assert caught.value.code == "SCOPE_INVALID"


async def test_hostname_and_network_are_the_sandbox_own(gateway: BubblewrapGateway, work_dir: Path) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(
        gateway, handle, ExecCommand(argv=("cat", "/proc/sys/kernel/hostname", "/proc/net/dev"))
    )
    lines = text(result).splitlines()
    assert lines[0] == "sandbox"
    assert [line.split(":")[0].strip() for line in lines[3:]] == ["lo"]


async def test_egress_policy_shares_the_host_network(tmp_path: Path, work_dir: Path) -> None:
    require_bwrap()
    gateway = BubblewrapGateway(EnvironmentPolicy(egress=True), output_dir=tmp_path / "out")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        handle = await gateway.ensure(scope_for(work_dir), None, 1)
        code = (
            f"import socket; socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), timeout=3)"
        )
        result = await run_command(gateway, handle, ExecCommand(argv=("python3", "-c", code)))
        listener.setblocking(False)
        conn, _ = listener.accept()
        conn.close()
    finally:
        listener.close()
    assert result.exit_code == 0


async def test_exit_code_is_reported(gateway: BubblewrapGateway, work_dir: Path) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(gateway, handle, ExecCommand(argv=("sh", "-c", "exit 7")))
    assert (result.exit_code, result.signal, result.timed_out) == (7, None, False)
    assert result.sandboxed and result.sandbox_mode == "bubblewrap"


async def test_timeout_kills_the_whole_process_group_including_grandchildren(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    token = sleep_token()
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    script = (
        f"sleep {token} & (sleep {token} &) ; setsid sleep {token} & trap '' TERM; echo up; sleep {token}"
    )
    result = await run_command(gateway, handle, ExecCommand(argv=("sh", "-c", script), timeout_s=0.5))
    assert result.timed_out and result.exit_code is None and result.signal == 9
    assert result.stdout.head == b"up\n"
    assert processes_with(token) == []


async def test_the_policy_default_timeout_applies(tmp_path: Path, work_dir: Path) -> None:
    require_bwrap()
    gateway = BubblewrapGateway(EnvironmentPolicy(default_timeout_s=0.3), output_dir=tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(gateway, handle, ExecCommand(argv=("sleep", "60")))
    assert result.timed_out


async def test_the_run_deadline_bounds_the_timeout(gateway: BubblewrapGateway, work_dir: Path) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(
        gateway, handle, ExecCommand(argv=("sleep", "60"), timeout_s=60), deadline_s=0.3
    )
    assert result.timed_out


async def test_a_passed_deadline_is_refused_before_spawning(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    with pytest.raises(SandboxError) as caught:
        await gateway.execute(handle, ExecCommand(argv=("touch", "/work/x")), OWNER, time.time() - 1)
    assert caught.value.code == "DEADLINE_EXCEEDED"
    assert not (work_dir / "x").exists()


async def test_terminate_kills_and_inspect_follows_the_state(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    token = sleep_token()
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    execution = await gateway.execute(
        handle, ExecCommand(argv=("sh", "-c", f"sleep {token} & sleep {token}")), OWNER, time.time() + 60
    )
    status = await gateway.inspect(execution.execution_id)
    assert status.state == "running" and status.result is None and status.owner == OWNER
    await gateway.terminate(execution.execution_id)
    status = await gateway.inspect(execution.execution_id)
    assert status.state == "terminated"
    assert status.result is not None and status.result.terminated and status.result.signal == 9
    assert (await execution.wait()) == status.result
    assert processes_with(token) == []


async def test_inspect_of_an_unknown_execution_is_not_found(gateway: BubblewrapGateway) -> None:
    with pytest.raises(SandboxError) as caught:
        await gateway.inspect("no-such-execution")
    assert caught.value.code == "UNKNOWN_EXECUTION" and caught.value.error.category == "not_found"


async def test_concurrent_executions_keep_their_own_output(
    gateway: BubblewrapGateway, work_dir: Path
) -> None:
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    results = await asyncio.gather(
        *(run_command(gateway, handle, ExecCommand(argv=("echo", f"n{i}"))) for i in range(6))
    )
    assert [text(r) for r in results] == [f"n{i}\n" for i in range(6)]
    assert len({r.execution_id for r in results}) == 6
