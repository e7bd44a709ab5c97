"""Model tests run against the scripted OpenAI-compatible server on 127.0.0.1: the real
SDK, real HTTP, real SSE — only the provider is fake."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agentloom.models.adapters import OpenAIChatAdapter, OpenAIResponsesAdapter
from agentloom.models.ports import AttemptInfo, Connection
from agentloom.models.types import Message, ModelRequest, ToolDef
from agentloom.testing.openai_server import ScriptedOpenAIServer

API_KEY = "sk-test-0123456789abcdef"
MODEL = "test-model"
WEATHER = ToolDef(
    name="get_weather", description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def request(*, tools: tuple[ToolDef, ...] = (WEATHER,), **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="What is the weather in Paris?"),),
                        tools=tools, **kwargs)


def attempt(**kwargs: Any) -> AttemptInfo:
    """Short clocks and a run deadline that bounds every test, whatever it scripts."""
    kwargs.setdefault("first_output_timeout_s", 5.0)
    kwargs.setdefault("deadline", time.time() + 30.0)
    return AttemptInfo(**kwargs)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def connection(server: ScriptedOpenAIServer) -> Connection:
    return Connection(base_url=server.base_url, api_key=API_KEY, model=MODEL)


@pytest.fixture
async def chat(connection: Connection) -> AsyncIterator[OpenAIChatAdapter]:
    adapter = OpenAIChatAdapter(connection)
    yield adapter
    await adapter.aclose()


@pytest.fixture
async def responses(server: ScriptedOpenAIServer) -> AsyncIterator[OpenAIResponsesAdapter]:
    adapter = OpenAIResponsesAdapter(
        Connection(base_url=server.base_url, api_key=API_KEY, model=MODEL, protocol="responses"))
    yield adapter
    await adapter.aclose()
