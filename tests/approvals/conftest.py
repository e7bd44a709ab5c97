"""The approval tests' harness: the pipeline tests' ``Harness`` (a kernel, a counting tool, a
run) on a real SQLite file and on PostgreSQL, each in a fresh schema."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from tests.pipeline.support import Harness, harness


@pytest.fixture
async def make(durable_store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    made: list[Harness] = []

    async def factory(*args: Any, **kwargs: Any) -> Harness:
        h = await harness(durable_store_url, *args, **kwargs)
        made.append(h)
        return h

    yield factory
    for h in made:
        h.kernel.close()
