"""Payload and context patches, normalised into one change set (000 §5.1, §5.3).

A ``PayloadPatch`` is a list of RFC 6902 operations — ``add``, ``replace`` and
``remove`` only — whose paths point into the hook event (``/payload/...`` before
execution, ``/result/...`` after), plus the payload version the hook saw.
A ``ContextPatch`` changes context records by stable id, each change guarded by
the record revision it was based on. A context change to the *current call's*
record maps onto the payload, so the executed value and the recorded value can
never differ. One hook's changes are checked together: the same value written
twice merges; different values for one path, or a parent and its child both
written, is ``HOOK_PATCH_CONFLICT`` and every patch of that hook is dropped.

Every value a patch carries must be plain JSON (an object with string keys, an array, a
string, a finite number, a boolean or null); it is copied into plain ``dict`` / ``list``
values, so a value read from the read-only event can be written back.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentloom.canonical import canonical_ascii_json
from agentloom.catalog.spec import freeze_json, thaw_json
from agentloom.errors import AgentLoomError, CatalogError, ErrorCategory

PatchOpName = Literal["add", "replace", "remove"]
_OPS = ("add", "replace", "remove")


class PatchInvalid(AgentLoomError):
    """A patch that cannot be accepted; ``code`` is one of the HOOK_PATCH_* codes."""

    default_code = "HOOK_PATCH_INVALID"
    default_category: ErrorCategory = "validation"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)
        self.message = message


HOOK_PATCH_OVER_WINDOW = "HOOK_PATCH_OVER_WINDOW"
"""A model before-hook's patch adds fixed material (e.g. a long system note) that cannot fit
the model's window (000 §5.2.5): the hook's whole patch is dropped."""


@dataclass(frozen=True, slots=True)
class PatchOp:
    """One JSON Patch operation (``add`` / ``replace`` / ``remove``) at a JSON Pointer ``path``;
    ``value`` is unused for ``remove``."""

    op: PatchOpName
    path: str
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.op != "remove":
            out["value"] = self.value
        return out


@dataclass(frozen=True, slots=True)
class PayloadPatch:
    """A hook's change to the event it sees (a call's payload before, its result after): JSON
    Patch operations, optionally pinned to the ``expected_version`` they were written for."""

    ops: tuple[PatchOp, ...]
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class ContextChange:
    """One change a hook makes to another context record: a patch op on ``record_id`` at
    ``path``, optionally pinned to ``base_revision``; ``shared`` marks a record outside the
    caller's own scope."""

    record_id: str
    op: PatchOpName
    path: str
    value: Any = None
    base_revision: int | None = None
    shared: bool = False


@dataclass(frozen=True, slots=True)
class ContextPatch:
    """A hook's changes to context records other than the event itself, applied together or not
    at all; ``base_revision`` pins all of them at once."""

    changes: tuple[ContextChange, ...]
    base_revision: int | None = None


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """One hook's accepted changes: event ops (payload or result) and other-record changes."""

    ops: tuple[PatchOp, ...]
    context_changes: tuple[ContextChange, ...]

    @property
    def empty(self) -> bool:
        return not self.ops and not self.context_changes

    def digest(self) -> str:
        body = {
            "ops": [o.to_dict() for o in self.ops],
            "context": [
                {"record_id": c.record_id, "op": c.op, "path": c.path, "value": c.value,
                 "base_revision": c.base_revision, "shared": c.shared}
                for c in self.context_changes
            ],
        }
        return hashlib.sha256(canonical_ascii_json(body).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ops": [o.to_dict() for o in self.ops],
            "context_changes": [
                {"record_id": c.record_id, "op": c.op, "path": c.path, "value": c.value,
                 "base_revision": c.base_revision, "shared": c.shared}
                for c in self.context_changes
            ],
        }


EMPTY_CHANGES = ChangeSet((), ())


# -- parsing ---------------------------------------------------------------------------


def split_pointer(path: str) -> tuple[str, ...]:
    if path == "":
        return ()
    if not isinstance(path, str) or not path.startswith("/"):
        raise PatchInvalid("HOOK_PATCH_INVALID", f"patch path {path!r} is not a JSON pointer")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/"))


def json_value(value: Any, where: str) -> Any:
    """A plain-JSON copy of ``value`` (mappings become dicts, tuples lists), or ``PatchInvalid``
    naming what is not JSON."""
    try:
        return thaw_json(freeze_json(value, where=where))
    except CatalogError as exc:
        raise PatchInvalid("HOOK_PATCH_INVALID", exc.error.message) from None
    except RecursionError:
        raise PatchInvalid("HOOK_PATCH_INVALID",
                           f"{where}: nested too deeply (or contains itself)") from None


def _parse_op(raw: Any, where: str) -> PatchOp:
    if not isinstance(raw, Mapping):
        raise PatchInvalid("HOOK_PATCH_INVALID", f"{where}: a patch operation must be an object")
    op = raw.get("op")
    if op not in _OPS:
        raise PatchInvalid(
            "HOOK_PATCH_INVALID",
            f"{where}: op {op!r} is not allowed; use add, replace or remove",
        )
    path = raw.get("path")
    if not isinstance(path, str):
        raise PatchInvalid("HOOK_PATCH_INVALID", f"{where}: path must be a string")
    split_pointer(path)
    if op != "remove" and "value" not in raw:
        raise PatchInvalid("HOOK_PATCH_INVALID", f"{where}: {op} needs a value")
    extra = set(raw) - {"op", "path", "value"}
    if extra:
        raise PatchInvalid("HOOK_PATCH_INVALID", f"{where}: unexpected fields {sorted(extra)}")
    return PatchOp(op, path, json_value(raw.get("value"), f"{where}.value") if op != "remove" else None)


def parse_payload_patch(raw: Any) -> PayloadPatch | None:
    """Accept a ``PayloadPatch``, a list of operations, or ``{"ops": [...], "expected_version": n}``."""
    if raw is None:
        return None
    if isinstance(raw, PayloadPatch):  # built by the hook's code: checked like any other
        raw = {"ops": _as_dicts(raw.ops), "expected_version": raw.expected_version}
    expected: Any = None
    if isinstance(raw, Mapping):
        extra = set(raw) - {"ops", "expected_version"}
        if extra:
            raise PatchInvalid("HOOK_PATCH_INVALID", f"payload_patch: unexpected fields {sorted(extra)}")
        expected = raw.get("expected_version")
        if expected is not None and (not isinstance(expected, int) or isinstance(expected, bool)):
            raise PatchInvalid("HOOK_PATCH_INVALID", "payload_patch.expected_version must be an integer")
        raw = raw.get("ops")
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise PatchInvalid("HOOK_PATCH_INVALID", "payload_patch must be a list of operations")
    ops = tuple(_parse_op(item, f"payload_patch[{i}]") for i, item in enumerate(raw))
    return PayloadPatch(ops, expected)


def parse_context_patch(raw: Any) -> ContextPatch | None:
    """Accept a ``ContextPatch`` or ``{"base_revision": n, "changes": [{record_id, op, path, value}]}``."""
    if raw is None:
        return None
    if isinstance(raw, ContextPatch):  # built by the hook's code: checked like any other
        raw = {"base_revision": raw.base_revision, "changes": _as_dicts(raw.changes)}
    if not isinstance(raw, Mapping):
        raise PatchInvalid("HOOK_PATCH_INVALID", "context_patch must be an object")
    extra = set(raw) - {"base_revision", "changes"}
    if extra:
        raise PatchInvalid("HOOK_PATCH_INVALID", f"context_patch: unexpected fields {sorted(extra)}")
    base = raw.get("base_revision")
    changes_raw = raw.get("changes")
    if not isinstance(changes_raw, Sequence) or isinstance(changes_raw, str | bytes):
        raise PatchInvalid("HOOK_PATCH_INVALID", "context_patch.changes must be a list")
    changes: list[ContextChange] = []
    for i, item in enumerate(changes_raw):
        where = f"context_patch.changes[{i}]"
        if not isinstance(item, Mapping):
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{where} must be an object")
        record_id = item.get("record_id")
        if not isinstance(record_id, str) or not record_id:
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{where}: record_id is required")
        op = _parse_op(
            {k: v for k, v in item.items() if k in ("op", "path", "value")}, where
        )
        rev = item.get("base_revision", base)
        if rev is None or not isinstance(rev, int) or isinstance(rev, bool):
            raise PatchInvalid(
                "HOOK_PATCH_INVALID", f"{where}: base_revision (the record revision you read) is required"
            )
        unexpected = set(item) - {"record_id", "op", "path", "value", "base_revision", "shared"}
        if unexpected:
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{where}: unexpected fields {sorted(unexpected)}")
        changes.append(
            ContextChange(record_id, op.op, op.path, op.value, rev, bool(item.get("shared", False)))
        )
    return ContextPatch(tuple(changes), base)


def _as_dicts(items: Any) -> Any:
    """``PatchOp`` / ``ContextChange`` values as the mappings the parsers check."""
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        return items
    out: list[Any] = []
    for item in items:
        if isinstance(item, PatchOp):
            out.append(item.to_dict())
        elif isinstance(item, ContextChange):
            change = {"record_id": item.record_id, "op": item.op, "path": item.path,
                      "shared": item.shared}
            if item.base_revision is not None:  # else the patch's own base_revision applies
                change["base_revision"] = item.base_revision
            if item.op != "remove":
                change["value"] = item.value
            out.append(change)
        else:
            out.append(item)
    return out


# -- normalisation ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallRecord:
    """The context record of the call being intercepted and where it maps into the event."""

    record_id: str
    revision: int
    field: str  # e.g. "/arguments" (record side)
    target: str  # e.g. "/payload" (event side)


def _overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return longer[: len(shorter)] == shorter


def _dedupe(ops: Sequence[PatchOp], what: str) -> tuple[PatchOp, ...]:
    kept: list[tuple[tuple[str, ...], PatchOp]] = []
    for op in ops:
        tokens = split_pointer(op.path)
        duplicate = False
        for other_tokens, other in kept:
            if other_tokens == tokens:
                if other.op == op.op and other.value == op.value:
                    duplicate = True
                    break
                raise PatchInvalid(
                    "HOOK_PATCH_CONFLICT",
                    f"{what}: {op.path!r} is written twice with different values",
                )
            if _overlaps(other_tokens, tokens):
                raise PatchInvalid(
                    "HOOK_PATCH_CONFLICT",
                    f"{what}: {other.path!r} and {op.path!r} overlap (parent and child both written)",
                )
        if not duplicate:
            kept.append((tokens, op))
    return tuple(op for _, op in kept)


def _did_you_mean(path: str, writable: Sequence[str]) -> str:
    """``; did you mean /payload/path?`` when ``path`` placed under the event key of a
    writable path (``/payload``, ``/result``) is writable; else nothing."""
    if not path.startswith("/"):
        return ""
    for base in dict.fromkeys("/" + split_pointer(w)[0] for w in writable if split_pointer(w)):
        candidate = base + path
        tokens = split_pointer(candidate)
        if any(_overlaps_prefix(split_pointer(w), tokens) for w in writable):
            return f"; did you mean {candidate}?"
    return ""


def normalise(
    payload_patch: PayloadPatch | None,
    context_patch: ContextPatch | None,
    *,
    call: CallRecord | None,
    writable: Sequence[str],
    payload_version: int,
    records: Mapping[str, CallRecord] | None = None,
) -> ChangeSet:
    """Fold both patch forms into one checked change set, or raise ``PatchInvalid``.

    ``writable`` lists the event paths this hook point may change; anything else
    (ids, causation, type, owner, scope, run, role, lease, credentials, budget,
    deadline, stop state, a result's status) is ``HOOK_PATCH_PROTECTED``. ``call`` and
    ``records`` are the context records that map onto the event (the current call's record;
    a model request's messages, by stable id): a change to one of them becomes the payload
    op it stands for, checked with the others.
    """
    mapped: dict[str, CallRecord] = dict(records or {})
    if call is not None:
        mapped[call.record_id] = call
    ops: list[PatchOp] = []
    if payload_patch is not None:
        if (
            payload_patch.expected_version is not None
            and payload_patch.expected_version != payload_version
        ):
            raise PatchInvalid(
                "HOOK_PATCH_STALE",
                f"payload_patch expects input version {payload_patch.expected_version}, "
                f"the current version is {payload_version}",
            )
        ops.extend(payload_patch.ops)
    others: list[ContextChange] = []
    if context_patch is not None:
        for change in context_patch.changes:
            call = mapped.get(change.record_id) if not change.shared else None
            if call is not None:
                if change.base_revision != call.revision:
                    raise PatchInvalid(
                        "HOOK_PATCH_STALE",
                        f"context change to {change.record_id} is based on revision "
                        f"{change.base_revision}, the current revision is {call.revision}",
                    )
                tokens = split_pointer(change.path)
                field_tokens = split_pointer(call.field)
                if tokens[: len(field_tokens)] != field_tokens:
                    raise PatchInvalid(
                        "HOOK_PATCH_PROTECTED",
                        f"context change to {change.record_id}{change.path}: only "
                        f"{call.field} of the current call can be changed",
                    )
                rest = change.path[len(call.field):]
                ops.append(PatchOp(change.op, call.target + rest, change.value))
            else:
                others.append(change)
    for op in ops:
        tokens = split_pointer(op.path)
        if not any(_overlaps_prefix(split_pointer(w), tokens) for w in writable):
            raise PatchInvalid(
                "HOOK_PATCH_PROTECTED",
                f"{op.path!r} is protected at this hook point; writable: {list(writable)}"
                + _did_you_mean(op.path, writable),
            )
    merged = _dedupe(ops, "patch")
    by_record: dict[tuple[str, bool], list[ContextChange]] = {}
    for change in others:
        by_record.setdefault((change.record_id, change.shared), []).append(change)
    kept_changes: list[ContextChange] = []
    for (record_id, _), changes in by_record.items():
        revisions = {c.base_revision for c in changes}
        if len(revisions) > 1:
            raise PatchInvalid(
                "HOOK_PATCH_CONFLICT", f"changes to {record_id} name different base revisions"
            )
        deduped = _dedupe([PatchOp(c.op, c.path, c.value) for c in changes], record_id)
        first = changes[0]
        kept_changes.extend(
            ContextChange(record_id, o.op, o.path, o.value, first.base_revision, first.shared)
            for o in deduped
        )
    return ChangeSet(merged, tuple(kept_changes))


def _overlaps_prefix(writable: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """True when ``path`` is ``writable`` itself or below it."""
    return path[: len(writable)] == writable


# -- application -----------------------------------------------------------------------


def apply_ops(document: Any, ops: Sequence[PatchOp]) -> Any:
    """Apply ``ops`` to a deep copy of ``document``; raise ``PatchInvalid`` on a bad target."""
    doc = copy.deepcopy(document)
    for op in ops:
        doc = _apply_one(doc, op)
    return doc


def _apply_one(doc: Any, op: PatchOp) -> Any:
    tokens = split_pointer(op.path)
    if not tokens:
        if op.op == "remove":
            raise PatchInvalid("HOOK_PATCH_INVALID", "cannot remove the whole document")
        return copy.deepcopy(op.value)
    parent = doc
    for token in tokens[:-1]:
        parent = _child(parent, token, op.path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if op.op == "add":
            parent[last] = copy.deepcopy(op.value)
        elif last not in parent:
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{op.op} {op.path!r}: no such member")
        elif op.op == "replace":
            parent[last] = copy.deepcopy(op.value)
        else:
            del parent[last]
        return doc
    if isinstance(parent, list):
        if op.op == "add" and last == "-":
            parent.append(copy.deepcopy(op.value))
            return doc
        index = _index(last, op.path)
        limit = len(parent) + (1 if op.op == "add" else 0)
        if index >= limit:
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{op.op} {op.path!r}: index out of range")
        if op.op == "add":
            parent.insert(index, copy.deepcopy(op.value))
        elif op.op == "replace":
            parent[index] = copy.deepcopy(op.value)
        else:
            del parent[index]
        return doc
    raise PatchInvalid("HOOK_PATCH_INVALID", f"{op.op} {op.path!r}: parent is not a container")


def _child(node: Any, token: str, path: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{path!r}: no member {token!r}")
        return node[token]
    if isinstance(node, list):
        index = _index(token, path)
        if index >= len(node):
            raise PatchInvalid("HOOK_PATCH_INVALID", f"{path!r}: index {index} out of range")
        return node[index]
    raise PatchInvalid("HOOK_PATCH_INVALID", f"{path!r}: cannot descend into a scalar")


def _index(token: str, path: str) -> int:
    if not token.isdigit() or (token.startswith("0") and token != "0"):
        raise PatchInvalid("HOOK_PATCH_INVALID", f"{path!r}: {token!r} is not an array index")
    return int(token)
