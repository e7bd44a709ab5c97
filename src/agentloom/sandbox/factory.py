"""Pick the gateway for this host: bubblewrap, or, only when explicitly allowed, none."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from agentloom.sandbox.bubblewrap import BubblewrapGateway
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.ports import EnvironmentPolicy, SandboxGateway
from agentloom.sandbox.unsandboxed import UnsandboxedGateway

log = logging.getLogger("agentloom.sandbox")


def make_gateway(
    policy: EnvironmentPolicy, *, allow_unsandboxed: bool, output_dir: Path, bwrap: str = "bwrap"
) -> BubblewrapGateway | UnsandboxedGateway:
    """Return a working ``BubblewrapGateway`` (checked by starting one sandbox).

    Where bubblewrap is missing or cannot start a sandbox, fall back to an
    ``UnsandboxedGateway`` only if ``allow_unsandboxed`` is true.

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE``, naming how to install bubblewrap, when
            bubblewrap is unusable and ``allow_unsandboxed`` is false.
    """
    try:
        gateway = BubblewrapGateway(policy, output_dir=output_dir, bwrap=bwrap)
        gateway.self_check()
        return gateway
    except SandboxError as exc:
        if exc.code != SANDBOX_UNAVAILABLE or not allow_unsandboxed:
            raise
        log.warning("sandbox unavailable (%s); allow_unsandboxed=True, so commands will NOT be isolated", exc)
        return UnsandboxedGateway(policy, output_dir=output_dir)


if TYPE_CHECKING:  # both adapters implement the port (checked by mypy, not at run time)

    def _implements_the_port(
        b: BubblewrapGateway, u: UnsandboxedGateway
    ) -> tuple[SandboxGateway, SandboxGateway]:
        return b, u
