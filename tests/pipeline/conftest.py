from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from tests.pipeline.support import Harness, harnesses


@pytest.fixture
async def make(store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    async with harnesses(store_url) as factory:
        yield factory
