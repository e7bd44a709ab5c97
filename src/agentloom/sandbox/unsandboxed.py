"""The unsandboxed development adapter: same environment allowlist, timeouts, process
groups and bounded output as bubblewrap, but **no isolation at all**.

Commands run on the host, with the runtime's uid, filesystem and network. Every result
says ``sandboxed=False, sandbox_mode="unsandboxed"``; a revocation receipt is never
``confirmed`` once anything ran (a ``setsid`` child leaves the process group unseen);
``/skills`` and ``/resources`` mounts do not exist. Construction logs a warning.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox.ports import WORK_MOUNT, EnvironmentPolicy, ExecCommand, SandboxHandle

log = logging.getLogger("agentloom.sandbox")


class UnsandboxedGateway(ProcessGateway):
    """``SandboxGateway`` without a sandbox, for hosts without bubblewrap (opt-in only)."""

    mode = "unsandboxed"

    def __init__(self, policy: EnvironmentPolicy, *, output_dir: Path) -> None:
        super().__init__(policy, output_dir=output_dir)
        log.warning(
            "UNSANDBOXED EXECUTION: commands run directly on this host with the runtime's user, "
            "files and network; only the environment allowlist, timeouts and output limits apply. "
            "Install bubblewrap (`apt-get install -y bubblewrap`) to isolate them."
        )

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        relative = command.cwd[len(WORK_MOUNT) :].lstrip("/")
        cwd = handle.scope.work_dir.absolute() / relative
        if command.argv is not None:
            argv = list(command.argv)
        else:
            assert command.shell_script is not None
            argv = ["/bin/sh", "-c", command.shell_script]
        return self._make_launch(lambda _fd: argv, env=env, cwd=str(cwd), info_fd=False)
