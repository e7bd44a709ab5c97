"""Pick the gateway a configuration asks for (``sandbox.backend``).

``auto`` takes bubblewrap when it starts a sandbox here, else Landlock, else refuses:
it never falls back to running commands unconfined. ``none`` is the only way to that,
and it has to be asked for by name.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from agentloom.sandbox.bubblewrap import BubblewrapGateway
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.landlock import LandlockGateway
from agentloom.sandbox.ports import EnvironmentPolicy, SandboxBackend, SandboxGateway
from agentloom.sandbox.unsandboxed import UnsandboxedGateway

log = logging.getLogger("agentloom.sandbox")

BOTH_FIXES = (
    "install bubblewrap (`apt-get install -y bubblewrap`) on a host that allows unprivileged "
    "user namespaces, or run on a kernel with Landlock enabled (Linux >= 5.13, `landlock` in "
    "lsm=); to run commands unconfined anyway, write `sandbox: {backend: none}` in the config"
)


def make_gateway(
    policy: EnvironmentPolicy, *, backend: SandboxBackend, output_dir: Path, bwrap: str = "bwrap"
) -> BubblewrapGateway | LandlockGateway | UnsandboxedGateway:
    """Return a working gateway for ``backend`` (checked by starting one sandbox).

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE`` when the backend asked for (for ``auto``:
            both) cannot start a sandbox here; the message says why and how to fix it.
    """
    if backend == "none":
        return UnsandboxedGateway(policy, output_dir=output_dir)
    if backend == "bubblewrap":
        return _bubblewrap(policy, output_dir, bwrap)
    if backend == "landlock":
        return _landlock(policy, output_dir)
    if backend == "auto":
        try:
            return _bubblewrap(policy, output_dir, bwrap)
        except SandboxError as no_bwrap:
            if no_bwrap.code != SANDBOX_UNAVAILABLE:
                raise
            try:
                gateway = _landlock(policy, output_dir)
            except SandboxError as no_landlock:
                if no_landlock.code != SANDBOX_UNAVAILABLE:
                    raise
                raise SandboxError(
                    SANDBOX_UNAVAILABLE,
                    f"no sandbox can run here: {no_bwrap.error.message}; {no_landlock.error.message}. "
                    f"Fix: {BOTH_FIXES}",
                ) from None
            log.info("sandbox: using Landlock (%s)", no_bwrap.error.message)
            return gateway
    assert_never(backend)


def _bubblewrap(policy: EnvironmentPolicy, output_dir: Path, bwrap: str) -> BubblewrapGateway:
    gateway = BubblewrapGateway(policy, output_dir=output_dir, bwrap=bwrap)
    gateway.self_check()
    return gateway


def _landlock(policy: EnvironmentPolicy, output_dir: Path) -> LandlockGateway:
    gateway = LandlockGateway(policy, output_dir=output_dir)
    gateway.self_check()
    return gateway


if TYPE_CHECKING:  # every adapter implements the port (checked by mypy, not at run time)

    def _implements_the_port(
        b: BubblewrapGateway, landlock: LandlockGateway, u: UnsandboxedGateway
    ) -> tuple[SandboxGateway, SandboxGateway, SandboxGateway]:
        return b, landlock, u
