"""The file tools ``fs.*`` (000 §7.3): each one call into the scoped ``WorkspaceService``.

Argument names are the spec's; model-facing names are generated (``fs.read`` →
``fs_read``). Every refusal comes back as a failed ``ToolResult`` with the service's
stable code and category — the call is recorded like any other, nothing is raised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import AgentLoomError
from agentloom.results import ToolResult
from agentloom.workspace.resolver import WorkspaceResolver
from agentloom.workspace.service import WorkspaceHandle, WorkspaceService

_S: dict[str, Any] = {"type": "string"}
_I: dict[str, Any] = {"type": "integer", "minimum": 0}
_ETAG: dict[str, Any] = {"type": "string", "description": "the etag you read; required to replace"}
_ENTRY_ETAG: dict[str, Any] = {"type": "string",
                               "description": "the etag you read; required for a file, none for a folder"}


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "fs.read": ("Read a UTF-8 text file (offset/limit in characters). Returns content, etag, "
                "next_offset.", _obj(["path"], path=_S, offset=_I, limit={**_I, "minimum": 1})),
    "fs.write": ("Write a file. mode create_only (default) needs the file absent and creates "
                 "missing parent folders unless parents is false; replace needs if_match = the "
                 "etag you read.",
                 _obj(["path", "content"], path=_S, content=_S,
                      mode={"type": "string", "enum": ["create_only", "replace"]},
                      if_match=_ETAG,
                      parents={"type": "boolean",
                               "description": "create missing parent folders (default true)"})),
    "fs.edit": ("Replace old_text with new_text exactly expected_matches times (default 1).",
                _obj(["path", "old_text", "new_text"], path=_S, old_text=_S, new_text=_S,
                     expected_matches={**_I, "minimum": 1}, if_match=_ETAG)),
    "fs.patch": ("Apply a unified diff to one file, atomically.",
                 _obj(["path", "unified_diff"], path=_S, unified_diff=_S, if_match=_ETAG)),
    "fs.list": ("List a folder (sorted, paged with cursor).",
                _obj([], path=_S, cursor=_S, limit={**_I, "minimum": 1})),
    "fs.glob": ("Find paths matching a glob pattern (*, ?, [..], **).",
                _obj(["pattern"], pattern=_S, root=_S, limit={**_I, "minimum": 1})),
    "fs.grep": ("Search file contents for a regex (or literal text).",
                _obj(["pattern"], pattern=_S, paths={"type": "array", "items": _S},
                     literal={"type": "boolean"}, limit={**_I, "minimum": 1})),
    "fs.mkdir": ("Create a folder.", _obj(["path"], path=_S, parents={"type": "boolean"})),
    "fs.move": ("Move or rename a file or folder; never overwrites. A file needs if_match = "
                "the etag you read (a folder takes none).",
                _obj(["src", "dst"], src=_S, dst=_S, if_match=_ENTRY_ETAG)),
    "fs.delete": ("Delete a file or folder. A file needs if_match = the etag you read; a folder "
                  "takes none, and one that is not empty needs recursive true.",
                  _obj(["path"], path=_S, if_match=_ENTRY_ETAG,
                       recursive={"type": "boolean",
                                  "description": "delete a non-empty folder with everything in it"})),
}

Op = Callable[[WorkspaceService, WorkspaceHandle, dict[str, Any]], Awaitable[Any]]

_OPS: dict[str, Op] = {
    "fs.read": lambda s, h, a: s.read(h, a["path"], a.get("offset", 0), a.get("limit")),
    "fs.write": lambda s, h, a: s.write(h, a["path"], a["content"],
                                        mode=a.get("mode", "create_only"),
                                        if_match=a.get("if_match"),
                                        parents=a.get("parents", True)),
    "fs.edit": lambda s, h, a: s.edit(h, a["path"], a["old_text"], a["new_text"],
                                      expected_matches=a.get("expected_matches", 1),
                                      if_match=a.get("if_match")),
    "fs.patch": lambda s, h, a: s.apply_patch(h, a["path"], a["unified_diff"],
                                              if_match=a.get("if_match")),
    "fs.list": lambda s, h, a: s.list(h, a.get("path", "."), cursor=a.get("cursor"),
                                      limit=a.get("limit", 200)),
    "fs.glob": lambda s, h, a: s.glob(h, a["pattern"], root=a.get("root", "."),
                                      limit=a.get("limit", 500)),
    "fs.grep": lambda s, h, a: s.grep(h, a["pattern"], paths=a.get("paths"),
                                      literal=a.get("literal", False), limit=a.get("limit", 200)),
    "fs.mkdir": lambda s, h, a: s.mkdir(h, a["path"], parents=a.get("parents", False)),
    "fs.move": lambda s, h, a: s.move(h, a["src"], a["dst"], if_match=a.get("if_match")),
    "fs.delete": lambda s, h, a: s.delete(h, a["path"], if_match=a.get("if_match"),
                                          recursive=a.get("recursive", False)),
}


def fs_spec(capability_key: str, resource_version_id: str = "builtin") -> CapabilitySpec:
    description, schema = SCHEMAS[capability_key]
    return CapabilitySpec(
        resource_version_id=resource_version_id, capability_key=capability_key, kind="builtin",
        exposed_name=legal_exposed_name(capability_key), description=description,
        input_schema=schema, handler_ref=f"builtin:{capability_key}", schema_origin="config",
    )


class FsHandler:
    """One ``fs.*`` capability over the calling run's workspace."""

    rerunnable = False
    recoverable = False

    def __init__(self, capability_key: str, resolver: WorkspaceResolver) -> None:
        self.capability_key = capability_key
        self.resolver = resolver
        self._op = _OPS[capability_key]

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        try:
            handle = await self.resolver.handle_for(context)
            value = await self._op(self.resolver.service, handle, dict(request.arguments))
        except AgentLoomError as exc:
            return ToolResult(status="failed" if exc.error.external_outcome != "unknown"
                              else "unknown", error=exc.error)
        return ToolResult.success(_plain(value))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not f.name.startswith("_")}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
