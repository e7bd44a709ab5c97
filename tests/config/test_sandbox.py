"""The ``sandbox:`` section (000 §7.2; 003 F03): which backend runs ``exec``, and the policy
commands run under — parsed at load time, every mistake naming its key, and carried into the
runtime's ``EnvironmentPolicy`` unchanged."""

from __future__ import annotations

import textwrap
import typing
from pathlib import Path

import pytest

from agentloom.assembly import environment_policy, runtime_from_config
from agentloom.config import Config, SandboxBackendName, load_config
from agentloom.errors import ConfigError
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SANDBOX_BACKENDS

MINIMAL = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"


def load(folder: Path, sandbox: str) -> Config:
    path = folder / "agentloom.yaml"
    path.write_text(MINIMAL + textwrap.dedent(sandbox), encoding="utf-8")
    return load_config(path)


def load_error(folder: Path, sandbox: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(folder, sandbox)
    assert caught.value.code == "CONFIG_INVALID"
    return str(caught.value)


def test_s7_2_the_configs_backend_names_are_the_sandboxes() -> None:
    assert typing.get_args(SandboxBackendName) == SANDBOX_BACKENDS


@pytest.mark.parametrize("backend", SANDBOX_BACKENDS)
def test_s7_2_sandbox_backend_accepts_auto_bubblewrap_landlock_and_none(
    tmp_path: Path, backend: str
) -> None:
    assert load(tmp_path, f"sandbox: {{backend: {backend}}}\n").sandbox.backend == backend


def test_s7_2_sandbox_backend_defaults_to_auto(tmp_path: Path) -> None:
    assert load(tmp_path, "").sandbox.backend == "auto"


def test_s7_2_an_unknown_backend_names_the_key_and_the_allowed_values(tmp_path: Path) -> None:
    message = load_error(tmp_path, "sandbox: {backend: docker}\n")

    assert message.endswith("sandbox.backend: must be 'auto', 'bubblewrap', 'landlock' or 'none' "
                            "(got 'docker')")


@pytest.mark.parametrize("value", ["true", "false"])
def test_s7_2_allow_unsandboxed_is_a_load_time_error_naming_the_key_and_the_fix(
    tmp_path: Path, value: str
) -> None:
    message = load_error(tmp_path, f"sandbox: {{allow_unsandboxed: {value}}}\n")

    assert message == (
        f"{tmp_path / 'agentloom.yaml'}: sandbox.allow_unsandboxed: was removed; write "
        "`sandbox: {backend: none}` to run commands unconfined (not recommended), or leave it out "
        "to use bubblewrap / Landlock")


def test_s7_2_an_unknown_sandbox_key_lists_the_keys_without_the_removed_one(tmp_path: Path) -> None:
    message = load_error(tmp_path, "sandbox: {egres: true}\n")

    assert message.endswith("sandbox.egres: unknown key 'egres'; did you mean 'egress'? allowed keys "
                            "at sandbox: allow_shell, backend, egress, env, max_cpu_s, "
                            "max_file_bytes, max_processes, max_work_bytes, timeout_s")


def test_f03_the_sandbox_keys_reach_the_environment_policy(tmp_path: Path) -> None:
    config = load(tmp_path, """\
        sandbox:
          backend: landlock
          env: {LANG: C.UTF-8, GREETING: "hello world"}
          egress: true
          allow_shell: true
          timeout_s: 2.5
          max_processes: 64
          max_file_bytes: 1048576
          max_cpu_s: 30
        """)

    assert environment_policy(config) == EnvironmentPolicy(
        env={"LANG": "C.UTF-8", "GREETING": "hello world"}, egress=True, allow_shell=True,
        default_timeout_s=2.5, max_processes=64, max_file_bytes=1 << 20, max_cpu_s=30)


def test_f03_without_a_sandbox_section_the_policy_is_the_default_one(tmp_path: Path) -> None:
    policy = environment_policy(load(tmp_path, ""))

    assert policy == EnvironmentPolicy()
    assert dict(policy.env) == {}  # nothing of the host's environment
    assert (policy.egress, policy.allow_shell, policy.default_timeout_s) == (False, False, 10.0)
    assert (policy.max_processes, policy.max_file_bytes, policy.max_cpu_s) == (512, 1 << 30, 3600)


@pytest.mark.parametrize(("sandbox", "expected"), [
    ("sandbox: {env: {MY-VAR: x}}\n",
     "sandbox.env: 'MY-VAR' is not an environment variable name (letters, digits and '_', not "
     "starting with a digit); rename it"),
    ("sandbox: {env: {COUNT: 3}}\n", "sandbox.env.COUNT: must be a string (got 3)"),
    ("sandbox: {env: [LANG]}\n", "sandbox.env: must be a mapping (got a list)"),
    ("sandbox: {allow_shell: yes please}\n", "sandbox.allow_shell: must be true or false (got 'yes please')"),
    ("sandbox: {timeout_s: 0}\n", "sandbox.timeout_s: must be greater than 0 (got 0)"),
    ("sandbox: {max_processes: 0}\n", "sandbox.max_processes: must be at least 1 (got 0)"),
    ("sandbox: {max_file_bytes: 1GiB}\n", "sandbox.max_file_bytes: must be a whole number (got '1GiB')"),
    ("sandbox: {max_cpu_s: 0}\n", "sandbox.max_cpu_s: must be at least 1 (got 0)"),
])
def test_f03_a_bad_sandbox_value_names_its_key(tmp_path: Path, sandbox: str, expected: str) -> None:
    assert load_error(tmp_path, sandbox).endswith(expected)


async def test_s7_2_runtime_from_config_takes_the_backend_and_policy_and_the_override_wins(
    tmp_path: Path,
) -> None:
    config = load(tmp_path, "sandbox: {backend: landlock, env: {LANG: C}}\n")
    store = f"sqlite:///{tmp_path / 'agentloom.db'}"

    configured = runtime_from_config(config, store=store)
    overridden = runtime_from_config(config, store=store, sandbox_backend="none")
    try:
        assert configured.kernel.environment.sandbox_backend == "landlock"
        assert configured.kernel.environment.policy == environment_policy(config)
        assert overridden.kernel.environment.sandbox_backend == "none"
    finally:
        await configured.aclose()
        await overridden.aclose()
