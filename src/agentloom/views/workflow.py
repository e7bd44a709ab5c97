"""What ``runs show`` shows of a workflow run (issue 20): its graph state, read from the store.

``nodes`` has one entry per node of the workflow, in definition order: ``node``, ``kind``
(agent | capability | wait), ``status`` (``pending``: not run; ``running``: its call is in
flight; ``waiting``: it waits for a person; ``succeeded`` / ``failed``), ``output``, ``error``,
``attempts`` (how often it ran in this run), ``call_id`` and ``operation_id`` of its last
activation, ``unknown`` (calls whose effect is not known) and ``history`` (every activation:
``attempt``, ``status``, ``output``, ``error``, ``call_id``, ``operation_id``). ``current``
names the nodes running or waiting; ``edges`` are the workflow's edges as defined (``from``,
``to``, ``join``, ``when``, ``on_error``, ``max``).

It reads the ``workflow_nodes`` records (``store.workflow_nodes.node_records``) and the run's
operations only — never a file.

Owns: the shape above. Does not own: running a workflow (``squad.driver``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentloom.store import Store
from agentloom.store.workflow_nodes import WorkflowNodeRecord, node_records

__all__ = ["workflow_detail"]


def workflow_detail(store: Store, run_id: str, definition: Any,
                    operations: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The graph state of the workflow run ``run_id`` (``definition``: the workflow as the run
    recorded it: ``nodes`` a list of ``{"node": NAME, …}`` in definition order), or None for a
    run that is not a workflow's."""
    if not isinstance(definition, dict) or not isinstance(definition.get("nodes"), list):
        return None
    by_node: dict[str, list[WorkflowNodeRecord]] = {}
    for record in node_records(store, run_id):
        by_node.setdefault(record.node, []).append(record)
    in_flight = _in_flight(run_id, operations)
    nodes = []
    for node in definition["nodes"]:
        name = str(node.get("node"))
        history = sorted(by_node.get(name, []), key=lambda r: r.attempt)
        entries = [_activation(r) for r in history]
        last = entries[-1] if entries else None
        status = last["status"] if last else "pending"
        flying = in_flight.get(name)
        if flying is not None and (last is None or flying["attempt"] > last["attempt"]):
            status = "waiting" if flying["phase"] == "awaiting_approval" else "running"
            last = {"attempt": flying["attempt"], "status": status, "output": None,
                    "error": None, "call_id": f"{name}#{flying['attempt']}",
                    "operation_id": flying["operation_id"], "unknown": []}
        nodes.append({
            "node": name, "kind": _kind(node), "status": status,
            "output": last["output"] if last else None,
            "error": last["error"] if last else None,
            "attempts": max(len(entries), last["attempt"] if last else 0),
            "call_id": last["call_id"] if last else None,
            "operation_id": last["operation_id"] if last else None,
            "unknown": last["unknown"] if last else [],
            "history": entries,
        })
    return {"workflow": definition.get("name"),
            "current": [n["node"] for n in nodes if n["status"] in ("running", "waiting")],
            "nodes": nodes, "edges": list(definition.get("edges") or [])}


def _activation(record: WorkflowNodeRecord) -> dict[str, Any]:
    data = record.data
    return {"attempt": record.attempt, "status": record.status,
            "output": data.get("output"), "error": data.get("error"),
            "call_id": data.get("call_id"), "operation_id": record.operation_id,
            "unknown": data.get("unknown") or []}


def _kind(node: dict[str, Any]) -> str:
    return "agent" if "agent" in node else "capability" if "capability" in node else "wait"


def _in_flight(run_id: str, operations: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Node -> its newest activation whose call has not ended (from the operations)."""
    prefix = f"{run_id}/n/"
    out: dict[str, dict[str, Any]] = {}
    for op in operations:
        key = str(op.get("logical_key") or "")
        if not key.startswith(prefix) or op.get("outcome") is not None:
            continue
        node, _, rest = key[len(prefix):].partition("/")
        attempt = rest.split("/", 1)[0]
        if not attempt.isdigit():
            continue
        entry = {"attempt": int(attempt), "operation_id": op.get("operation_id"),
                 "phase": op.get("phase")}
        if node not in out or entry["attempt"] >= out[node]["attempt"]:
            out[node] = entry
    return out
