"""Protocol adapters: ``ModelAdapter`` implementations on the official ``openai`` SDK.

``openai_chat`` (Chat Completions) and ``openai_responses`` (Responses API) each send one
request per Attempt and yield provider events; provider presets choose the protocol and
supply the body builder and reasoning extractor. ``adapter_for`` picks by
``Connection.protocol`` from ``ADAPTERS``: a new wire protocol is one module here, one line in
``ADAPTERS`` and its name in ``models.ports.WireProtocol`` (docs/architecture.md, "Where a
change goes"). A model that speaks no wire protocol at all is a ``ModelAdapter`` passed as the
agent's ``model`` — no registry needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

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
from agentloom.models.ports import Connection, ModelAdapter, WireProtocol

__all__ = [
    "ADAPTERS",
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


AdapterFactory = Callable[..., ModelAdapter]
"""``factory(connection, client=…)``: the adapter of one connection (and event loop)."""

ADAPTERS: Mapping[WireProtocol, AdapterFactory] = {
    "chat": OpenAIChatAdapter,
    "responses": OpenAIResponsesAdapter,
}
"""``Connection.protocol`` -> the adapter class that speaks it."""


def adapter_for(connection: Connection, *, client: AsyncOpenAI | None = None) -> ModelAdapter:
    """The adapter for ``connection.protocol`` (one per connection and event loop)."""
    return ADAPTERS[connection.protocol](connection, client=client)
