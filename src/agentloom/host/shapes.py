"""The host's HTTP shapes, written once: every ``/v1`` request body and response body as a pydantic
model. The routes validate request bodies with these models (``parse``) and the OpenAPI document's
schemas are generated from them (``host.openapi``), so the two cannot drift apart.

::

    body = parse(RunCreate, await json_body(request))   # a 400 INVALID_REQUEST problem, or the model
    body.task, body.agent, body.priority                  # null is the same as absent

Request bodies (``RequestBody`` subclasses) are parsed strictly, as JSON Schema reads the document: a
string is never a number, a boolean is never an integer, an integral number (``102.0``) is an
integer; unknown fields are ignored. A refusal names the first wrong field in the model's field
order, phrased as the host always has (``the body needs the field 'task'``, ``the field 'wait'
must be true or false, got "yes"``); a constraint's refusal is the model's ``refusals`` entry.

Response bodies (``ResponseBody`` subclasses) only describe: the routes build plain dicts (the views
of ``agent.views`` that ``agentloom runs show --json`` prints) and the contract tests check each
real answer against the schema generated from these. A key an answer may leave out is
``absent()``; a key that is always there but may be null has ``| None`` and no default.

Owns: the shapes, their field descriptions, ``parse`` and the refusal messages. Does not own the
routes, the document's paths and operations (``host.openapi``) nor reading a body as JSON
(``host.access.json_body``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError
from pydantic_core import ErrorDetails

from agentloom.host import problems

__all__ = ["REQUESTS", "RESPONSES", "Answer", "Answered", "Approval", "Attempts", "Control", "Health",
           "Operation", "OperationList", "Problem", "Receipt", "RequestBody", "ResponseBody",
           "Run", "RunCreate", "RunEvent", "RunList", "RunStatus", "RunSummary", "Sse", "Stop",
           "Supplement", "WorkerState", "WorkflowNode", "WorkspaceFile", "WorkspaceListing",
           "absent", "parse", "refusal"]

REF = "#/components/schemas/{model}"  # where the document keeps a shape's schema
PRIORITY_BOUND = 2**31 - 1  # the store's integer column
NOT_BLANK = "[^ \t\n\r]"  # a task is not only spaces, tabs and line breaks (JSON Schema: a search)


def _integral(value: Any) -> Any:
    """JSON Schema's integer: ``102.0`` is one (``1.5``, ``true`` and ``"1"`` are not)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def absent(description: str | None = None) -> Any:
    """A key an answer may leave out (not ``required`` in the schema); never null unless its
    type says so."""
    return Field(default=None, description=description)


# ---- request bodies --------------------------------------------------------------------------


class RequestBody(BaseModel):
    """A request body: strict JSON types, unknown fields ignored, null the same as absent
    (``parse`` drops null fields first). ``refusals``: field → how its constraint refuses a
    value (after ``the field 'NAME' ``; ``{input}`` is the value given)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="ignore")
    refusals: ClassVar[Mapping[str, str]] = {}


class RunCreate(RequestBody):
    """null is the same as absent"""

    task: str = Field(pattern=NOT_BLANK,
                      description="not empty nor only spaces, tabs and line breaks")
    agent: str | None = Field(None, description="default: main (or the first agent)")
    workflow: str | None = Field(None, description="run this workflow of the configuration "
                                 "(workflows:) instead of an agent; not with 'agent'")
    wait: bool | None = Field(None, description="wait (at most 60 s) until the run ended or "
                              "waits for a person")
    stream: bool | None = Field(None, description="drive the run in this process now and answer "
                                "with its events as Server-Sent Events, the model's text and "
                                "reasoning as model.delta events included, until it ends; not "
                                "with 'wait'")
    priority: Annotated[int, Strict(), Field(ge=-PRIORITY_BOUND, le=PRIORITY_BOUND),
                        BeforeValidator(_integral)] | None = None

    refusals: ClassVar[Mapping[str, str]] = {
        "task": "must not be empty nor only spaces, tabs and line breaks",
        "priority": f"must be from {-PRIORITY_BOUND} to {PRIORITY_BOUND}, got {{input}}"}


class Stop(RequestBody):
    reason: str | None = None


class Supplement(RequestBody):
    text: str


class Answer(RequestBody):
    reason: str | None = None


class Fork(RequestBody):
    """null is the same as absent"""

    at: str = Field(description="the operation to fork at: a model or tool call of the run's "
                    "own agent (GET /v1/runs/{run_id}/operations); the fork's history stops "
                    "before it")
    message: str | None = Field(None, pattern=NOT_BLANK, description="a new user message "
                                "after the history")

    refusals: ClassVar[Mapping[str, str]] = {
        "message": "must not be empty nor only spaces, tabs and line breaks"}


REQUESTS: tuple[type[RequestBody], ...] = (RunCreate, Stop, Supplement, Answer, Fork)

B = TypeVar("B", bound=RequestBody)
_EXPECTED = {"string_type": "a string", "int_type": "an integer", "int_from_float": "an integer",
             "bool_type": "true or false", "float_type": "a number"}


def parse(model: type[B], body: Mapping[str, Any]) -> B:
    """``body`` (a JSON object: ``access.json_body``) as a ``model``; a null field is absent.

    Raises:
        problems.Problem: 400 ``INVALID_REQUEST`` naming the first wrong or missing field.
    """
    try:
        return model.model_validate({k: v for k, v in body.items() if v is not None})
    except ValidationError as exc:
        detail = refusal(model, exc.errors(include_url=False)[0])
        raise problems.Problem(400, "INVALID_REQUEST", detail) from None


def refusal(model: type[RequestBody], error: ErrorDetails) -> str:
    """What the host answers for one of ``model``'s validation errors."""
    name = str(error["loc"][0]) if error["loc"] else "(the body)"
    kind = error["type"]
    if kind == "missing":
        return f"the body needs the field {name!r}"
    if kind in _EXPECTED:
        return f"the field {name!r} must be {_EXPECTED[kind]}, got {json.dumps(error['input'])[:80]}"
    if name in model.refusals:
        return f"the field {name!r} " + model.refusals[name].format(input=error["input"])
    return f"the field {name!r} is not valid: {error['msg']}"


# ---- response bodies -------------------------------------------------------------------------


class ResponseBody(BaseModel):
    """A response body: described, not built (the routes answer plain dicts)."""

    model_config = ConfigDict(frozen=True)


class RunStatus(StrEnum):
    """A run's status as shown: a stored one (``results.RunStatus``) or ``interrupted`` (a
    running run whose lease expired)."""

    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    SUSPENDED = "suspended"
    INTERRUPTED = "interrupted"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"


_Object = dict[str, Any]


class Problem(ResponseBody):
    """RFC 9457 problem details; code is the CLI's error code."""

    type: str
    title: str
    status: int
    detail: str
    code: str = Field(pattern="^[A-Z][A-Z0-9_]*$")


class WorkflowNode(ResponseBody):
    node: str
    kind: Literal["agent", "capability", "wait"]
    status: Literal["pending", "running", "waiting", "succeeded", "failed"]
    output: str | None
    error: _Object | None
    attempts: int = Field(ge=0)
    call_id: str | None
    operation_id: str | None
    unknown: list[_Object] = Field(description="calls whose effect is not known")
    history: list[_Object]


class ForkedFrom(ResponseBody):
    """the run and call a fork was forked from (docs/replay.md)"""

    run_id: str
    operation_id: str
    turn: int = Field(description="the origin's model turn the fork starts at")
    release_id: str | None = Field(description="the origin's release")
    release_changed: bool = Field(description="the fork runs under another release")


class Run(ResponseBody):
    """agentloom runs show --json, without operations"""

    run_id: str
    status: RunStatus
    agent: str | None
    task: str | None
    session_id: str | None = absent()
    release_id: str | None = absent()
    sandbox_backend: str | None = absent()
    created_at: float
    updated_at: float
    lease_epoch: int = absent()
    lease_owner: str | None = absent()
    lease_expires_at: float | None = absent()
    output: Any
    error: _Object | None
    failures: _Object | None = absent()
    steps: int | None = absent()
    usage: _Object = absent()
    duration_s: float | None = absent()
    warnings: list[_Object] = absent()
    cleanup: _Object | None = absent()
    diagnosis: _Object | None
    route: _Object | None = absent(
        "the model route of the run's project, taken when it was queued (endpoints, key "
        "variables and model ids per agent; never a key); null: the release's connections")
    workflow: str = absent("a workflow run only: its workflow")
    current: list[str] = absent("a workflow run only: the nodes running or waiting")
    nodes: list[WorkflowNode] = absent("a workflow run only: its graph state, one entry per "
                                       "node in definition order (docs/workflows.md)")
    edges: list[_Object] = absent("a workflow run only: its edges as defined")
    forked_from: ForkedFrom | None = absent("a fork only (POST /v1/runs/{run_id}/fork): "
                                            "the run and call it was forked from")
    files: str | None = absent("a fork only: where its files came from (restored from the "
                               "record, or copied from the origin's kept folder)")
    actor: str
    project: str


class RunSummary(ResponseBody):
    run_id: str
    status: RunStatus
    agent: str | None
    created_at: float
    updated_at: float
    task: str
    output: Any


class RunList(ResponseBody):
    items: list[RunSummary]
    next_cursor: str | None = Field(description="null on the last page")


class Attempts(ResponseBody):
    """an operation's attempts: how many, and each as runs show --json gives it"""

    count: int
    items: list[Any]


class Approval(ResponseBody):
    """the approval of a call a hook asked a person about, and its answer"""

    approval_id: str = Field(description="the call's operation id (one approval per call)")
    status: Literal["pending", "approved", "rejected", "expired"]
    decision: Literal["approve", "deny"] | None = Field(
        description="what applies to the call (the default once expired); null while pending")
    actor: str | None = Field(description="who answered: the API key's actor over HTTP, "
                              "cli:<user> or the --as name on the CLI; null while pending or "
                              "expired")
    reason: str | None
    answered_at: float | None
    question: str
    asked_by: list[str]
    asked_at: float
    deadline: float | None
    default: Literal["approve", "deny"]
    summary: str = Field(description="one line: approved by alice at … (reason: …)")


class NodeOfCall(ResponseBody):
    """the workflow node a call was made for"""

    workflow_run_id: str
    name: str = Field(description="the node's name in its workflow")
    attempt: int = Field(description="the node's activation, from 1")


class Operation(ResponseBody):
    """one operation as agentloom runs show --json gives it"""

    operation_id: str
    capability: str
    kind: Literal["model", "tool", "delegation"]
    node: NodeOfCall | None = Field(description="the workflow node the call was made for (its "
                                    "agent's model and tool calls too); null for a call made "
                                    "for no node")
    node_task_id: str | None = Field(description="the call context's node_task_id: "
                                     "<workflow run>/n/<node>/<attempt>; null without a node")
    phase: str
    status: Literal["running", "succeeded", "failed", "denied", "unknown", "cancelled"]
    outcome: str | None = absent()
    attempts: Attempts
    hooks: list[_Object]
    proposed_arguments: _Object
    executed_arguments: _Object | None
    arguments_changed: bool
    raw_result: str | None
    effective_result: str | None
    result_changed: bool
    approval: Approval | None = Field(description="null when no hook asked a person about it")


class OperationList(ResponseBody):
    run_id: str
    items: list[Operation]


class Control(ResponseBody):
    run_id: str
    status: RunStatus


class Answered(ResponseBody):
    run_id: str
    operation_id: str
    status: Literal["approved", "rejected", "expired"]
    answer: Literal["approve", "deny"] | None
    reason: str | None = absent()
    actor: str | None
    answered_at: float | None = absent()
    run_status: RunStatus


class WorkspaceFile(ResponseBody):
    """a regular file of the workspace, by its path relative to the workspace root"""

    path: str
    size: int
    modified_at: float


class WorkspaceListing(ResponseBody):
    run_id: str
    files: list[WorkspaceFile]


class RunEvent(ResponseBody):
    """one SSE data line (agentloom runs events --json)"""

    type: str
    run_id: str
    at: float


class Sse(ResponseBody):
    """one Server-Sent Event of a run's stream"""

    id: str = Field(pattern="^[1-9][0-9]*$", description="its position in the run's events")
    event: str = Field(description="the RunEvent's type")
    data: str = Field(json_schema_extra={"contentMediaType": "application/json",
                                         "contentSchema": {"$ref": REF.format(model="RunEvent")}})


class Receipt(ResponseBody):
    """agentloom commands receipt --json"""

    state: Literal["rejected", "accepted", "committed", "unknown"]
    operation_id: str
    command: str
    result: Any
    reason: str | None
    error: _Object | None
    pipeline_operation_id: str | None = absent()
    actor: str
    project: str
    params: _Object
    created_at: float
    updated_at: float
    confirmation: str = absent()


class WorkerState(ResponseBody):
    """the state of the driver of this process's runs (a worker process or a worker on its loop)"""

    driver: Literal["process", "in_process"]
    running: bool
    pid: int | None = absent()
    started: int = absent()
    last_exit: str | None = absent()
    next_start_in_s: float | None = absent()


class Health(ResponseBody):
    status: Literal["ok", "ready"]
    worker: WorkerState | None = absent()


RESPONSES: tuple[type[ResponseBody], ...] = (
    Problem, Run, WorkflowNode, RunSummary, RunList, Operation, OperationList, Control, Answered,
    WorkspaceListing, RunEvent, Sse, Receipt, Health)
