"""Sandboxed command execution (000 §7.2; 003 F03, F15): the ``SandboxGateway`` port and
its adapters — bubblewrap (namespaces), Landlock (the kernel LSM, no binary) and the
explicit unconfined ``none``.

::

    make_gateway(policy, backend=auto|bubblewrap|landlock|none)
        ├─ BubblewrapGateway  bwrap as the sandbox uid, namespaces, --seccomp, rlimits
        ├─ LandlockGateway    reaper ─► command: rlimits, uid, no_new_privs, Landlock, seccomp
        └─ UnsandboxedGateway reaper ─► command (nothing else)

Owns: namespaces and Landlock rulesets, the non-root sandbox uid, the mount view
(``/work`` writable, runtime and ``/skills`` / ``/resources`` read-only), the seccomp
filter, rlimits, the environment allowlist, network off by default, bounded output
capture with spool folders reclaimed after a crash, timeouts that kill every process of
an execution, per-(run, lease epoch) tracking and revocation receipts.

Does not own: workspace paths and file tools (``workspace``), the ``exec`` tool's model
contract (``tools``), recording of operations (``pipeline``), or deleting work folders.
"""

from agentloom.sandbox._spool import reclaim_spools
from agentloom.sandbox.bubblewrap import BubblewrapGateway
from agentloom.sandbox.env import build_environment
from agentloom.sandbox.errors import SandboxError
from agentloom.sandbox.factory import make_gateway
from agentloom.sandbox.identity import SANDBOX_GID, SANDBOX_UID, sandbox_identity, scratch_folder
from agentloom.sandbox.landlock import LandlockGateway, landlock_available
from agentloom.sandbox.output import StreamCapture
from agentloom.sandbox.ports import (
    BusinessOwner,
    CapturedStream,
    EnvironmentPolicy,
    ExecCommand,
    ExecutionHandle,
    ExecutionOwnerRef,
    ExecutionResult,
    ExecutionState,
    ExecutionStatus,
    HookOwner,
    RevocationReceipt,
    SandboxBackend,
    SandboxGateway,
    SandboxHandle,
    SandboxMode,
    SandboxScope,
    SandboxView,
)
from agentloom.sandbox.unsandboxed import UnsandboxedGateway

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "BubblewrapGateway",
    "BusinessOwner",
    "CapturedStream",
    "EnvironmentPolicy",
    "ExecCommand",
    "ExecutionHandle",
    "ExecutionOwnerRef",
    "ExecutionResult",
    "ExecutionState",
    "ExecutionStatus",
    "HookOwner",
    "LandlockGateway",
    "RevocationReceipt",
    "SandboxBackend",
    "SandboxError",
    "SandboxGateway",
    "SandboxHandle",
    "SandboxMode",
    "SandboxScope",
    "SandboxView",
    "StreamCapture",
    "UnsandboxedGateway",
    "build_environment",
    "landlock_available",
    "make_gateway",
    "reclaim_spools",
    "sandbox_identity",
    "scratch_folder",
]
