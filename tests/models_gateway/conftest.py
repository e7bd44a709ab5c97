from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing.openai_server import ScriptedOpenAIServer

from .support import Gateway, gateway


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
async def make(store_url: str, tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Gateway]]]:
    made: list[Gateway] = []

    async def factory(*args: Any, **kwargs: Any) -> Gateway:
        g = await gateway(store_url, tmp_path, *args, **kwargs)
        made.append(g)
        return g

    yield factory
    for g in made:
        await g.kernel.models.aclose()
        g.kernel.close()
