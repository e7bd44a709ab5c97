"""The composition root of the core: store → coordinator → pipeline → bus, plus runs.

``Kernel`` wires the one path every capability takes (000 §3) and owns the few
run facts the pipeline needs to fence its commits (run row, lease epoch). It is the
advanced layer: ``agentloom.Runtime`` — the public entry — builds one and runs agents on
it; use a ``Kernel`` directly only to drive capabilities without the agent loop (tests,
benchmarks, a host of your own).

Owns: this package's names (``Kernel``, ``RunLease``, ``tool_capability``). Its parts, one
duty each: ``_root`` (wiring the parts; the calls of a run: its invocation context, recovery,
hook outcomes), ``_catalog`` (publishing capabilities, model connections, a run's MCP
sessions), ``_runs`` (starting, queueing and claiming runs, their leases and fenced row
writes), ``_release`` (ending or letting go of a run: revocation receipts, workspace cleanup),
``_parts`` (what the parts share: the wired attributes, ``RunLease``, the fenced commit). Does
not own: the agent loop, sessions or run retries (``agent/``), nor any capability's behaviour.
"""

from agentloom.kernel._catalog import tool_capability
from agentloom.kernel._parts import RunLease
from agentloom.kernel._root import Kernel

__all__ = ["Kernel", "RunLease", "tool_capability"]
