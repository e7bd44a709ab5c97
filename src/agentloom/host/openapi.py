"""The host's contract: one OpenAPI 3.1 document (``GET /openapi.json``), written by hand
beside the routes it describes — every route, its request and response schemas (JSON Schema
2020-12), the bearer security scheme and the problem responses. The tests validate real
responses against it.

Owns: the document. Does not own the routes (a route added without its entry here fails the
contract test).
"""

from __future__ import annotations

import copy
from typing import Any, get_args

from agentloom.results import RunStatus

__all__ = ["openapi_document"]

_NULL_STR = {"type": ["string", "null"]}
_NULL_NUM = {"type": ["number", "null"]}
_ANY: dict[str, Any] = {}

SCHEMAS: dict[str, Any] = {
    "Problem": {
        "type": "object", "description": "RFC 9457 problem details; code is the CLI's error code.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                       "status": {"type": "integer"}, "detail": {"type": "string"},
                       "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"}},
    },
    "RunStatus": {"type": "string", "enum": ["pending", "running", "waiting", "suspended",
                                             "interrupted", "succeeded", "failed",
                                             "cancelled", "timed_out"]},
    "RunCreate": {
        "type": "object", "required": ["task"], "description": "null is the same as absent",
        "properties": {
            "task": {"type": "string", "pattern": "[^ \t\n\r]",
                     "description": "not empty nor only spaces, tabs and line breaks"},
            "agent": {"type": ["string", "null"],
                      "description": "default: main (or the first agent)"},
            "workflow": {"type": ["string", "null"], "description": "run this workflow of the "
                         "configuration (workflows:) instead of an agent; not with 'agent'"},
            "wait": {"type": ["boolean", "null"], "description": "wait (at most 60 s) until "
                     "the run ended or waits for a person"},
            "priority": {"type": ["integer", "null"], "minimum": -2147483647,
                         "maximum": 2147483647}},
    },
    "Run": {
        "type": "object", "description": "agentloom runs show --json, without operations",
        "required": ["run_id", "status", "agent", "task", "output", "error", "diagnosis",
                     "created_at", "updated_at", "actor", "project"],
        "properties": {
            "run_id": {"type": "string"}, "status": {"$ref": "#/components/schemas/RunStatus"},
            "agent": _NULL_STR, "task": _NULL_STR, "session_id": _NULL_STR,
            "release_id": _NULL_STR, "sandbox_backend": _NULL_STR,
            "created_at": {"type": "number"}, "updated_at": {"type": "number"},
            "lease_epoch": {"type": "integer"}, "lease_owner": _NULL_STR,
            "lease_expires_at": _NULL_NUM, "output": _ANY,
            "error": {"type": ["object", "null"]}, "failures": {"type": ["object", "null"]},
            "steps": {"type": ["integer", "null"]},
            "usage": {"type": "object"}, "duration_s": _NULL_NUM,
            "warnings": {"type": "array", "items": {"type": "object"}},
            "cleanup": {"type": ["object", "null"]},
            "diagnosis": {"type": ["object", "null"]},
            "route": {"type": ["object", "null"], "description": "the model route of the "
                      "run's project, taken when it was queued (endpoints, key variables and "
                      "model ids per agent; never a key); null: the release's connections"},
            "workflow": {"type": "string", "description": "a workflow run only: its workflow"},
            "current": {"type": "array", "items": {"type": "string"},
                        "description": "a workflow run only: the nodes running or waiting"},
            "nodes": {"type": "array", "items": {"$ref": "#/components/schemas/WorkflowNode"},
                      "description": "a workflow run only: its graph state, one entry per "
                      "node in definition order (docs/workflows.md)"},
            "edges": {"type": "array", "items": {"type": "object"},
                      "description": "a workflow run only: its edges as defined"},
            "actor": {"type": "string"}, "project": {"type": "string"}},
    },
    "WorkflowNode": {
        "type": "object",
        "required": ["node", "kind", "status", "output", "error", "attempts", "call_id",
                     "operation_id", "unknown", "history"],
        "properties": {
            "node": {"type": "string"},
            "kind": {"type": "string", "enum": ["agent", "capability", "wait"]},
            "status": {"type": "string", "enum": ["pending", "running", "waiting", "succeeded",
                                                  "failed"]},
            "output": _NULL_STR, "error": {"type": ["object", "null"]},
            "attempts": {"type": "integer", "minimum": 0}, "call_id": _NULL_STR,
            "operation_id": _NULL_STR,
            "unknown": {"type": "array", "items": {"type": "object"},
                        "description": "calls whose effect is not known"},
            "history": {"type": "array", "items": {"type": "object"}}},
    },
    "RunSummary": {
        "type": "object",
        "required": ["run_id", "status", "agent", "created_at", "updated_at", "task", "output"],
        "properties": {"run_id": {"type": "string"},
                       "status": {"$ref": "#/components/schemas/RunStatus"},
                       "agent": _NULL_STR, "created_at": {"type": "number"},
                       "updated_at": {"type": "number"}, "task": {"type": "string"},
                       "output": _ANY},
    },
    "RunList": {
        "type": "object", "required": ["items", "next_cursor"],
        "properties": {"items": {"type": "array",
                                 "items": {"$ref": "#/components/schemas/RunSummary"}},
                       "next_cursor": {**_NULL_STR, "description": "null on the last page"}},
    },
    "Operation": {
        "type": "object", "description": "one operation as agentloom runs show --json gives it",
        "required": ["operation_id", "capability", "kind", "phase", "status", "attempts",
                     "hooks", "proposed_arguments", "executed_arguments", "raw_result",
                     "effective_result", "arguments_changed", "result_changed"],
        "properties": {
            "operation_id": {"type": "string"}, "capability": {"type": "string"},
            "kind": {"enum": ["model", "tool", "delegation"]}, "phase": {"type": "string"},
            "status": {"enum": ["running", "succeeded", "failed", "denied", "unknown",
                                "cancelled"]},
            "outcome": _NULL_STR,
            "attempts": {"type": "object", "required": ["count", "items"],
                         "properties": {"count": {"type": "integer"},
                                        "items": {"type": "array"}}},
            "hooks": {"type": "array", "items": {"type": "object"}},
            "proposed_arguments": {"type": "object"},
            "executed_arguments": {"type": ["object", "null"]},
            "arguments_changed": {"type": "boolean"},
            "raw_result": _NULL_STR, "effective_result": _NULL_STR,
            "result_changed": {"type": "boolean"}},
    },
    "OperationList": {
        "type": "object", "required": ["run_id", "items"],
        "properties": {"run_id": {"type": "string"},
                       "items": {"type": "array",
                                 "items": {"$ref": "#/components/schemas/Operation"}}},
    },
    "Control": {
        "type": "object", "required": ["run_id", "status"],
        "properties": {"run_id": {"type": "string"},
                       "status": {"$ref": "#/components/schemas/RunStatus"}},
    },
    "Stop": {"type": "object", "properties": {"reason": _NULL_STR}},
    "Supplement": {"type": "object", "required": ["text"],
                   "properties": {"text": {"type": "string"}}},
    "Answer": {"type": "object", "properties": {"reason": _NULL_STR}},
    "Answered": {
        "type": "object",
        "required": ["run_id", "operation_id", "status", "answer", "actor", "run_status"],
        "properties": {"run_id": {"type": "string"}, "operation_id": {"type": "string"},
                       "status": {"enum": ["approved", "rejected", "expired"]},
                       "answer": {"enum": ["approve", "deny", None]},
                       "reason": _NULL_STR, "actor": _NULL_STR, "answered_at": _NULL_NUM,
                       "run_status": {"$ref": "#/components/schemas/RunStatus"}},
    },
    "WorkspaceListing": {
        "type": "object", "required": ["run_id", "files"],
        "properties": {"run_id": {"type": "string"}, "files": {"type": "array", "items": {
            "type": "object", "required": ["path", "size", "modified_at"],
            "properties": {"path": {"type": "string"}, "size": {"type": "integer"},
                           "modified_at": {"type": "number"}}}}},
    },
    "RunEvent": {
        "type": "object", "description": "one SSE data line (agentloom runs events --json)",
        "required": ["type", "run_id", "at"],
        "properties": {"type": {"type": "string"}, "run_id": {"type": "string"},
                       "at": {"type": "number"}},
    },
    "Sse": {
        "type": "object", "description": "one Server-Sent Event of a run's stream",
        "required": ["id", "event", "data"],
        "properties": {"id": {"type": "string", "pattern": "^[1-9][0-9]*$",
                              "description": "its position in the run's events"},
                       "event": {"type": "string", "description": "the RunEvent's type"},
                       "data": {"type": "string", "contentMediaType": "application/json",
                                "contentSchema": {"$ref": "#/components/schemas/RunEvent"}}},
    },
    "Receipt": {
        "type": "object", "description": "agentloom commands receipt --json",
        "required": ["state", "operation_id", "command", "result", "reason", "error",
                     "actor", "project", "params", "created_at", "updated_at"],
        "properties": {
            "state": {"enum": ["rejected", "accepted", "committed", "unknown"]},
            "operation_id": {"type": "string"}, "command": {"type": "string"},
            "result": _ANY, "reason": _NULL_STR, "error": {"type": ["object", "null"]},
            "pipeline_operation_id": _NULL_STR, "actor": {"type": "string"},
            "project": {"type": "string"}, "params": {"type": "object"},
            "created_at": {"type": "number"}, "updated_at": {"type": "number"},
            "confirmation": {"type": "string"}},
    },
    "Health": {"type": "object", "required": ["status"],
               "properties": {"status": {"enum": ["ok", "ready"]},
                              "worker": {"type": ["object", "null"],
                                         "required": ["driver", "running"],
                                         "properties": {
                                             "driver": {"enum": ["process", "in_process"]},
                                             "running": {"type": "boolean"},
                                             "pid": {"type": ["integer", "null"]},
                                             "started": {"type": "integer"},
                                             "last_exit": _NULL_STR,
                                             "next_start_in_s": {"type": ["number", "null"]}}}}},
}


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {
        "schema": {"$ref": "#/components/schemas/Problem"}}}}


def _json(schema: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _body(schema: str, *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _run_create(agents: list[str] | None, workflows: list[str] | None) -> dict[str, Any]:
    """``RunCreate``, its ``agent`` one of ``agents`` and its ``workflow`` one of
    ``workflows`` (the served configuration's) if given."""
    if agents is None and workflows is None:
        return _body("RunCreate")
    schema = copy.deepcopy(SCHEMAS["RunCreate"])
    if agents is not None:
        schema["properties"]["agent"]["enum"] = [*agents, None]
    if workflows is not None:
        schema["properties"]["workflow"]["enum"] = [*workflows, None]
    return {"required": True, "content": {"application/json": {"schema": schema}}}


_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_OP_ID = {"name": "operation_id", "in": "path", "required": True, "schema": {"type": "string"}}
_AUTH_FAILS = {"401": _problem("no valid API key"),
               "404": _problem("no such run — or another owner's (the same answer)"),
               "500": _problem("an unexpected failure (logged; no internals)")}


def _op(summary: str, ok: dict[str, Any], *, status: str = "200", params: tuple[Any, ...] = (),
        body: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
        op_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op_id, "summary": summary, "parameters": list(params),
                           "responses": {status: ok, **_AUTH_FAILS, **(extra or {})}}
    if body is not None:
        out["requestBody"] = body
    return out


def _paths(agents: list[str] | None, workflows: list[str] | None) -> dict[str, Any]:
    conflict = {"409": _problem("the run's state does not allow it (the code says why)"),
                "400": _problem("a bad request body (the detail names the field)")}
    answer_extra = {"409": _problem("APPROVAL_ALREADY_ANSWERED, …"),
                    "400": _problem("a bad request body")}
    return {
        "/v1/runs": {
            "post": _op("Create a run for the key's principal", _json("Run", "the run"),
                        status="201", body=_run_create(agents, workflows), op_id="createRun",
                        extra={"400": _problem("a bad request (the detail names the field)")}),
            "get": _op("List the principal's runs, newest first", _json("RunList", "a page"),
                       op_id="listRuns", params=(
                           {"name": "status", "in": "query", "description": "a stored "
                            "status (an interrupted run is a running one whose lease expired)",
                            "schema": {"enum": sorted(get_args(RunStatus))}},
                           {"name": "agent", "in": "query", "schema": {"type": "string"}},
                           {"name": "limit", "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                           {"name": "cursor", "in": "query", "description": "next_cursor "
                            "of the previous page, as it is (absent or empty: the first page)",
                            "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]*$"}}),
                       extra={"400": _problem("a bad filter or cursor")}),
        },
        "/v1/runs/{run_id}": {"get": _op("One run", _json("Run", "the run"), params=(_RUN_ID,),
                                         op_id="getRun")},
        "/v1/runs/{run_id}/operations": {"get": _op(
            "The run's operations (proposed vs executed arguments, raw vs effective results, "
            "hooks, attempts)", _json("OperationList", "the operations, oldest first"),
            params=(_RUN_ID,), op_id="listOperations")},
        "/v1/runs/{run_id}/stop": {"post": _op(
            "Stop the run", _json("Control", "the stop was recorded"), status="202",
            params=(_RUN_ID,), body=_body("Stop", required=False), extra=conflict,
            op_id="stopRun")},
        "/v1/runs/{run_id}/supplement": {"post": _op(
            "Add input for the root's next turn", _json("Control", "recorded"), status="202",
            params=(_RUN_ID,), body=_body("Supplement"), extra=conflict,
            op_id="supplementRun")},
        "/v1/runs/{run_id}/resume": {"post": _op(
            "Hand the run back to the queue (a worker goes on with it)", _json("Control", "it is queued"),
            status="202", params=(_RUN_ID,), extra=conflict, op_id="resumeRun")},
        "/v1/runs/{run_id}/operations/{operation_id}/approve": {"post": _op(
            "Approve a call a hook asked a person about", _json("Answered", "answered"),
            params=(_RUN_ID, _OP_ID), body=_body("Answer", required=False),
            extra=answer_extra, op_id="approveOperation")},
        "/v1/runs/{run_id}/operations/{operation_id}/reject": {"post": _op(
            "Reject a call a hook asked a person about", _json("Answered", "answered"),
            params=(_RUN_ID, _OP_ID), body=_body("Answer", required=False),
            extra=answer_extra, op_id="rejectOperation")},
        "/v1/runs/{run_id}/events": {"get": _op(
            "The run's low-frequency events as Server-Sent Events (id = position; honours "
            "Last-Event-ID; ends with run.finished)",
            {"description": "an event stream (the schema is one event's, as OpenAPI 3.2 "
             "itemSchema: its id, event and JSON data)",
             "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/Sse"}}}},
            params=(_RUN_ID, {"name": "Last-Event-ID", "in": "header",
                              "description": "the id of the last event received (empty: "
                              "from the start)", "schema": {"type": "string",
                                                            "pattern": "^[0-9]{0,18}$"}}),
            extra={"400": _problem("a bad Last-Event-ID")}, op_id="runEvents")},
        "/v1/runs/{run_id}/workspace": {"get": _op(
            "The files of the run's workspace", _json("WorkspaceListing", "relative paths"),
            params=(_RUN_ID,), op_id="listWorkspace")},
        "/v1/runs/{run_id}/workspace/{path}": {"get": _op(
            "One file of the run's workspace (beneath its root only)",
            {"description": "the file's bytes", "content": {"application/octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}},
            params=(_RUN_ID, {"name": "path", "in": "path", "required": True,
                              "description": "relative to the workspace root",
                              "schema": {"type": "string", "minLength": 1}}),
            extra={"400": _problem("a malformed path (INVALID_PATH, NAME_TOO_LONG, …)"),
                   "404": _problem("no such run, or no regular file there beneath the root "
                                   "(missing, a folder, a symlink, outside it, reserved)"),
                   "413": _problem("a file too large to serve")}, op_id="readWorkspaceFile")},
        "/v1/commands/{operation_id}/receipt": {"get": _op(
            "A command's receipt (an unknown one reconciled first, never run again)",
            _json("Receipt", "the receipt"), params=(_OP_ID,), op_id="getCommandReceipt",
            extra={"404": _problem("no such receipt — or another owner's (the same answer)")})},
        "/health": {"get": {"operationId": "health", "summary": "The process is up",
                            "security": [], "responses": {"200": _json("Health", "up")}}},
        "/ready": {"get": {"operationId": "ready",
                           "summary": "The store answers and the runs' driver can drive them",
                           "security": [], "responses": {
                               "200": _json("Health", "ready (and the driver's state, if "
                                                      "this process drives runs)"),
                               "503": _problem("the store does not answer "
                                               "(STORE_UNAVAILABLE), or the worker process "
                                               "is down (WORKER_UNAVAILABLE)")}}},
    }


def _with_body_limit(paths: dict[str, Any]) -> dict[str, Any]:
    """Every POST may be refused for its body's size (``host.limits``)."""
    for item in paths.values():
        if "post" in item:
            item["post"]["responses"]["413"] = _problem(
                "a request body over the server's limit (BODY_TOO_LARGE; agentloom serve "
                "--max-body-bytes, default 8 MiB)")
    return paths


def openapi_document(version: str, *, agents: list[str] | None = None,
                     workflows: list[str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the host at package ``version``; ``agents`` /
    ``workflows``: the names a run may be created for (the served configuration's; any string
    when not given)."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "AgentLoom host", "version": version,
                 "description": "Runs for an authenticated principal (an actor in a project)."
                 " Errors are RFC 9457 problem details with the CLI's error codes."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"bearer": []}],
        "paths": _with_body_limit(_paths(agents, workflows)),
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "agentloom keys create prints one"}},
        },
    }
