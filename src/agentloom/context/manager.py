"""ContextManager: records with stable ids and revisions, CAS on the base revision (000 §5.3).

A record is never overwritten: a change inserts revision ``n + 1`` and the insert
itself is the compare-and-set (a second writer of ``n + 1`` gets a
``RevisionConflict``). The effective view of a scope is the latest revision of
each record, in creation order. A tool call keeps both "arguments the model
proposed" (revision 1) and "arguments executed" (the latest revision), and the
view — what the next model turn sees — shows the executed ones.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentloom.hooks.patch import ContextChange, PatchInvalid, PatchOp, apply_ops
from agentloom.ids import new_id
from agentloom.results import ToolResult, result_ref
from agentloom.store import context_records
from agentloom.store.blobs import blob_insert
from agentloom.store.context_records import ContextRecord
from agentloom.store.ports import Insert, Op, Store
from agentloom.store.results import result_insert
from agentloom.workspace.blobs import BLOB_REF_PREFIX

DEFAULT_PREVIEW_LIMIT = 4096


def call_record_id(operation_id: str) -> str:
    return f"call:{operation_id}"


def result_record_id(operation_id: str) -> str:
    return f"result:{operation_id}"


def message_record_id(message_id: str) -> str:
    """The context record of the message with stable id ``message_id`` (000 §5.3)."""
    return f"{MESSAGE_PREFIX}{message_id}"


MESSAGE_PREFIX = "msg:"
MESSAGE_KIND = "message"
EXECUTED_KINDS = frozenset({"tool_call", "tool_result"})
"""Records of executed history: frozen, only an attributed note may be appended (000 §5.1)."""


@dataclass(frozen=True, slots=True)
class MessageEdit:
    """A hook's lasting edit of one message of a model request: the message's stable ``id``,
    its ``role``, the text the hook saw (``before``) and the edited text (``after``)."""

    id: str
    role: str
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class ResultOps:
    """The ops storing a call's outcome in context, and the ``result_ref`` of its full text
    when only a preview was kept (None when the whole text is in the context record)."""

    ops: list[Op] = field(default_factory=list)
    result_ref: str | None = None


class ContextManager:
    """Reads context records and builds the store operations that change them (000 §5.3).

    Owns: the revision rules — a change inserts revision ``n + 1`` and that insert is the CAS on
    ``base_revision`` — the effective view, and the raw-vs-effective result records. Does not
    own: committing (its ``*_op`` / ``prepare_changes`` return writes the pipeline commits
    through the ``CommitCoordinator``)."""

    def __init__(self, store: Store, *, preview_limit: int = DEFAULT_PREVIEW_LIMIT) -> None:
        self.store = store
        self.preview_limit = preview_limit

    # -- reads -----------------------------------------------------------------------
    def history(self, scope_id: str, record_id: str) -> list[ContextRecord]:
        """Every revision of one record, oldest first (raw revisions are never lost)."""
        return context_records.history(self.store, scope_id, record_id)

    def current(self, scope_id: str, record_id: str) -> ContextRecord | None:
        return context_records.current(self.store, scope_id, record_id)

    def view(self, scope_id: str) -> list[ContextRecord]:
        """The effective context of a scope: the latest revision of every record."""
        latest: dict[str, ContextRecord] = {}
        for record in context_records.in_scope(self.store, scope_id):
            seen = latest.get(record.record_id)
            if seen is None or record.revision > seen.revision:
                latest[record.record_id] = record
        return sorted(latest.values(), key=lambda r: (r.position, r.record_id))

    def message_revisions(self, scope_id: str) -> dict[str, int]:
        """The current revision of every message record of ``scope_id``, by message id (a
        message never edited has none: its revision is 0)."""
        return {r.record_id[len(MESSAGE_PREFIX):]: r.revision for r in self.view(scope_id)
                if r.kind == MESSAGE_KIND}

    def edited_messages(self, scope_id: str) -> dict[str, str | None]:
        """The effective text of every edited message of ``scope_id``, by message id: what
        every later request shows in place of the text the message was made with."""
        return {r.record_id[len(MESSAGE_PREFIX):]: r.data.get("content")
                for r in self.view(scope_id) if r.kind == MESSAGE_KIND}

    # -- write-set preparation -----------------------------------------------------------
    def message_edit_ops(self, edits: Sequence[MessageEdit], *, scope_id: str, run_id: str,
                         source: str, operation_id: str) -> list[Op]:
        """The next revision of each edited message's record (its first edit also stores the
        raw text as revision 1): the insert is the CAS on the revision the edit was based on."""
        if not edits:
            return []
        revisions = self.message_revisions(scope_id)
        ops: list[Op] = []
        for edit in edits:
            record_id = message_record_id(edit.id)
            base = revisions.get(edit.id, 0)
            if base == 0:
                ops.append(self.record_op(
                    scope_id=scope_id, run_id=run_id, record_id=record_id, revision=1,
                    kind=MESSAGE_KIND, position=edit.id,
                    data={"id": edit.id, "role": edit.role, "content": edit.before,
                          "source": "raw"}))
                base = 1
            ops.append(self.record_op(
                scope_id=scope_id, run_id=run_id, record_id=record_id, revision=base + 1,
                kind=MESSAGE_KIND, position=edit.id,
                data={"id": edit.id, "role": edit.role, "content": edit.after, "source": source,
                      "operation_id": operation_id, "base_revision": base}))
        return ops

    # -- write-set preparation -----------------------------------------------------------
    def record_op(
        self,
        *,
        scope_id: str,
        run_id: str,
        record_id: str,
        revision: int,
        kind: str,
        data: dict[str, Any],
        position: str | None = None,
    ) -> Insert:
        return context_records.record_insert(
            scope_id=scope_id, record_id=record_id, revision=revision, run_id=run_id,
            position=position or new_id(), kind=kind, created_at=time.time(), data=data)

    def prepare_changes(
        self,
        changes: Sequence[ContextChange],
        *,
        private_scope: str | None,
        shared_scope: str | None,
        run_id: str,
        source: str,
    ) -> list[Op]:
        """Turn a hook's changes to *other* records into CAS inserts, or raise PatchInvalid.

        A change reaches only the caller's own private scope or the run's shared scope:
        another role's private records are not addressable at all.
        """
        ops: list[Op] = []
        grouped: dict[tuple[str, str], list[ContextChange]] = {}
        for change in changes:
            scope = shared_scope if change.shared else private_scope
            if scope is None:
                raise PatchInvalid(
                    "HOOK_PATCH_PROTECTED",
                    f"context change to {change.record_id}: this call has no "
                    f"{'shared' if change.shared else 'role'} context scope",
                )
            grouped.setdefault((scope, change.record_id), []).append(change)
        for (scope, record_id), group in grouped.items():
            current = self.current(scope, record_id)
            if current is None:
                raise PatchInvalid(
                    "HOOK_PATCH_INVALID", f"context record {record_id!r} does not exist in scope"
                )
            base = group[0].base_revision
            if base != current.revision:
                raise PatchInvalid(
                    "HOOK_PATCH_STALE",
                    f"context record {record_id!r} is at revision {current.revision}, "
                    f"the patch was based on {base}",
                )
            if current.kind in EXECUTED_KINDS:
                data = _noted(current, group, source)
            else:
                data = apply_ops(current.data, [PatchOp(c.op, c.path, c.value) for c in group])
                if not isinstance(data, dict):
                    raise PatchInvalid("HOOK_PATCH_INVALID",
                                       f"record {record_id!r} must stay an object")
                data["source"] = source
            ops.append(
                self.record_op(
                    scope_id=scope, run_id=run_id, record_id=record_id,
                    revision=current.revision + 1, kind=current.kind, data=data,
                    position=current.position,
                )
            )
        return ops

    def result_ops(
        self,
        *,
        scope_id: str | None,
        run_id: str,
        role: str | None,
        operation_id: str,
        capability: str,
        outcome: str,
        result: ToolResult | None,
        summary: str,
        stored: Mapping[str, Any] | None = None,
        text: str | None = None,
    ) -> ResultOps:
        """Ops storing a call's outcome in context: a bounded preview, and the full text as a
        content-addressed blob behind a ``result_ref`` when it does not fit.

        ``stored`` is ``result`` as the operation's rows store it: when its one content block
        is a blob there (``pipeline.stored``), that blob *is* the full text and the ref names
        it; nothing is encoded or stored again. ``text`` is ``result.text()`` when the caller
        already has it.
        """
        if text is None:
            text = result.text() if result is not None else summary
        ops: list[Op] = []
        record: dict[str, Any] = {
            "operation_id": operation_id,
            "capability": capability,
            "outcome": outcome,
            "truncated": False,
        }
        ref = None
        blob = _only_blob(stored) if result is not None else None
        if blob is None:
            encoded = text.encode("utf-8")
            if len(encoded) <= self.preview_limit:
                record.update(size=len(encoded), preview=text)
            else:  # (a result of several blocks: its joined text is stored on its own)
                blob = hashlib.sha256(encoded).hexdigest(), len(encoded)
                ops.append(blob_insert(digest=blob[0], size=blob[1], created_at=time.time(),
                                       content=encoded))
            del encoded
        if blob is not None:
            digest, size = blob
            ref = result_ref(operation_id)
            ops.append(result_insert(
                result_ref=ref, operation_id=operation_id, run_id=run_id, role=role,
                scope_id=scope_id, digest=digest, size=size, created_at=time.time()))
            head = text[: self.preview_limit].encode("utf-8")[: self.preview_limit]
            preview = head.decode("utf-8", errors="ignore")
            record.update(size=size, preview=preview, truncated=True, result_ref=ref,
                          covered=[0, len(preview.encode("utf-8"))])
        parts = []
        for index, artifact in enumerate(result.artifacts if result is not None else ()):
            if not artifact.ref.startswith(BLOB_REF_PREFIX):
                continue
            location = artifact.ref[len(BLOB_REF_PREFIX):]
            name = artifact.name or str(index)
            part_ref = result_ref(operation_id, name)
            ops.append(result_insert(
                result_ref=part_ref, operation_id=operation_id, run_id=run_id, role=role,
                scope_id=scope_id, digest=location.rsplit("/", 1)[-1], size=artifact.size or 0,
                created_at=time.time(), location=location))
            parts.append({"name": name, "result_ref": part_ref, "size": artifact.size})
        if parts:
            record["stored"] = parts
        if scope_id is not None:
            ops.append(
                self.record_op(
                    scope_id=scope_id, run_id=run_id, record_id=result_record_id(operation_id),
                    revision=1, kind="tool_result", data=record,
                    position=f"{operation_id}:1",
                )
            )
        return ResultOps(ops, ref)


def _noted(current: ContextRecord, changes: Sequence[ContextChange], source: str
           ) -> dict[str, Any]:
    """``current`` (a record of executed history) with the notes ``changes`` append, each
    attributed to ``source``; any other change is ``HOOK_PATCH_PROTECTED`` (000 §5.1: frozen or
    executed history is never rewritten, only annotated)."""
    notes = list(current.data.get("notes") or [])
    for change in changes:
        if change.op != "add" or change.path != "/notes/-":
            raise PatchInvalid(
                "HOOK_PATCH_PROTECTED",
                f"context record {current.record_id!r} is executed history: its arguments and "
                f"facts cannot be changed ({change.op} {change.path!r}); only a note can be "
                "appended (add /notes/- with a string)")
        if not isinstance(change.value, str) or not change.value.strip():
            raise PatchInvalid("HOOK_PATCH_INVALID",
                               f"a note on {current.record_id!r} must be a non-empty string")
        notes.append({"note": change.value, "source": source})
    return {**current.data, "notes": notes}


def _only_blob(stored: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """``(digest, size)`` when a stored result's one content block is a blob (then that blob
    holds exactly what ``ToolResult.text`` makes of the result), else None."""
    content = stored.get("content") if stored is not None else None
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], Mapping):
        return None
    ref = content[0].get("blob")
    return (str(ref["digest"]), int(ref["size"])) if isinstance(ref, Mapping) else None
