"""The ``none`` backend (``sandbox.backend: none``): commands run **unconfined**.

Commands run on the host with the runtime's uid, files and network; only the
environment allowlist, timeouts and bounded output apply. They are still started by a
reaper (``_launcher``), so every process a command starts dies with the execution and
with the runtime, and revocation is confirmed. Every result says ``sandboxed=False,
sandbox_mode="unsandboxed"``; ``/skills`` and ``/resources`` mounts do not exist. This
backend is never chosen by ``auto``: it must be written in the configuration.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._launcher import Confinement
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox.ports import WORK_MOUNT, EnvironmentPolicy, ExecCommand, SandboxHandle

log = logging.getLogger("agentloom.sandbox")

_NO_CONFINEMENT = Confinement()


class UnsandboxedGateway(ProcessGateway):
    """``SandboxGateway`` without a sandbox (``backend: none``, explicit only)."""

    mode = "unsandboxed"

    def __init__(self, policy: EnvironmentPolicy, *, output_dir: Path) -> None:
        super().__init__(policy, output_dir=output_dir)
        log.warning(
            "UNSANDBOXED EXECUTION (sandbox.backend: none): commands run directly on this host "
            "with the runtime's user, files and network"
        )

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        relative = command.cwd[len(WORK_MOUNT) :].lstrip("/")
        cwd = handle.scope.work_dir.absolute() / relative
        if command.argv is not None:
            argv = list(command.argv)
        else:
            assert command.shell_script is not None
            argv = ["/bin/sh", "-c", command.shell_script]
        return self._make_launch(lambda _fd: argv, env=env, cwd=str(cwd), info_fd=False,
                                 confinement=_NO_CONFINEMENT, scope=handle.scope)
