"""Trusted invocation context and the immutable request the bus hands the pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentloom.cancel import CancelToken
from agentloom.catalog import ResolvedCatalog
from agentloom.errors import OperationError
from agentloom.pipeline.retry import RetryPolicy
from agentloom.refs import NodeRef, OwnerRef

DEFAULT_RUN_DEADLINE_S = 3600.0

__all__ = ["DEFAULT_RUN_DEADLINE_S", "InvocationContext", "NodeRef", "OwnerRef", "Request",
           "with_node"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InvocationContext:
    """What the runtime knows and trusts about one capability use (000 §2.1).

    Set by the runtime only; neither a model nor a hook can change any of it.
    Optional fields stay ``None`` when the concept does not exist for this call —
    they are never faked.
    """

    run_id: str
    lease_epoch: int
    owner_ref: OwnerRef
    catalog: ResolvedCatalog
    deadline: float
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cancel: CancelToken = field(default_factory=CancelToken)
    role: str | None = None
    node_task_id: str | None = None
    # The workflow node the call serves (issue 37): set with ``node_task_id`` (its
    # ``task_id``) by ``with_node``, for every call a workflow node makes; ``None`` elsewhere
    node: NodeRef | None = None
    invocation_id: str | None = None
    conversation_ref: str | None = None
    workspace_scope_id: str | None = None
    context_scope: str | None = None
    shared_scope: str | None = None
    # A model call's: the scope of its invocation's message records, where a before-hook's
    # lasting edits of the request's messages are recorded (000 §5.3; hooks.fields)
    message_scope: str | None = None
    # A call a before-hook hands to a person (``ask``): how long the person has (None: no
    # deadline) and the answer that applies when it passes (``approvals.expire_due``)
    approval_timeout_s: float | None = None
    approval_default: Literal["deny", "approve"] = "deny"


def with_node(ctx: InvocationContext, node: NodeRef) -> InvocationContext:
    """``ctx`` for calls made for workflow node ``node``: ``node`` and ``node_task_id`` set."""
    return replace(ctx, node=node, node_task_id=node.task_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """One request on the bus. Identity, causation, type and scope are runtime-set and immutable."""

    operation_id: str
    event_type: str
    exposed_name: str
    arguments: Mapping[str, Any]
    context: InvocationContext
    logical_key: str
    causation_id: str | None = None
    purpose: str | None = None
    call_id: str | None = None  # the model's id for this tool call (F14), when a model made it
    # The sender checked these arguments against the capability's schema part by part (the
    # model gateway does, see models.codec.encode_request); unchanged, they are not re-walked.
    prevalidated: bool = False
    # The caller will ``flush`` its invocation: a re-runnable call that ends up in one commit
    # may ride on the invocation's next commit instead (see pipeline.commits, Call.finish).
    defer_commit: bool = False
    # The call cannot run (a model named a tool it was not offered, or sent arguments that
    # are not a JSON object): it is recorded ``failed`` with this error and no Attempt.
    refusal: OperationError | None = None
    # The caller asks a person before the call runs (a workflow's wait node, issue 20): the
    # call waits for its approval exactly as if a before-hook had answered ``ask`` with this
    # question (``pipeline.approval``); the hooks still run first, and a deny still wins.
    ask: str | None = None
