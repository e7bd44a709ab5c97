"""003 F03: the environment is an explicit allowlist. Absent means empty, never the host's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.sandbox.conftest import require_bwrap, require_landlock, run_command, scope_for, text

from agentloom.errors import ConfigError
from agentloom.sandbox import (
    BubblewrapGateway,
    EnvironmentPolicy,
    ExecCommand,
    LandlockGateway,
    SandboxError,
    UnsandboxedGateway,
    build_environment,
)


@pytest.fixture(params=["bubblewrap", "landlock", "unsandboxed"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    def factory(policy: EnvironmentPolicy) -> BubblewrapGateway | LandlockGateway | UnsandboxedGateway:
        if request.param == "bubblewrap":
            require_bwrap()
            return BubblewrapGateway(policy, output_dir=tmp_path / "out")
        if request.param == "landlock":
            require_landlock()
            return LandlockGateway(policy, output_dir=tmp_path / "out")
        return UnsandboxedGateway(policy, output_dir=tmp_path / "out")

    yield factory


@pytest.fixture
def host_secret() -> Iterator[str]:
    os.environ["AGENTLOOM_F03_SECRET"] = "host-secret-value"
    try:
        yield "AGENTLOOM_F03_SECRET"
    finally:
        os.environ.pop("AGENTLOOM_F03_SECRET", None)


def names(output: str) -> set[str]:
    """Variable names, without the PWD bubblewrap sets after ``--chdir`` (it is the
    sandbox cwd, checked separately, not anything of the host's) and the TMPDIR Landlock
    sets (the command's private temporary folder, since ``/tmp`` is closed to it)."""
    found = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
    if "PWD" in found:
        assert "PWD=/work" in output.splitlines()
    if "TMPDIR" in found:
        tmpdir = next(line for line in output.splitlines() if line.startswith("TMPDIR="))
        assert "/spool-" in tmpdir and "/tmp-" in tmpdir  # the gateway's own, not the host's
    return found - {"PWD", "TMPDIR"}


async def test_f03_absent_env_is_empty_env(make, work_dir: Path, host_secret: str) -> None:  # type: ignore[no-untyped-def]
    gateway = make(EnvironmentPolicy())
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(gateway, handle, ExecCommand(argv=("/usr/bin/env",)))
    assert result.exit_code == 0
    assert names(text(result)) == {"PATH"}  # only names are compared: the host env is never printed
    assert f"PATH={EnvironmentPolicy().path}" in text(result).splitlines()


async def test_f03_policy_env_is_the_whole_environment(make, work_dir: Path, host_secret: str) -> None:  # type: ignore[no-untyped-def]
    gateway = make(EnvironmentPolicy(env={"LANG": "C.UTF-8", "APP_MODE": "test"}))
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(
        gateway, handle, ExecCommand(argv=("/usr/bin/env",), env_patch={"APP_MODE": "patched"})
    )
    lines = set(text(result).splitlines())
    assert names(text(result)) == {"PATH", "LANG", "APP_MODE"}
    assert {"LANG=C.UTF-8", "APP_MODE=patched"} <= lines


async def test_loader_and_shell_startup_variables_are_stripped_and_reported(make, work_dir: Path) -> None:  # type: ignore[no-untyped-def]
    policy = EnvironmentPolicy(env={"LD_LIBRARY_PATH": "/work/lib", "KEEP": "1", "BASH_ENV": "/work/rc"})
    gateway = make(policy)
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    patch = {
        "LD_PRELOAD": "/work/x.so",
        "LD_AUDIT": "/work/a.so",
        "ENV": "/work/rc",
        "BASH_FUNC_ls": "() { :; }",
        "GCONV_PATH": "/work",
        "PATH": "/work/bin",
    }
    result = await run_command(gateway, handle, ExecCommand(argv=("/usr/bin/env",), env_patch=patch))
    assert names(text(result)) == {"PATH", "KEEP"}
    assert result.env_stripped == (
        "BASH_ENV",
        "BASH_FUNC_ls",
        "ENV",
        "GCONV_PATH",
        "LD_AUDIT",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "PATH",
    )
    assert f"PATH={policy.path}" in text(result).splitlines()


def test_build_environment_merges_policy_patch_and_fixed_path() -> None:
    policy = EnvironmentPolicy(env={"A": "1", "B": "2", "LD_DEBUG": "all"}, path="/usr/bin")
    env, stripped = build_environment(policy, {"B": "3", "LD_PRELOAD": "x"})
    assert env == {"A": "1", "B": "3", "PATH": "/usr/bin"}
    assert stripped == ("LD_DEBUG", "LD_PRELOAD")


def test_build_environment_of_the_default_policy_is_only_path() -> None:
    env, stripped = build_environment(EnvironmentPolicy(), {})
    assert env == {"PATH": "/usr/local/bin:/usr/bin:/bin"} and stripped == ()


@pytest.mark.parametrize("name", ["", "A=B", "1X", "A B", "A\0B"])
def test_invalid_variable_names_are_refused(name: str) -> None:
    with pytest.raises(SandboxError) as caught:
        ExecCommand(argv=("true",), env_patch={name: "v"})
    assert caught.value.code == "ENV_INVALID"
    with pytest.raises(ConfigError):
        EnvironmentPolicy(env={name: "v"})


def test_values_with_nul_are_refused() -> None:
    with pytest.raises(SandboxError) as caught:
        ExecCommand(argv=("true",), env_patch={"A": "x\0y"})
    assert caught.value.code == "ENV_INVALID"


def test_the_policy_env_is_frozen() -> None:
    source = {"A": "1"}
    policy = EnvironmentPolicy(env=source)
    source["B"] = "2"
    assert dict(policy.env) == {"A": "1"}
    with pytest.raises(TypeError):
        policy.env["C"] = "3"  # type: ignore[index]
