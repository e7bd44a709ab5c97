"""Command specs and the registry that holds them, as snapshots (003 F07).

Owns: ``CommandSpec`` (id, params JSON Schema, risk, confirmation, expose-as-tool, handler
reference), its compiled params validator, and ``CommandRegistry``: what goes in is frozen
(``params`` deep-copied and read-only), what comes out is a copy no caller can use to change
the registered definition. Does not own: running a handler (a ``CommandExecutor``), nor the
``commands:`` config shape (``agentloom.config.commands``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentloom.catalog import ArgumentValidator, compile_schema, freeze_json, thaw_json
from agentloom.config.commands import COMMAND_ID, CommandConfig
from agentloom.errors import CatalogError, RegistrationError

__all__ = [
    "COMMAND_RUN_PREFIX",
    "COMMAND_TOOL_PREFIX",
    "CommandHandlerRef",
    "CommandRegistry",
    "CommandSpec",
    "Risk",
    "command_run_key",
    "command_tool_key",
]

Risk = Literal["read", "write", "dangerous"]
RISKS: tuple[str, ...] = ("read", "write", "dangerous")

COMMAND_TOOL_PREFIX = "command."
"""An exposed command is the capability ``command.<id>`` (an agent lists it in ``tools``)."""


COMMAND_RUN_PREFIX = "command-run."
"""Each execution of a command is one pipeline operation of the capability
``command-run.<id>`` (what hooks match); a prefix no ``command.<id>`` tool key can take."""


def command_tool_key(command_id: str) -> str:
    """The capability key of an exposed command: ``command.<id>``."""
    return f"{COMMAND_TOOL_PREFIX}{command_id}"


def command_run_key(command_id: str) -> str:
    """The capability key an execution of the command is recorded under: ``command-run.<id>``."""
    return f"{COMMAND_RUN_PREFIX}{command_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandHandlerRef:
    """What runs a command: ``kind`` ``python`` and ``ref`` ``"module:attr"``. (Not a hook's
    handler: those are ``agentloom.hooks.HookHandler``s.)"""

    kind: Literal["python"] = "python"
    ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandSpec:
    """One command. ``params`` is a JSON Schema 2020-12 object schema, held read-only;
    ``confirm`` ``None`` means "confirm exactly when ``dangerous``" (``needs_confirmation``).

    Raises (on construction):
        CatalogError: ``params`` is not a valid object schema, or ``risk`` / ``id`` is bad, or a
            ``dangerous`` command says ``confirm=False``.
    """

    id: str
    params: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}})
    risk: Risk = "write"
    handler: CommandHandlerRef
    description: str = ""
    confirm: bool | None = None
    confirmation_ttl_s: float = 300.0
    expose_as_tool: bool = False

    def __post_init__(self) -> None:
        if not COMMAND_ID.match(self.id):
            raise CatalogError(f"command id {self.id!r}: a letter, then letters, digits, '_', "
                               "'.' or '-' (at most 100 characters)")
        if self.risk not in RISKS:
            raise CatalogError(f"command {self.id!r}: risk {self.risk!r} is not one of {RISKS}")
        if self.risk == "dangerous" and self.confirm is False:
            raise CatalogError(f"command {self.id!r}: a dangerous command is always confirmed")
        if not self.confirmation_ttl_s > 0:
            raise CatalogError(f"command {self.id!r}: confirmation_ttl_s must be positive")
        params = freeze_json(self.params, where=f"command {self.id!r} params")
        if params.get("type") != "object":
            raise CatalogError(f"command {self.id!r}: params must be an object schema "
                               "(type: object)")
        object.__setattr__(self, "params", params)

    @property
    def needs_confirmation(self) -> bool:
        """A one-time confirmation token is needed before it runs."""
        return self.risk == "dangerous" if self.confirm is None else self.confirm

    @property
    def param_names(self) -> tuple[str, ...]:
        """The declared params (``properties``), in declaration order."""
        return tuple(self.params.get("properties") or ())

    def to_dict(self) -> dict[str, Any]:
        """A plain, mutable copy (JSON)."""
        return {"id": self.id, "description": self.description, "params": thaw_json(self.params),
                "risk": self.risk, "confirm": self.needs_confirmation,
                "confirmation_ttl_s": self.confirmation_ttl_s,
                "expose_as_tool": self.expose_as_tool,
                "handler": {"kind": self.handler.kind, "ref": self.handler.ref}}

    @classmethod
    def from_config(cls, command_id: str, config: CommandConfig) -> CommandSpec:
        return cls(id=command_id, params=config.params, risk=config.risk,
                   handler=CommandHandlerRef(kind=config.handler.kind, ref=config.handler.ref),
                   description=config.description, confirm=config.confirm,
                   confirmation_ttl_s=config.confirmation_ttl_s,
                   expose_as_tool=config.expose_as_tool)


def _copy(spec: CommandSpec) -> CommandSpec:
    """A copy whose ``params`` is its own (read-only) object: mutating or replacing anything of
    a returned spec never reaches the registered one."""
    return replace(spec, params=thaw_json(spec.params))


class CommandRegistry:
    """The commands one process knows, each with its compiled params validator.

    Snapshot isolation (003 F07): ``register`` freezes a copy of the spec (a later change to
    the caller's ``params`` dict changes nothing here); ``get`` / ``specs`` return copies.
    """

    __slots__ = ("_specs", "_validators")

    def __init__(self, specs: Mapping[str, CommandSpec] | None = None) -> None:
        self._specs: dict[str, CommandSpec] = {}
        self._validators: dict[str, ArgumentValidator] = {}
        for spec in (specs or {}).values():
            self.register(spec)

    @classmethod
    def from_config(cls, commands: Mapping[str, CommandConfig]) -> CommandRegistry:
        return cls({name: CommandSpec.from_config(name, c) for name, c in commands.items()})

    def register(self, spec: CommandSpec) -> None:
        """Add ``spec`` (a frozen copy of it).

        Raises:
            RegistrationError: a command with that id is registered already.
            CatalogError: its params schema does not compile.
        """
        if spec.id in self._specs:
            raise RegistrationError(f"command {spec.id!r} is registered already")
        frozen = _copy(spec)
        compiled = compile_schema(frozen.params, origin="config")
        self._validators[spec.id] = ArgumentValidator(compiled)
        self._specs[spec.id] = frozen

    def get(self, command_id: str) -> CommandSpec:
        """A copy of the command ``command_id``.

        Raises:
            KeyError: no such command.
        """
        return _copy(self._specs[command_id])

    def __contains__(self, command_id: object) -> bool:
        return command_id in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._specs))

    def specs(self) -> tuple[CommandSpec, ...]:
        """Copies of every command, in registration order."""
        return tuple(_copy(s) for s in self._specs.values())

    def errors(self, command_id: str, params: Any) -> list[str]:
        """What is wrong with ``params`` for ``command_id`` (``[]``: valid)."""
        return self._validators[command_id].errors(params)

    def peek(self, command_id: str) -> CommandSpec | None:
        """The registered spec itself (read-only throughout: a frozen dataclass whose params
        refuse every change), without the copy ``get`` makes: for the command bus's hot path."""
        return self._specs.get(command_id)
