"""How one role's conversation is told to its model (000 §4, §5.3).

The transcript is *derived*: it is rebuilt from the committed operations of the
invocation (model responses, tool results) in turn order, never stored as a second copy.
What the model is told about a tool call is what was executed: when a hook changed the
arguments, the assistant turn shows the executed arguments and the tool message says so.
A call whose outcome is unknown, denied or failed is reported as exactly that.

A result text longer than ``PREVIEW_LIMIT`` characters is cut only when its full text was
stored (the envelope's ``result_ref``, set when it is longer than the context's preview
limit): the cut names that ref and the byte offset to read on from, so the model can always
read the rest. A text the context kept whole (a preview limit above ``PREVIEW_LIMIT``) is
shown whole: no ref to it exists.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentloom.canonical import sorted_json
from agentloom.catalog import CapabilitySpec
from agentloom.models.types import Message, ModelResponse, ToolCall, ToolDef
from agentloom.results import OperationResult

__all__ = ["assistant_message", "tool_defs", "tool_message"]

PREVIEW_LIMIT = 16_384


def tool_defs(specs: Sequence[CapabilitySpec]) -> tuple[ToolDef, ...]:
    """The tools offered to a model: every spec of the role's catalog but model connections."""
    return tuple(
        ToolDef(name=s.exposed_name, description=s.description or s.capability_key,
                parameters=s.input_schema)
        for s in specs if not s.handler_ref.startswith("model:")
    )


def assistant_message(response: ModelResponse, executed: Sequence[OperationResult | None] = (),
                      *, id: str | None = None) -> Message:
    """The assistant turn as history: the tool calls carry the *executed* arguments."""
    calls = []
    for i, call in enumerate(response.tool_calls):
        envelope = executed[i] if i < len(executed) else None
        arguments = call.arguments
        if envelope is not None and envelope.executed_arguments is not None \
                and envelope.executed_arguments != envelope.proposed_arguments:
            arguments = sorted_json(envelope.executed_arguments)
        calls.append(ToolCall(id=call.id, name=call.name, arguments=arguments, index=call.index))
    return Message(role="assistant", content=response.text or None, tool_calls=tuple(calls),
                   reasoning=response.reasoning, reasoning_details=response.reasoning_details,
                   id=id)


def tool_message(call: ToolCall, envelope: OperationResult, *, id: str | None = None) -> Message:
    """The tool message for one call: its real status and a text taken from the result."""
    text = envelope.describe()  # a failure reads "failed: …", "outcome unknown …", "denied …"
    ref = envelope.result_ref
    if ref is not None and len(text) > PREVIEW_LIMIT:
        # the stored text is exactly ``describe()``: the rest starts where ``shown`` ends
        shown = text[:PREVIEW_LIMIT]
        text = (f"{shown}\n[truncated: {len(text)} characters in all; read the rest with "
                f"result_read and result_ref {ref!r} from offset {len(shown.encode())}]")
    if envelope.executed_arguments is not None \
            and envelope.executed_arguments != envelope.proposed_arguments:
        text = (f"{text}\n[note: a hook changed the arguments before execution; executed "
                f"with {sorted_json(envelope.executed_arguments)}]")
    return Message(role="tool", content=text, tool_call_id=call.id, name=call.name, id=id)

