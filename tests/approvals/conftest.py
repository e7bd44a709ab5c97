"""The approval tests' harness: the pipeline tests' ``Harness`` (a kernel, a counting tool, a
run) on a real SQLite file and on PostgreSQL, each in a fresh schema."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from tests.pipeline.support import Harness, harnesses


@pytest.fixture
async def make(durable_store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    async with harnesses(durable_store_url) as factory:
        yield factory
