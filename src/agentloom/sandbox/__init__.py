"""Sandboxed command execution (000 §7.2; 003 F03, F15): the ``SandboxGateway`` port and
its bubblewrap adapter.

Owns: namespaces, the non-root sandbox uid, the mount view (``/work`` writable, runtime
and ``/skills`` / ``/resources`` read-only), the environment allowlist, network off by
default, bounded output capture with a spool file, timeouts that kill whole process
groups, per-(run, lease epoch) tracking and revocation receipts.

Does not own: workspace paths and file tools (``workspace``), the ``exec`` tool's model
contract (``tools``), recording of operations (``pipeline``), or deleting work folders.
"""

from agentloom.sandbox.bubblewrap import BubblewrapGateway
from agentloom.sandbox.env import build_environment
from agentloom.sandbox.errors import SandboxError
from agentloom.sandbox.factory import make_gateway
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
    SandboxGateway,
    SandboxHandle,
    SandboxMode,
    SandboxScope,
)
from agentloom.sandbox.unsandboxed import UnsandboxedGateway

__all__ = [
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
    "RevocationReceipt",
    "SandboxError",
    "SandboxGateway",
    "SandboxHandle",
    "SandboxMode",
    "SandboxScope",
    "StreamCapture",
    "UnsandboxedGateway",
    "build_environment",
    "make_gateway",
]
