"""The hook handler kinds: one registry from which config parsing, the ``HookManager``'s
runners and assembly are derived.

::

    BUILTIN_KINDS = (python.KIND, command.KIND, http.KIND, mcp.KIND)   one line per kind
    register_hook_kind(KIND)  ── its config model ─► config.handler_kinds (load_config checks it)
                              ── its spec, from_config ─► handler_spec (configured handler → spec)
                              ── its runner ─► default_runners (each HookManager's)

A kind is one module (``hooks/handlers/<kind>.py``, or a module of your own): its spec (a
``HookHandler``), its runner (a ``HookRunner``), its ``HookKind`` — and its config model,
which for the built-in kinds lives in ``config.handler_kinds`` because config is core and may
not import hooks. A kind registered from outside the package is configured, checked, compiled
and run exactly as a built-in one (docs/hooks.md, "Adding a handler kind").

Owns: the list of kinds and what is derived from it. Does not own: any kind's behaviour,
running a hook (``HookManager``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from agentloom.config.handler_kinds import (
    HookHandlerConfig,
    register_handler_config,
    unregister_handler_config,
)
from agentloom.errors import ConfigError
from agentloom.hooks.handlers import command, http, mcp, python
from agentloom.hooks.handlers.kind import HookKind
from agentloom.hooks.spec import HookHandler

if TYPE_CHECKING:
    from agentloom.hooks.runner import HookRunner

__all__ = ["BUILTIN_KINDS", "build_handler", "default_runners", "handler_spec", "hook_kinds",
           "register_hook_kind", "unregister_hook_kind"]

BUILTIN_KINDS: tuple[HookKind[Any, Any], ...] = (python.KIND, command.KIND, http.KIND, mcp.KIND)
"""The kinds every runtime has (000 §5.4), ``python`` (the default) first."""

_KINDS: dict[str, HookKind[Any, Any]] = {}


def register_hook_kind(kind: HookKind[Any, Any]) -> None:
    """Add a handler kind: hooks may then say ``handler: {kind: <name>, …}`` in a configuration
    (checked by its config model at load time), hold its spec, and run on its runner. Import
    the module that registers it before loading a configuration that uses it. Registering the
    same ``HookKind`` again does nothing.

    Raises:
        ValueError: the name is another kind's, or the config model or the spec does not
            declare ``kind`` as the name.
    """
    if _KINDS.get(kind.name, kind) != kind:
        raise ValueError(f"hook handler kind {kind.name!r} is registered already")
    spec_kind = {f.name: f.default for f in dataclasses.fields(kind.spec)}.get("kind")
    if spec_kind != kind.name:
        raise ValueError(f"{kind.spec.__qualname__} must declare kind: Literal[{kind.name!r}] "
                         f"= {kind.name!r}")
    register_handler_config(kind.name, kind.config)
    _KINDS[kind.name] = kind


def unregister_hook_kind(name: str) -> None:
    """Forget a kind added with ``register_hook_kind`` (tests, a plugin unloaded).

    Raises:
        ValueError: ``name`` is a built-in kind.
    """
    unregister_handler_config(name)
    _KINDS.pop(name, None)


def hook_kinds() -> Mapping[str, HookKind[Any, Any]]:
    """Every registered kind by name, built-in kinds first (a read-only view)."""
    return MappingProxyType(_KINDS)


def default_runners() -> dict[str, HookRunner]:
    """A new runner of every kind that makes its own (what a ``HookManager`` starts with)."""
    return {name: kind.runner() for name, kind in _KINDS.items() if kind.runner is not None}


def handler_spec(config: HookHandlerConfig, base_dir: Path) -> HookHandler:
    """The spec of a configured hook handler (``HookConfig.handler``), its kind's
    ``from_config``; ``base_dir`` is the config file's folder (a skill's folder for a skill's
    hooks), where a command hook starts.

    Raises:
        ConfigError: the kind's config model was registered without its kind
            (``register_handler_config`` alone): there is nothing to run it.
    """
    kind = _KINDS.get(config.kind)
    if kind is None:
        raise ConfigError(f"hook handler kind {config.kind!r} has a config model but no spec or "
                          "runner; register it with agentloom.hooks.register_hook_kind")
    return kind.build(config, base_dir)


def build_handler(*, kind: str = "python", **values: Any) -> HookHandler:
    """The spec of ``kind`` built from its fields (``HandlerRef(…)``).

    Raises:
        ValueError: ``kind`` is not registered, or the fields do not fit it.
        TypeError: a field the kind does not have.
    """
    found = _KINDS.get(kind)
    if found is None:
        raise ValueError(f"unknown handler kind {kind!r}; registered kinds: {', '.join(_KINDS)}")
    spec: HookHandler = found.spec(**values)
    return spec


for _kind in BUILTIN_KINDS:
    register_hook_kind(_kind)
