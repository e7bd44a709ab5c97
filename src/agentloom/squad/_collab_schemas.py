"""The argument schemas and descriptions of the collaboration tools (``squad.collab_tools``).

Owns: what a model is told of each ``collab.*`` tool. Does not own: what a call does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DESCRIPTIONS", "SCHEMAS"]

_NAME: dict[str, Any] = {"type": "string", "minLength": 1}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


SCHEMAS: dict[str, dict[str, Any]] = {
    "collab.post": _object({"to": _NAME, "body": {}}, ("to", "body")),
    "collab.read": _object({"unread_only": {"type": "boolean"},
                            "mark_read": {"type": "boolean"}}),
    "collab.handoff": _object({"to": _NAME, "payload": {}}, ("to", "payload")),
    "collab.accept": _object({"handoff_id": _NAME}),
    "collab.claim": _object({"task_id": _NAME}, ("task_id",)),
    "collab.update": _object({"task_id": _NAME, "status": _NAME, "data": {},
                              "expect_revision": {"type": "integer", "minimum": 0}},
                             ("task_id",)),
}
"""Each tool's JSON Schema (bodies, payloads and task data: any JSON value)."""

DESCRIPTIONS: dict[str, str] = {
    "collab.post": "Post a message (body: any JSON) to another node of this workflow run.",
    "collab.read": "Read this node's inbox (default: unread messages only, marked read).",
    "collab.handoff": "Hand work (payload: any JSON) to another node of this workflow run "
                      "('*': any node may accept it); returns its handoff_id.",
    "collab.accept": "Accept a pending handoff (by handoff_id; without one: the oldest "
                     "pending for this node); exactly one acceptor wins.",
    "collab.claim": "Claim a task of this run's board for this node (created if absent).",
    "collab.update": "Write a task of this run's board (status, data), compare-and-set on "
                     "expect_revision when given.",
}
