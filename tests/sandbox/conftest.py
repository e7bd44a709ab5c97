"""Sandbox fixtures: real gateways of each confining backend (bubblewrap: skipped where bwrap
is missing, failed in CI, which installs it; Landlock: skipped where the kernel lacks it),
scopes on fresh temporary work folders, and helpers that run one command."""

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
    LandlockGateway,
    SandboxGateway,
    SandboxHandle,
    SandboxScope,
    landlock_available,
    make_gateway,
    sandbox_identity,
)
from agentloom.sandbox.reach import can_make_mount_namespace

OWNER = BusinessOwner(operation_id="op-test", attempt_no=1)


def require_bwrap() -> None:
    """Skip where bubblewrap is missing; fail under ``CI``, which installs it, unless the
    suite runs in a test shape that hides it (``tests/shapes/launcher.py``)."""
    if shutil.which("bwrap"):
        return
    shape = os.environ.get("AGENTLOOM_TEST_SHAPE")
    if shape in ("no-bwrap", "container"):
        pytest.skip(f"bubblewrap is hidden in the {shape!r} test shape")
    if os.environ.get("CI"):
        pytest.fail(
            "bubblewrap is not installed and CI must run the sandbox suite (apt-get install -y bubblewrap)"
        )
    pytest.skip("bubblewrap is not installed (apt-get install -y bubblewrap)")


def require_landlock() -> None:
    if not landlock_available():
        pytest.skip("Landlock is not enabled in this kernel (needs Linux >= 5.13, landlock in lsm=)")


#: The confining backends; each backend-agnostic test runs once per backend.
BACKENDS = ("bubblewrap", "landlock")


def require_backend(backend: str) -> None:
    if backend == "bubblewrap":
        require_bwrap()
    else:
        require_landlock()


def confined_gateway(
    backend: str, policy: EnvironmentPolicy, output_dir: Path
) -> BubblewrapGateway | LandlockGateway:
    """A working gateway of ``backend`` (skipped where this machine has none)."""
    require_backend(backend)
    searchable(output_dir if output_dir.exists() else output_dir.parent)
    gateway = make_gateway(policy, backend=backend, output_dir=output_dir)  # type: ignore[arg-type]
    assert isinstance(gateway, BubblewrapGateway | LandlockGateway)
    return gateway


def searchable(path: Path) -> None:
    """Let the sandbox uid pass through ``path`` and the test folders above it, where it
    must: a root runtime that cannot make a mount namespace (the ``container`` shape) runs
    commands at the host's paths, and pytest's folders are 0700. Where root can, nothing is
    changed: the sandbox binds what it needs (``sandbox.reach``), and the tests prove it."""
    if os.geteuid() != 0 or can_make_mount_namespace():
        return
    open_to_others(path)


#: The ordinary user a folder of the user's belongs to in the 'container' test shape.
ORDINARY_USER = 1000


def owned_by_a_user_where_needed(path: Path) -> None:
    """Give ``path`` (a test's stand-in for a folder of the user's) and everything in it to an
    ordinary user where a root runtime cannot make a mount namespace: there commands work in
    a folder of the user's as its owner, and a root-owned one is refused (issue #33; that
    refusal has tests of its own). Elsewhere nothing is changed."""
    if os.geteuid() != 0 or can_make_mount_namespace():
        return
    for folder, dirs, files in os.walk(path):
        for name in [".", *dirs, *files]:
            os.lchown(os.path.join(folder, name), ORDINARY_USER, ORDINARY_USER)
    searchable(path)


def open_to_others(path: Path) -> None:
    """Let any uid pass through ``path`` and the test folders above it (``o+x``): for what
    must be reached by path from outside any sandbox view (a fake ``bwrap`` the sandbox uid
    runs, a file another local user tries)."""
    if os.geteuid() != 0:
        return
    base = Path("/tmp").resolve()
    path = path.resolve()
    while path != base and path.parent != path:
        if path.is_dir() and path.stat().st_uid == os.geteuid():
            os.chmod(path, path.stat().st_mode & 0o7777 | 0o111)
        path = path.parent


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return str(request.param)


@pytest.fixture(scope="module", params=BACKENDS)
def shell_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BubblewrapGateway | LandlockGateway]:
    """A gateway of each backend whose policy allows shell scripts (the probes are scripts)."""
    out = tmp_path_factory.mktemp("sandbox-out")
    yield confined_gateway(request.param, EnvironmentPolicy(allow_shell=True), out)


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """A run's work folder as the workspace package makes it: the sandbox uid's, ``0700``."""
    path = tmp_path / "work"
    path.mkdir(mode=0o700)
    if (identity := sandbox_identity()) is not None:
        os.chown(path, *identity)
    searchable(tmp_path)
    return path


def view_of(backend: str) -> str:
    """The view a gateway of ``backend`` made here gives its commands (``SandboxView``)."""
    if backend == "bubblewrap" or (backend == "landlock" and os.geteuid() == 0
                                   and can_make_mount_namespace()):
        return "namespace"
    return "host"


def sandbox_path(gateway: BubblewrapGateway | LandlockGateway | SandboxHandle, work_dir: Path) -> str:
    """The work folder as a command sees it: ``/work`` in a namespace view (bubblewrap;
    Landlock as root with a mount namespace), its host path otherwise."""
    return "/work" if gateway.view == "namespace" else str(work_dir)


def scope_for(
    work_dir: Path, *, run_id: str | None = None, readonly_mounts: tuple[tuple[Path, str], ...] = ()
) -> SandboxScope:
    return SandboxScope(
        workspace_scope_id="ws-test",
        run_id=run_id or new_id(),
        work_dir=work_dir,
        readonly_mounts=readonly_mounts,
        managed=True,
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


def gone(token: str, *, within_s: float = 15.0) -> list[int]:
    """The processes still showing ``token`` once they have all gone, or ``within_s`` passed."""
    deadline = time.monotonic() + within_s
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
