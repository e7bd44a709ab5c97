"""The host's contract: one OpenAPI 3.1 document (``GET /openapi.json``), generated from the
shapes the routes validate with (``host.shapes``) and a small table of routes (``ROUTES``):
every route, its parameters, request and response schemas (JSON Schema 2020-12), the bearer
security scheme and the problem responses. The tests validate real responses against it, and
docs/api.md is rendered from it (``host.apidoc``).

::

    RouteDoc(method="post", path=RUN + "/stop", body=Stop, answer=Control, status="202", ...)
      -> paths["/v1/runs/{run_id}/stop"]["post"]: requestBody a $ref to Stop (its schema
         generated from ``shapes.Stop``), 202 a $ref to Control, 401/404/500 (every /v1
         route), its own problems, 413 (every POST)

Owns: the document and the route table. Does not own the routes (``host.app``: a route served
without its entry here fails the contract test) nor the shapes (``host.shapes``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from agentloom.host import shapes
from agentloom.host.shapes import (
    REF,
    Answer,
    Answered,
    Control,
    Fork,
    Health,
    OperationList,
    Receipt,
    RequestBody,
    ResponseBody,
    Run,
    RunCreate,
    RunList,
    Stop,
    Supplement,
    WorkspaceListing,
)
from agentloom.results import RunStatus as StoredStatus

__all__ = ["ROUTES", "RouteDoc", "component_schemas", "openapi_document"]


class _Schemas(GenerateJsonSchema):
    """pydantic's JSON Schema, written as a person would: ``{"type": ["string", "null"]}`` for a
    nullable scalar (not an ``anyOf``), no titles (the component's name is one), no defaults
    (null is absent), no ``additionalProperties: true`` (the default)."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        kind = inner.get("type")
        if not isinstance(kind, str) or "$ref" in inner:
            return super().nullable_schema(schema)
        out = {**inner, "type": [kind, "null"]}
        if "enum" in inner:
            out["enum"] = [*inner["enum"], None]
        return out

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        out = super().model_schema(schema)
        out.pop("title", None)  # the component's name says it
        return out

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        out = super().dict_schema(schema)
        if out.get("additionalProperties") is True:  # any object: JSON Schema's default
            del out["additionalProperties"]
        return out


def component_schemas() -> dict[str, Any]:
    """``components.schemas``: every request and response shape (``host.shapes``) and the
    ``RunStatus`` they refer to."""
    pairs: list[tuple[type[RequestBody] | type[ResponseBody],
                      Literal["validation", "serialization"]]] = [
        *((m, "validation") for m in shapes.REQUESTS),
        *((m, "serialization") for m in shapes.RESPONSES)]
    _, found = models_json_schema(pairs, ref_template=REF, schema_generator=_Schemas)
    return dict(sorted(found["$defs"].items()))


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {
        "schema": {"$ref": REF.format(model="Problem")}}}}


def _json(model: type[ResponseBody], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {
        "schema": {"$ref": REF.format(model=model.__name__)}}}}


RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
OP_ID = {"name": "operation_id", "in": "path", "required": True, "schema": {"type": "string"}}
AUTH_FAILS = {"401": "no valid API key",
              "404": "no such run — or another owner's (the same answer)",
              "500": "an unexpected failure (logged; no internals)"}
BODY_TOO_LARGE = ("a request body over the server's limit (BODY_TOO_LARGE; agentloom serve "
                  "--max-body-bytes, default 8 MiB)")
CONFLICT = {"409": "the run's state does not allow it (the code says why)",
            "400": "a bad request body (the detail names the field)"}
ANSWER_FAILS = {"409": "APPROVAL_ALREADY_ANSWERED, …", "400": "a bad request body"}


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteDoc:
    """One operation of the document. ``answer`` (JSON) and / or ``content`` (anything else) is
    its success response's body; ``body`` the request shape the route parses (``shapes.parse``);
    ``problems``: status → description, over the ``AUTH_FAILS`` every ``/v1`` route has
    (``public``: no key, none of them); every POST may also be a 413 (``host.limits``)."""

    method: Literal["get", "post"]
    path: str
    op_id: str
    summary: str
    ok: str
    answer: type[ResponseBody] | None = None
    content: Mapping[str, Any] | None = None
    status: str = "200"
    params: tuple[Mapping[str, Any], ...] = ()
    body: type[RequestBody] | None = None
    body_required: bool = True
    problems: Mapping[str, str] = field(default_factory=dict)
    public: bool = False

    def operation(self, request_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        """The document's operation; ``request_schema``: the body's schema (a ``$ref`` to the
        shape unless given)."""
        ok: dict[str, Any] = _json(self.answer, self.ok) if self.answer is not None \
            else {"description": self.ok, "content": {}}
        ok["content"].update(self.content or {})  # beside the JSON answer, if any
        fails = {**({} if self.public else AUTH_FAILS), **self.problems}
        if self.method == "post":
            fails["413"] = BODY_TOO_LARGE
        out: dict[str, Any] = {"operationId": self.op_id, "summary": self.summary}
        if self.public:
            out["security"] = []
        else:
            out["parameters"] = [dict(p) for p in self.params]
        out["responses"] = {self.status: ok, **{s: _problem(d) for s, d in fails.items()}}
        if self.body is not None:
            schema = request_schema or {"$ref": REF.format(model=self.body.__name__)}
            out["requestBody"] = {"required": self.body_required,
                                  "content": {"application/json": {"schema": schema}}}
        return out


RUN = "/v1/runs/{run_id}"
ROUTES: tuple[RouteDoc, ...] = (
    RouteDoc(method="post", path="/v1/runs", op_id="createRun",
             summary="Create a run for the key's principal", ok="the run (with \"stream\": "
             "true, its events as Server-Sent Events, model.delta included, until it ends)",
             answer=Run, content={"text/event-stream": {"schema": {"$ref": REF.format(
                 model="Sse")}}}, status="201", body=RunCreate,
             problems={"400": "a bad request (the detail names the field)",
                       "409": "STREAM_UNAVAILABLE: \"stream\" on a host that drives no runs"}),
    RouteDoc(method="get", path="/v1/runs", op_id="listRuns",
             summary="List the principal's runs, newest first", ok="a page", answer=RunList,
             params=({"name": "status", "in": "query", "description": "a stored status (an "
                      "interrupted run is a running one whose lease expired)",
                      "schema": {"enum": sorted(get_args(StoredStatus))}},
                     {"name": "agent", "in": "query", "schema": {"type": "string"}},
                     {"name": "limit", "in": "query",
                      "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                     {"name": "cursor", "in": "query", "description": "next_cursor of the "
                      "previous page, as it is (absent or empty: the first page)",
                      "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]*$"}}),
             problems={"400": "a bad filter or cursor"}),
    RouteDoc(method="get", path=RUN, op_id="getRun", summary="One run", ok="the run",
             answer=Run, params=(RUN_ID,)),
    RouteDoc(method="get", path=RUN + "/operations", op_id="listOperations",
             summary="The run's operations (proposed vs executed arguments, raw vs effective "
             "results, hooks, attempts)", ok="the operations, oldest first",
             answer=OperationList, params=(RUN_ID,)),
    RouteDoc(method="post", path=RUN + "/stop", op_id="stopRun", summary="Stop the run",
             ok="the stop was recorded", answer=Control, status="202", params=(RUN_ID,),
             body=Stop, body_required=False, problems=CONFLICT),
    RouteDoc(method="post", path=RUN + "/supplement", op_id="supplementRun",
             summary="Add input for the root's next turn", ok="recorded", answer=Control,
             status="202", params=(RUN_ID,), body=Supplement, problems=CONFLICT),
    RouteDoc(method="post", path=RUN + "/resume", op_id="resumeRun",
             summary="Hand the run back to the queue (a worker goes on with it)",
             ok="it is queued", answer=Control, status="202", params=(RUN_ID,),
             problems=CONFLICT),
    RouteDoc(method="post", path=RUN + "/fork", op_id="forkRun",
             summary="Start a new run from one of the run's calls (docs/replay.md)",
             ok="the fork, queued", answer=Run, status="201", params=(RUN_ID,), body=Fork,
             problems={"400": "a bad request body (the detail names the field)",
                       "404": "no such run — or another owner's — or OPERATION_NOT_FOUND: "
                       "'at' is no operation of the run",
                       "409": "FORK_POINT_INVALID ('at' is not a model or tool call of the "
                       "run's own agent) or FORK_FILES_UNAVAILABLE"}),
    RouteDoc(method="post", path=RUN + "/operations/{operation_id}/approve",
             op_id="approveOperation", summary="Approve a call a hook asked a person about",
             ok="answered", answer=Answered, params=(RUN_ID, OP_ID), body=Answer,
             body_required=False, problems=ANSWER_FAILS),
    RouteDoc(method="post", path=RUN + "/operations/{operation_id}/reject",
             op_id="rejectOperation", summary="Reject a call a hook asked a person about",
             ok="answered", answer=Answered, params=(RUN_ID, OP_ID), body=Answer,
             body_required=False, problems=ANSWER_FAILS),
    RouteDoc(method="get", path=RUN + "/events", op_id="runEvents",
             summary="The run's low-frequency events as Server-Sent Events (id = position; "
             "honours Last-Event-ID; ends with run.finished)",
             ok="an event stream (the schema is one event's, as OpenAPI 3.2 itemSchema: its "
             "id, event and JSON data)",
             content={"text/event-stream": {"schema": {"$ref": REF.format(model="Sse")}}},
             params=(RUN_ID, {"name": "Last-Event-ID", "in": "header", "description": "the id "
                              "of the last event received (empty: from the start)",
                              "schema": {"type": "string", "pattern": "^[0-9]{0,18}$"}}),
             problems={"400": "a bad Last-Event-ID"}),
    RouteDoc(method="get", path=RUN + "/workspace", op_id="listWorkspace",
             summary="The files of the run's workspace", ok="relative paths",
             answer=WorkspaceListing, params=(RUN_ID,)),
    RouteDoc(method="get", path=RUN + "/workspace/{path}", op_id="readWorkspaceFile",
             summary="One file of the run's workspace (beneath its root only)",
             ok="the file's bytes", content={"application/octet-stream": {
                 "schema": {"type": "string", "format": "binary"}}},
             params=(RUN_ID, {"name": "path", "in": "path", "required": True,
                              "description": "relative to the workspace root",
                              "schema": {"type": "string", "minLength": 1}}),
             problems={"400": "a malformed path (INVALID_PATH, NAME_TOO_LONG, …)",
                       "404": "no such run, or no regular file there beneath the root "
                              "(missing, a folder, a symlink, outside it, reserved)",
                       "413": "a file too large to serve"}),
    RouteDoc(method="get", path="/v1/commands/{operation_id}/receipt", op_id="getCommandReceipt",
             summary="A command's receipt (an unknown one reconciled first, never run again)",
             ok="the receipt", answer=Receipt, params=(OP_ID,),
             problems={"404": "no such receipt — or another owner's (the same answer)"}),
    RouteDoc(method="get", path="/health", op_id="health", summary="The process is up", ok="up",
             answer=Health, public=True),
    RouteDoc(method="get", path="/ready", op_id="ready",
             summary="The store answers and the runs' driver can drive them",
             ok="ready (and the driver's state, if this process drives runs)", answer=Health,
             public=True,
             problems={"503": "the store does not answer (STORE_UNAVAILABLE), or the worker "
                              "process is down (WORKER_UNAVAILABLE)"}),
)


def _run_create(schemas: Mapping[str, Any], agents: list[str] | None,
                workflows: list[str] | None) -> dict[str, Any] | None:
    """``RunCreate``'s schema, its ``agent`` one of ``agents`` and its ``workflow`` one of
    ``workflows`` (the served configuration's) if given; None (the plain ``$ref``) else."""
    if agents is None and workflows is None:
        return None
    schema = copy.deepcopy(schemas[RunCreate.__name__])
    if agents is not None:
        schema["properties"]["agent"]["enum"] = [*agents, None]
    if workflows is not None:
        schema["properties"]["workflow"]["enum"] = [*workflows, None]
    return dict(schema)


def openapi_document(version: str, *, agents: list[str] | None = None,
                     workflows: list[str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the host at package ``version``; ``agents`` /
    ``workflows``: the names a run may be created for (the served configuration's; any string
    when not given)."""
    schemas = component_schemas()
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        inline = _run_create(schemas, agents, workflows) if route.body is RunCreate else None
        paths.setdefault(route.path, {})[route.method] = route.operation(inline)
    return {
        "openapi": "3.1.0",
        "info": {"title": "AgentLoom host", "version": version,
                 "description": "Runs for an authenticated principal (an actor in a project)."
                 " Errors are RFC 9457 problem details with the CLI's error codes."},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "agentloom keys create prints one"}},
        },
    }
