"""A cancel token: set once, observed by waiters and by callbacks (no polling).

Owns: ``CancelToken``, the one stop signal a run, a call, a hook and a model stream share.
Does not own: what a stop means for a run (``agent/``) or for a call (``pipeline/``).
It sits in the core so every layer may observe a stop without importing the pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class CancelToken:
    """Cooperative cancellation for one run (stop) or one call."""

    __slots__ = ("_callbacks", "_event", "reason")

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None
        self.reason: str | None = None

    @property
    def is_set(self) -> bool:
        return self.reason is not None

    def set(self, reason: str = "stopped") -> None:
        if self.reason is not None:
            return
        self.reason = reason
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the token is set (at once if it already is); returns a remover."""
        if self.reason is not None:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
            if self.reason is not None:
                self._event.set()
        await self._event.wait()
