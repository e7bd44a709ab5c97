"""``result.read``: reading a stored large result, as its own authorised operation.

Authorisation comes from the trusted attempt context (run and role), never from a
path: the reference names an operation's result, and only the run (and role) that
produced it may read it.
"""

from __future__ import annotations

from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.context.blobs import read_blob
from agentloom.errors import OperationError
from agentloom.results import ToolResult, parse_result_ref
from agentloom.store.ports import Store
from agentloom.store.results import get_result
from agentloom.workspace.blobs import FileBlobStore

RESULT_READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result_ref": {"type": "string", "minLength": 1},
        "offset": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1, "maximum": 65536},
    },
    "required": ["result_ref"],
    "additionalProperties": False,
}


def result_read_spec(resource_version_id: str = "builtin") -> Any:
    from agentloom.catalog import CapabilitySpec

    return CapabilitySpec(
        resource_version_id=resource_version_id,
        capability_key="result.read",
        kind="builtin",
        exposed_name="result_read",
        description="Read more of a large earlier result by its result_ref (byte offset and limit).",
        input_schema=RESULT_READ_SCHEMA,
        handler_ref="builtin:result.read",
    )


class ResultReadHandler:
    """The raw handler of ``result.read``: returns a slice of a stored large result named by its
    ``result_ref``. Only the run (and role) that produced the result may read it; the authority
    comes from the trusted attempt context, never from a path."""

    rerunnable = False
    recoverable = False

    def __init__(self, store: Store, blobs: FileBlobStore | None = None) -> None:
        self.store = store
        self.blobs = blobs

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        ref = str(request.arguments.get("result_ref", ""))
        offset = int(request.arguments.get("offset", 0))
        limit = int(request.arguments.get("limit", 16384))
        row = get_result(self.store, ref) if parse_result_ref(ref) is not None else None
        allowed = (
            row is not None
            and row.run_id == context.run_id
            and (row.role is None or row.role == context.role)
        )
        if row is None or not allowed:
            return ToolResult.failure(
                OperationError(
                    code="RESULT_NOT_READABLE",
                    category="permission",
                    message=f"result {ref!r} does not exist or is not readable by this role",
                    external_outcome="not_started",
                )
            )
        chunk: bytes | None = None
        size = 0
        if row.location and self.blobs is not None:
            try:
                chunk, size = self.blobs.read(row.location, offset, limit)
            except (OSError, ValueError):
                chunk = None
        elif (page := read_blob(self.store, row.digest, offset, limit)) is not None:
            chunk, size = page
        if chunk is None:
            return ToolResult.failure(
                OperationError(code="RESULT_BLOB_MISSING", category="not_found",
                               message=f"the content of {ref!r} is missing",
                               external_outcome="not_started")
            )
        if offset > size or (offset == size and size > 0):
            return ToolResult.failure(
                OperationError(code="RESULT_OFFSET_PAST_END", category="validation",
                               message=f"offset {offset} is past the end of {ref!r}, which has "
                               f"{size} bytes; read from an offset below {size}",
                               external_outcome="not_started")
            )
        text = chunk.decode("utf-8", errors="replace")
        end = offset + len(chunk)
        return ToolResult.success(
            {"text": text, "offset": offset, "next_offset": end if end < size else None,
             "size": size}
        )
