"""The intent registry: the validated, frozen set of specs recognition reads (003 F07).

Specs are immutable values (``IntentSpec`` is frozen, its collections tuples and
``FrozenDict``); the registry keeps them in its own table and hands out the same immutable
objects, so neither the caller that registered a spec nor one that read it back can change what
recognition uses. Each change bumps ``version``; a ``Recognizer`` recompiles its rules when the
version it compiled is old.

Owns: which intent ids exist, their aliases, id / alias / action lookup. Does not own: whether
an action names a command (the ``commands:`` cross-check), recognition.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from agentloom.config.intents import IntentConfig
from agentloom.errors import ConfigError

from .spec import IntentSpec

__all__ = ["IntentRegistry"]


class IntentRegistry:
    """Intent specs by id; an id or alias names exactly one spec."""

    def __init__(self) -> None:
        self._specs: dict[str, IntentSpec] = {}
        self._names: dict[str, str] = {}  # id or alias -> id
        self._lock = threading.Lock()
        self._version = 0

    @classmethod
    def from_config(cls, intents: Mapping[str, IntentConfig]) -> IntentRegistry:
        """A registry holding every entry of ``intents:``.

        Raises:
            ConfigError: an entry that does not build, or an alias naming two intents.
        """
        registry = cls()
        for intent_id, config in intents.items():
            registry.register(IntentSpec.from_config(intent_id, config))
        return registry

    def register(self, spec: IntentSpec) -> None:
        """Add ``spec``.

        Raises:
            ConfigError: not an ``IntentSpec``, or its id or an alias is already taken.
        """
        if not isinstance(spec, IntentSpec):
            raise ConfigError(f"an intent must be an IntentSpec, got {type(spec).__name__}")
        with self._lock:
            for name in (spec.id, *spec.aliases):
                if name in self._names:
                    raise ConfigError(f"intent {spec.id!r}: {name!r} already names intent "
                                      f"{self._names[name]!r}")
            if len(set(spec.aliases)) != len(spec.aliases) or spec.id in spec.aliases:
                raise ConfigError(f"intent {spec.id!r}: an alias is repeated")
            self._specs[spec.id] = spec
            self._names.update({name: spec.id for name in (spec.id, *spec.aliases)})
            self._version += 1

    def get(self, intent_id: str) -> IntentSpec:
        """The spec ``intent_id`` (an id or an alias) names.

        Raises:
            KeyError: no intent has that id or alias.
        """
        with self._lock:
            return self._specs[self._names[intent_id]]

    def specs(self) -> tuple[IntentSpec, ...]:
        """Every spec, in registration order."""
        with self._lock:
            return tuple(self._specs.values())

    def resolve(self, name: str) -> tuple[IntentSpec, ...]:
        """The specs ``name`` may mean: the one it is the id or alias of; else those whose
        action it is (several when intents share an action)."""
        with self._lock:
            if name in self._names:
                return (self._specs[self._names[name]],)
            return tuple(spec for spec in self._specs.values() if spec.action == name)

    @property
    def version(self) -> int:
        """Bumped by every ``register``."""
        return self._version
