"""Protocol adapters: ``ModelAdapter`` implementations on the official ``openai`` SDK.

``openai_chat`` (Chat Completions) and ``openai_responses`` (Responses API) each send one
request per Attempt and yield provider events; provider presets choose the protocol and
supply the body builder and reasoning extractor. ``adapter_for`` picks by
``Connection.protocol``.
"""

from __future__ import annotations

from openai import AsyncOpenAI

from agentloom.models.adapters.openai_chat import (
    OpenAIAdapterBase,
    OpenAIChatAdapter,
    build_chat_body,
    chat_message,
    make_client,
)
from agentloom.models.adapters.openai_responses import (
    OpenAIResponsesAdapter,
    build_responses_body,
    responses_input,
)
from agentloom.models.ports import Connection

__all__ = [
    "OpenAIAdapterBase",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "adapter_for",
    "build_chat_body",
    "build_responses_body",
    "chat_message",
    "make_client",
    "responses_input",
]


def adapter_for(
    connection: Connection, *, client: AsyncOpenAI | None = None
) -> OpenAIChatAdapter | OpenAIResponsesAdapter:
    """The adapter for ``connection.protocol`` (one per connection and event loop)."""
    if connection.protocol == "responses":
        return OpenAIResponsesAdapter(connection, client=client)
    return OpenAIChatAdapter(connection, client=client)
