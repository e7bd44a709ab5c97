"""The resource limits a confined command starts with (every backend but ``none``)."""

from __future__ import annotations

import resource

from agentloom.sandbox.ports import EnvironmentPolicy


def command_rlimits(
    policy: EnvironmentPolicy, identity: tuple[int, int] | None
) -> tuple[tuple[int, int], ...]:
    """``(resource, limit)`` pairs, soft = hard, never above the runtime's own hard limits.

    ``RLIMIT_NPROC`` counts every process of a uid, so it is set only when commands run as
    the dedicated sandbox uid (``identity``); a runtime running as an ordinary user would
    otherwise count its own processes against the sandbox's budget.
    """
    wanted = [
        (resource.RLIMIT_FSIZE, policy.max_file_bytes),
        (resource.RLIMIT_CPU, policy.max_cpu_s),
        (resource.RLIMIT_CORE, 0),
    ]
    if identity is not None:
        wanted.append((resource.RLIMIT_NPROC, policy.max_processes))
    limits = []
    for limit, value in wanted:
        hard = resource.getrlimit(limit)[1]
        limits.append((limit, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return tuple(limits)


def apply_rlimits(limits: tuple[tuple[int, int], ...]) -> None:
    """Set ``limits`` on this process (run in a child between fork and exec)."""
    for limit, value in limits:
        resource.setrlimit(limit, (value, value))
