"""How an operation's working state maps to store rows (one ``operations`` row per call).

An operation's large parts are encoded once per operation, and a large result block is
stored once, as a blob that every row names (``pipeline.stored``); the state itself always
holds the whole result, as hooks and the waiter see it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentloom.errors import OperationError, StoreError
from agentloom.pipeline.stored import RESULT_PARTS, EncodedJson, PartCache, encoded_over
from agentloom.results import OperationResult, ToolResult
from agentloom.store.operations import attempt_op, get_operation, hook_op
from agentloom.store.ports import Insert, Put, Store

__all__ = [
    "PHASES", "EncodedJson", "OperationState", "apply_delta", "arguments_delta", "attempt_row",
    "hook_row", "proposed_arguments", "remember_arguments", "renamed_request_keys", "stored_envelope",
]

PHASES = (
    "intent_saved",
    "hooks_before",
    "awaiting_approval",
    "attempt_started",
    "raw_saved",
    "hooks_after",
    "delivered",
)


# Request keys an earlier release stored, and the key each is read back as, so an operation
# recorded before a rename still resumes (``model_name`` and ``workspace_scope_ref`` were
# renamed in issue #13).
_RENAMED_REQUEST_KEYS = {"model_name": "exposed_name", "workspace_scope_ref": "workspace_scope_id"}


def renamed_request_keys(request: dict[str, Any]) -> dict[str, Any]:
    """A stored operation request with each key of an earlier release under its current name
    (``model_name`` -> ``exposed_name``); ``request`` itself is returned when none occurs."""
    if not any(old in request for old in _RENAMED_REQUEST_KEYS):
        return request
    return {_RENAMED_REQUEST_KEYS.get(key, key): value for key, value in request.items()}


@dataclass(slots=True)
class OperationState:
    """The mutable working copy of one operation; ``row()`` is what gets committed."""

    operation_id: str
    run_id: str
    logical_key: str
    capability_key: str
    event_type: str
    request: dict[str, Any]
    payload: dict[str, Any]
    phase: str = "intent_saved"
    payload_version: int = 0
    call_revision: int = 0
    chain: dict[str, list[str]] = field(default_factory=lambda: {"before": [], "after": []})
    hooks_version: str = ""
    cursor: dict[str, Any] | None = None
    # the before-hooks that answered ``ask`` (hook id, question), in chain order: when the
    # chain ends without a deny, the call waits for a person (``pipeline.approval``)
    asks: list[dict[str, str]] = field(default_factory=list)
    attempts: int = 0
    # a resumable handler's remote handle (``AttemptContext.checkpoint``): {"attempt": n,
    # "data": {...}}; only the handle of the current Attempt is ever used (``Call.resume``)
    handle: dict[str, Any] | None = None
    raw: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    envelope: dict[str, Any] | None = None
    created_at: float = field(default_factory=time.time)
    # what is stored as the request when its proposed arguments are a delta (else ``request``)
    stored_request: dict[str, Any] | None = None
    # not stored yet: the first commit of a re-runnable call carries its intent (see
    # Call.execute); ``deferred`` holds the ops waiting for it
    unsaved: bool = False
    deferred: list[Any] = field(default_factory=list, repr=False, compare=False)
    # the row is in the store (read from it, or committed by ``CommitPath.commit``): a later
    # row names only what a phase changes (see ``row``)
    stored: bool = field(default=False, repr=False, compare=False)
    # the parts' texts and stored forms: valid while a part is that very object
    _parts: PartCache = field(default_factory=PartCache, repr=False, compare=False)

    def encoded(self, data: dict[str, Any]) -> EncodedJson:
        """``data`` (a row's JSON column) as an ``EncodedJson``: this operation's parts
        (``request``, ``payload``, ``raw``, ``result``) in it are encoded once, and the
        large blocks of ``raw`` and ``result`` stored once (see ``pipeline.stored``)."""
        return encoded_over(data, self._parts)

    def stored_effective(self, limit: int) -> Any:
        """The stored form of the effective result (``result``, else ``raw``) with blocks over
        ``limit`` bytes as blob refs: what its rows will hold."""
        key = "result" if self.result is not None else "raw"
        value = self.result if self.result is not None else self.raw
        return None if value is None else self._parts.prepare(key, value, limit)[0]

    def text_of(self, result: ToolResult) -> str | None:
        """``result.text()`` when it was already made for storing it, else None."""
        return self._parts.text_of(result)

    def row(self, *, new: bool = False) -> Put | Insert:
        """The operations row; ``new`` makes it an Insert, so a second operation with the same
        ``(run_id, logical_key)`` is refused by the store instead of overwriting the first.
        Once the row is ``stored``, a later row (a Put of it) names only what a phase
        changes: the columns fixed when the operation was created (run, logical key,
        capability, event type, creation time; the unique ``(run_id, logical_key)`` among them)
        are left as they are, so SQLite does not rewrite their index at every phase. Before,
        a Put names every column (a call refused before its intent was committed is written
        by its terminal Put)."""
        outcome = self.envelope["outcome"] if self.envelope else None
        insert = new or self.unsaved
        return (Insert if insert else Put)(
            "operations",
            {
                "operation_id": self.operation_id,
                **({} if self.stored and not insert else {
                    "run_id": self.run_id,
                    "logical_key": self.logical_key,
                    "capability_key": self.capability_key,
                    "event_type": self.event_type,
                    "created_at": self.created_at}),
                "phase": self.phase,
                "outcome": outcome,
                "updated_at": time.time(),
                "data": self.encoded({
                    "request": self.request if self.stored_request is None
                    else self.stored_request,
                    # the model's proposal is in the request; store the payload only once a
                    # hook changed it (the executed arguments are the payload at the Attempt)
                    "payload": self.payload if self.payload_version else None,
                    "payload_version": self.payload_version,
                    "call_revision": self.call_revision,
                    "chain": self.chain,
                    "hooks_version": self.hooks_version,
                    "cursor": self.cursor,
                    "asks": self.asks or None,
                    "attempts": self.attempts,
                    **({"handle": self.handle} if self.handle is not None else {}),
                    "raw": self.raw,
                    "result": self.result,
                    "envelope": self.envelope,
                }),
            },
        )

    @classmethod
    def from_row(cls, row: dict[str, Any], store: Store | None = None) -> OperationState:
        """The state of a stored row; ``store`` is needed to rebuild proposed arguments that
        were stored as a delta of an earlier operation's (see ``arguments_delta``)."""
        data = row["data"]
        request = renamed_request_keys(data["request"])
        if request.get("proposed_delta") is not None:
            if store is None:
                raise StoreError(f"operation {row['operation_id']} stores its arguments as a "
                                 "delta; pass the store to read it")
            request = {**request, "proposed_arguments": proposed_arguments(request, store)}
        parts = PartCache()
        texts: dict[str, str] = {}  # a blob the raw and the result share is read once
        loaded = {key: parts.loaded(key, data.get(key), store, texts) for key in RESULT_PARTS}
        return cls(
            operation_id=row["operation_id"],
            run_id=row["run_id"],
            logical_key=row["logical_key"],
            capability_key=row["capability_key"],
            event_type=row["event_type"],
            request=request,
            payload=data["payload"] if data["payload"] is not None
            else dict(request["proposed_arguments"]),
            phase=row["phase"],
            payload_version=data["payload_version"],
            call_revision=data.get("call_revision", 0),
            chain=data["chain"],
            hooks_version=data.get("hooks_version", ""),
            cursor=data.get("cursor"),
            asks=list(data.get("asks") or []),
            attempts=data["attempts"],
            handle=data.get("handle"),
            raw=loaded["raw"],
            result=loaded["result"],
            envelope=data.get("envelope"),
            created_at=row["created_at"],
            stored=True,
            _parts=parts,
        )

    def envelope_result(self, *, live_result: ToolResult | None = None) -> OperationResult:
        """The terminal envelope, rebuilt from the stored facts (the stored ``envelope`` keeps
        only outcome, error and reason; results and arguments are not stored twice).

        ``live_result`` is the effective result object the caller already holds (it equals
        what the stored facts decode to); passing it only saves decoding it again.
        """
        assert self.envelope is not None
        outcome = self.envelope["outcome"]
        raw = None
        if self.raw is not None:
            raw = live_result if live_result is not None and self.result is None \
                else ToolResult.from_dict(self.raw)
        result = None
        if raw is not None and outcome != "denied_after_execution":
            result = raw if self.result is None else live_result or ToolResult.from_dict(self.result)
        error = self.envelope.get("error")
        return OperationResult(
            operation_id=self.operation_id,
            capability=self.capability_key,
            outcome=outcome,
            result=result,
            raw=raw,
            error=OperationError.from_dict(error) if error else None,
            reason=self.envelope.get("reason"),
            attempts=self.attempts,
            executed_arguments=dict(self.payload) if self.attempts else None,
            proposed_arguments=dict(self.request["proposed_arguments"]),
            result_ref=self.envelope.get("result_ref"),
        )


def stored_envelope(row: dict[str, Any], store: Store | None = None) -> OperationResult | None:
    """The envelope of a stored ``operations`` row, or None while it is not terminal."""
    state = OperationState.from_row(row, store)
    return state.envelope_result() if state.envelope is not None else None


def attempt_row(
    operation_id: str, attempt_no: int, status: str, data: dict[str, Any], *, finished: bool
) -> Put | Insert:
    """The Attempt row: inserted when it starts (a second start is refused), updated when it ends."""
    return attempt_op(operation_id=operation_id, attempt_no=attempt_no, status=status, data=data,
                      at=time.time(), finished=finished)


def hook_row(
    operation_id: str,
    timing: str,
    position: int,
    *,
    hook_id: str,
    status: str,
    data: dict[str, Any],
    decision: str | None = None,
) -> Put:
    """The ``hook_invocations`` row of hook ``position`` of ``timing``, as it now stands."""
    return hook_op(operation_id=operation_id, timing=timing, position=position,
                   hook_id=hook_id, status=status, decision=decision, created_at=time.time(),
                   data=data)


# -- arguments stored as a delta of an earlier call's ------------------------------------------

_MISSING = object()
_EXPANDED: dict[str, dict[str, Any]] = {}  # operation id -> proposed arguments (bounded)
_EXPANDED_LIMIT = 256


def arguments_delta(base: dict[str, Any], args: dict[str, Any]) -> dict[str, Any] | None:
    """``args`` as a delta of ``base`` when some list of ``base`` only grew (an agent's
    history does, turn after turn): unchanged keys are left out, a grown list keeps its tail
    only. None when nothing grew (the arguments are then stored whole)."""
    changed: dict[str, Any] = {}
    appended: dict[str, list[Any]] = {}
    for key, value in args.items():
        old = base.get(key, _MISSING)
        if old is value or old == value:
            continue
        if isinstance(value, list) and isinstance(old, list) and len(value) > len(old) \
                and value[: len(old)] == old:
            appended[key] = value[len(old):]
        else:
            changed[key] = value
    if not appended:
        return None
    return {"set": changed, "append": appended, "removed": [k for k in base if k not in args]}


def apply_delta(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in base.items() if k not in delta["removed"]}
    out.update(delta["set"])
    for key, tail in delta["append"].items():
        out[key] = [*base[key], *tail]
    return out


def remember_arguments(operation_id: str, args: dict[str, Any]) -> None:
    if len(_EXPANDED) >= _EXPANDED_LIMIT:
        del _EXPANDED[next(iter(_EXPANDED))]
    _EXPANDED[operation_id] = args


def proposed_arguments(request: dict[str, Any], store: Store) -> dict[str, Any]:
    """The whole proposed arguments of a stored request, following its chain of deltas."""
    deltas = []
    current = request
    while (delta := current.get("proposed_delta")) is not None:
        deltas.append(delta)
        known = _EXPANDED.get(delta["base"])
        if known is not None:
            args = known
            break
        base = get_operation(store, delta["base"])
        if base is None:
            raise StoreError(f"the arguments of an operation refer to operation "
                             f"{delta['base']}, which is not stored")
        current = base.data["request"]
    else:
        args = current["proposed_arguments"]
    for delta in reversed(deltas):
        args = apply_delta(args, delta)
    return args
