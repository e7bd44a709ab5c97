"""ToolManager: the one owner of ``tool`` requests; maps a spec's ``handler_ref`` to its handler."""

from __future__ import annotations

from agentloom.catalog import CapabilitySpec
from agentloom.errors import RegistrationError
from agentloom.pipeline.ports import CapabilityHandler


class ToolManager:
    """The one owner of ``tool`` requests on the bus: maps a catalog spec's ``handler_ref`` to
    its registered handler (one handler per reference). Runs nothing itself: the pipeline
    calls the handler it returns."""

    def __init__(self) -> None:
        self._handlers: dict[str, CapabilityHandler] = {}

    def register(self, handler_ref: str, handler: CapabilityHandler) -> None:
        if handler_ref in self._handlers:
            raise RegistrationError(f"a handler is already registered as {handler_ref!r}")
        missing = [t for t in ("rerunnable", "recoverable") if not hasattr(handler, t)]
        if missing:
            raise RegistrationError(
                f"handler {type(handler).__name__} of {handler_ref!r} does not declare "
                f"{' and '.join(missing)}: subclass agentloom.pipeline.ports.CapabilityHandler "
                "(both default to False) or set them as class attributes")
        self._handlers[handler_ref] = handler

    def handler_for(self, spec: CapabilitySpec) -> CapabilityHandler | None:
        return self._handlers.get(spec.handler_ref)
