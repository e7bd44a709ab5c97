"""``HookKind``: everything one hook handler kind is, in one value — what
``register_hook_kind`` takes and ``hooks.handlers.registry`` lists.

::

    HookKind(name="grpc",
             config=GrpcHandlerConfig,     # pydantic model of its `handler:` keys (YAML)
             spec=GrpcHookHandler,         # frozen dataclass: what a compiled HookSpec holds
             from_config=...,              # (config model, config file's folder) -> spec
             runner=GrpcHookRunner)        # makes the runner each HookManager uses (optional)

Owns: the shape of a kind. Does not own: the registry (``registry``), running hooks
(``HookManager``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from agentloom.config.handler_kinds import HookHandlerConfig
from agentloom.hooks.spec import HookHandler

if TYPE_CHECKING:
    from agentloom.hooks.runner import HookRunner

C = TypeVar("C", bound=HookHandlerConfig)
H = TypeVar("H", bound=HookHandler)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookKind(Generic[C, H]):
    """One handler kind: its ``name`` (what ``kind:`` says), its config model ``config`` (a
    ``HookHandlerConfig`` declaring ``kind: Literal[name]``), its spec class ``spec`` (a
    ``HookHandler`` whose ``kind`` defaults to ``name``), ``from_config`` turning a validated
    config (and the config file's folder) into a spec, and ``runner``, called once per
    ``HookManager`` to make the kind's ``HookRunner`` — ``None`` when each runtime passes its
    own (``HookManager(runners=…)``, ``Runtime(hook_runners=…)``)."""

    name: str
    config: type[C]
    spec: type[H]
    from_config: Callable[[C, Path], H]
    runner: Callable[[], HookRunner] | None = None

    def build(self, config: HookHandlerConfig, base_dir: Path) -> HookHandler:
        """The spec of ``config``, a validated handler of this kind.

        Raises:
            TypeError: ``config`` is not this kind's config model.
        """
        if not isinstance(config, self.config):
            raise TypeError(f"a {self.name!r} handler needs a {self.config.__name__}, "
                            f"not a {type(config).__name__}")
        return self.from_config(config, base_dir)
