"""The environment a command sees: the policy allowlist, the patch, a fixed ``PATH``.

Nothing is ever inherited from the host (003 F03). Variables that make the loader or
a shell run code before the command does are stripped even when configured, because
bubblewrap passes ``--setenv LD_PRELOAD`` straight to ld.so.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentloom.sandbox.ports import EnvironmentPolicy

_STRIPPED_NAMES = frozenset({"BASH_ENV", "ENV", "GCONV_PATH", "PATH"})
_STRIPPED_PREFIXES = ("LD_", "BASH_FUNC_")


def is_stripped(name: str) -> bool:
    """True for a variable the sandbox never sets from configuration or a patch."""
    return name in _STRIPPED_NAMES or name.startswith(_STRIPPED_PREFIXES)


def build_environment(
    policy: EnvironmentPolicy, env_patch: Mapping[str, str]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Return ``(environment, stripped names)`` for one command.

    The environment is ``policy.env`` updated by ``env_patch``, minus the stripped
    variables, plus ``PATH=policy.path``. ``PATH`` given in either mapping is
    reported as stripped: the policy's path always wins.
    """
    merged = {**policy.env, **env_patch}
    stripped = tuple(sorted(name for name in merged if is_stripped(name)))
    env = {name: value for name, value in merged.items() if not is_stripped(name)}
    env["PATH"] = policy.path
    return env, stripped
