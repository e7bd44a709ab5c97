"""The writable-field schema of every hook point, versioned (000 §2.2.4, §5.1, §5.3).

A hook's patch may change only what its hook point's rules name; everything else is
``HOOK_PATCH_PROTECTED``. The schema is published with the catalog
(``ResolvedCatalog.hook_fields``), its version is recorded on every hook invocation
(``fields_version``), and ``docs/hooks.md`` shows it as a table (a test keeps the two equal).

Per hook point:

- **before, tool**: the call's arguments (``/payload``), checked against the capability's
  input schema; the change is the call's executed arguments and its context record's next
  revision (every later request shows them).
- **before, delegation** (version 2): only the task (``/payload/task``), as for a tool's
  arguments; who is delegated to and for which workflow node (``agent``, ``node``,
  ``attempt``) and a granted ``history`` are protected.
- **before, model**: a message's ``content`` may be edited — an edit of an existing message is
  a recorded change of that message's context record (by its stable ``id``, the raw version
  kept as revision 1, the hook named as source) and *lasts*: every later request of the
  invocation, compaction and a recovered run show the edited text. A user message (the task,
  a supplement) may be edited but never emptied. No existing message may be removed, replaced
  as a whole, moved, or have another field changed (its role, tool calls, tool call id, name,
  reasoning, id): the executed history and the user's input are protected. A hook may add
  ``system`` or ``user`` messages (without an ``id``); they, and changes to ``tools``,
  ``output_format``, ``think`` and ``max_output_tokens``, are part of this request only.
- **after, any**: the result's ``content``, ``metadata`` and ``artifacts``; never its status.

Other context records (``context_patch``): the current call's record maps onto the payload;
a record of another call or of a result is executed history — only an attributed note may be
appended to it (``add /notes/-`` with a string); a message record edits that message.

Owns: the rules and the check of a model request's patch against them. Does not own:
applying patches (``hooks.patch``), the records (``context.manager``), the chain
(``pipeline.chain``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentloom.hooks.patch import PatchInvalid, PatchOp, split_pointer

__all__ = [
    "FIELDS_VERSION",
    "HOOK_FIELDS",
    "MESSAGE_NOTE_PATH",
    "FieldRule",
    "check_model_ops",
    "fields_document",
    "writable_paths",
]

FIELDS_VERSION = 2
"""Version of ``HOOK_FIELDS``; recorded on every hook invocation. Version 1: the rules above,
a delegation's whole ``/payload`` writable. Version 2 (issue 37): a delegation's
``/payload/task`` only."""

MESSAGE_NOTE_PATH = "/notes/-"
"""The one change a hook may make to a record of executed history: append a note."""

HOOK_PATCH_PROTECTED = "HOOK_PATCH_PROTECTED"

Lasts = Literal["context", "request"]


@dataclass(frozen=True, slots=True)
class FieldRule:
    """What a hook point lets a patch change: ``path`` (``*`` is one array index, ``-`` the
    end of an array), the ``ops`` allowed there, whether the change enters the effective
    context (``context``: every later request shows it) or this request only (``request``),
    and a note saying what is protected."""

    path: str
    ops: tuple[str, ...]
    lasts: Lasts
    note: str = ""


_ALL = ("add", "replace", "remove")
_CALL_RULES = (FieldRule("/payload", _ALL, "context",
                         "the call's arguments, checked against the capability's input schema; "
                         "the executed arguments and the call's context record"),)
_DELEGATION_RULES = (FieldRule("/payload/task", ("add", "replace"), "context",
                              "the delegated task; agent, node, attempt and history are "
                              "protected"),)
_AFTER_RULES = (
    FieldRule("/result/content", _ALL, "context", "the effective result; the raw one is kept"),
    FieldRule("/result/metadata", _ALL, "context"),
    FieldRule("/result/artifacts", _ALL, "context"),
)
_MODEL_RULES = (
    FieldRule("/payload/messages/*/content", ("replace", "add"), "context",
              "an edit of an existing message, recorded on its context record by id (raw kept); "
              "a user message is never emptied"),
    FieldRule("/payload/messages/-", ("add",), "request",
              "a system or user message without an id; existing messages are never removed, "
              "replaced or moved"),
    FieldRule("/payload/messages/*", ("add",), "request", "inserts such a message"),
    FieldRule("/payload/tools", _ALL, "request"),
    FieldRule("/payload/output_format", _ALL, "request"),
    FieldRule("/payload/think", _ALL, "request"),
    FieldRule("/payload/max_output_tokens", _ALL, "request"),
)

#: The rules of each hook point, by (timing, event type); ``*`` is any other event type.
HOOK_FIELDS: Mapping[tuple[str, str], tuple[FieldRule, ...]] = {
    ("before", "model"): _MODEL_RULES,
    ("before", "delegation"): _DELEGATION_RULES,
    ("before", "*"): _CALL_RULES,
    ("after", "*"): _AFTER_RULES,
}


def rules_for(timing: str, event_type: str) -> tuple[FieldRule, ...]:
    """The rules of hook point ``timing`` × ``event_type``."""
    return HOOK_FIELDS.get((timing, event_type)) or HOOK_FIELDS[(timing, "*")]


def writable_paths(timing: str, event_type: str) -> tuple[str, ...]:
    """The event paths a patch of this hook point may reach at all (finer rules are checked by
    ``check_model_ops``): the rules' paths up to their first wildcard."""
    paths: dict[str, None] = {}
    for rule in rules_for(timing, event_type):
        tokens = split_pointer(rule.path)
        cut = next((i for i, t in enumerate(tokens) if t in ("*", "-")), len(tokens))
        paths["/" + "/".join(tokens[:cut])] = None
    return tuple(paths)


def fields_document() -> dict[str, Any]:
    """The schema as JSON: ``{"version", "points": [{"timing", "event", "fields": [...]}]}``."""
    return {"version": FIELDS_VERSION, "points": [
        {"timing": timing, "event": event,
         "fields": [{"path": r.path, "ops": list(r.ops), "lasts": r.lasts, "note": r.note}
                    for r in rules]}
        for (timing, event), rules in HOOK_FIELDS.items()]}


# -- the model request's rules ----------------------------------------------------------------

_NEW = None  # a message this patch added: its own to change
_ADDABLE_ROLES = ("system", "user")


def check_model_ops(ops: Sequence[PatchOp], messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse (``PatchInvalid`` ``HOOK_PATCH_PROTECTED``) an op of a model before-hook that
    would remove, replace, move or re-field an existing message, add one that is not a plain
    ``system`` / ``user`` message, or replace the payload or its message list whole.

    ``messages`` are the event's messages. The ops are walked in order over the messages' ids,
    as JSON Patch applies them, so an index always means the message the hook saw there.
    """
    slots: list[Mapping[str, Any] | None] = list(messages)
    for op in ops:
        tokens = split_pointer(op.path)
        if tokens[:1] != ("payload",):
            continue
        if len(tokens) == 1:
            raise _protected(f"{op.op} {op.path!r}: the model request cannot be replaced "
                             "whole; change its fields")
        if tokens[1] != "messages":
            continue
        if len(tokens) == 2:
            raise _protected(f"{op.op} {op.path!r}: the message list cannot be replaced or "
                             "removed; edit a message's /content or add a message")
        token = tokens[2]
        if len(tokens) == 3:
            if op.op == "add":
                _check_added(op)
                index = len(slots) if token == "-" else _index(token, op.path, len(slots) + 1)
                slots.insert(index, _NEW)
                continue
            index = _index(token, op.path, len(slots))
            if slots[index] is not _NEW:
                raise _protected(f"{op.op} {op.path!r}: {_name(slots[index])} cannot be "
                                 "removed or replaced; edit its /content (a recorded change)")
            if op.op == "remove":
                del slots[index]
            else:
                _check_added(op)
            continue
        index = _index(token, op.path, len(slots))
        message = slots[index]
        if message is _NEW:
            continue
        if tokens[3:] != ("content",) or op.op == "remove":
            raise _protected(f"{op.op} {op.path!r}: only the /content of {_name(message)} may "
                             "be changed")
        emptied = op.value is None or (isinstance(op.value, str) and not op.value.strip())
        if message.get("role") == "user" and emptied:  # (a value of another type: the schema)
            raise _protected(f"{op.op} {op.path!r}: the user's input cannot be emptied or "
                             "dropped; redact it instead")


def _check_added(op: PatchOp) -> None:
    value = op.value
    if not isinstance(value, Mapping) or value.get("role") not in _ADDABLE_ROLES:
        raise _protected(f"{op.op} {op.path!r}: a hook may add only a system or user message")
    extra = set(value) - {"role", "content"}
    if extra:
        raise _protected(f"{op.op} {op.path!r}: an added message has only role and content "
                         f"(not {sorted(extra)})")


def _index(token: str, path: str, limit: int) -> int:
    if not token.isdigit() or (token.startswith("0") and token != "0") or int(token) >= limit:
        raise PatchInvalid("HOOK_PATCH_INVALID", f"{path!r}: {token!r} is not an index of the "
                           "message list")
    return int(token)


def _name(message: Mapping[str, Any] | None) -> str:
    assert message is not None
    mid = message.get("id")
    return f"the {message.get('role')} message" + (f" {mid!r}" if mid else "")


def _protected(message: str) -> PatchInvalid:
    return PatchInvalid(HOOK_PATCH_PROTECTED, message)
