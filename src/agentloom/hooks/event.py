"""HookEvent: the frozen, typed event one hook receives (000 §5.1).

Owns: the event's fields, the deep read-only view of its nested values (``freeze``), and the
read-only mapping access kept for hooks written against the event as a dict. Does not own:
what goes into an event — the pipeline builds it for each hook point — nor what a hook may
patch (``hooks.patch``, ``hooks.shapes``)::

    pipeline: event dict ──► HookManager.run: HookEvent.from_mapping (freezes nested values)
                                  └──► runner.run(spec, event) ──► the hook: event.payload,
                                                                   event["payload"], dict(event)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, get_args

from agentloom.hooks.spec import Timing

_KEYS = ("timing", "event", "capability", "exposed_name", "role", "run_id", "operation_id",
         "purpose", "payload", "payload_version", "proposed_payload")
# The optional keys, in this order, each present only when set: ``node`` only for a call made
# for a workflow node, ``context`` only when the call has a context record, ``result`` only
# after execution — so an event without them has exactly the keys the dict had.
_OPTIONAL = ("node", "context", "result")
_KNOWN = frozenset((*_KEYS, *_OPTIONAL))
# The mapping's keys by (has a node, has a context reference, after execution), made once.
_PRESENT: dict[tuple[bool, ...], tuple[str, ...]] = {
    (n, c, r): (*_KEYS, *(k for k, on in zip(_OPTIONAL, (n, c, r), strict=True) if on))
    for n in (False, True) for c in (False, True) for r in (False, True)}
_TIMINGS: tuple[Timing, ...] = get_args(Timing)


# Not catalog's ``freeze_json`` on purpose: hooks see lists as tuples (pinned since 13.3) and
# any value an event carries, where ``freeze_json`` admits plain JSON only and raises otherwise.
def freeze(value: Any) -> Any:
    """A deep read-only view: mappings become ``MappingProxyType``, lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class HookEvent(Mapping[str, Any]):
    """What one hook sees of the call it intercepts. Frozen: setting a field raises
    ``FrozenInstanceError``; nested values are read-only mappings and tuples, so changing
    them raises ``TypeError`` — a hook changes the call only through its decision's patches.

    Also a read-only ``Mapping`` with the same keys and values as its fields (``event["payload"]``,
    ``event.get("purpose")``, ``"result" in event``, ``dict(event)``), for hooks written against
    the event as a dict. ``node`` is a key only for a call made for a workflow node,
    ``context`` only when the call has a context record, and ``result`` only after execution;
    equality compares the items, as for any mapping.
    """

    timing: Timing
    """``before`` (the request) or ``after`` (the response)."""
    event: str
    """The event type: ``tool``, ``model``, ``delegation``, ``context``, …"""
    capability: str
    """The capability key (``fs.write``)."""
    exposed_name: str
    """The name the model used for the capability (``fs_write``)."""
    role: str | None
    run_id: str
    operation_id: str
    purpose: str | None
    """Why the call is made, e.g. ``compaction`` for a model call; ``None`` for most calls."""
    payload: Mapping[str, Any]
    """The request's payload (a tool's arguments) as accepted so far."""
    payload_version: int
    """0 for the proposal, +1 per accepted payload patch."""
    proposed_payload: Mapping[str, Any]
    """The payload as proposed (a model's arguments); never changes."""
    node: Mapping[str, Any] | None = None
    """``{"workflow_run_id", "name", "attempt"}``: the workflow node the call is made for (issue
    37), or ``None`` (then not a key of the mapping) for a call made for no node."""
    context: Mapping[str, Any] | None = None
    """``{"call_record": {"record_id", "revision"}}``: this call's context record, or ``None``
    (then not a key of the mapping) when the call has no context scope."""
    result: Mapping[str, Any] | None = None
    """After execution: the result (``status``, ``content``, ``error``, …); ``None`` (and not
    a key of the mapping) before it."""

    @classmethod
    def from_mapping(cls, event: Mapping[str, Any]) -> HookEvent:
        """The event of the pipeline's event mapping, nested values frozen (``freeze``). A key
        that is not a field, or a ``timing`` other than before / after, is a ``ValueError``:
        the pipeline and this class disagree on the event's shape, and no hook may miss a key."""
        unknown = event.keys() - _KNOWN
        if unknown:
            raise ValueError(f"hook event: unexpected keys {sorted(unknown)}")
        timing = event["timing"]
        if timing not in _TIMINGS:
            raise ValueError(f"hook event: timing must be one of {_TIMINGS}, got {timing!r}")
        node = event.get("node")
        context = event.get("context")
        result = event.get("result")
        return cls(
            timing=timing,
            event=event["event"],
            capability=event["capability"],
            exposed_name=event["exposed_name"],
            role=event["role"],
            run_id=event["run_id"],
            operation_id=event["operation_id"],
            purpose=event["purpose"],
            payload=freeze(event["payload"]),
            payload_version=event["payload_version"],
            proposed_payload=freeze(event["proposed_payload"]),
            node=None if node is None else freeze(node),
            context=None if context is None else freeze(context),
            result=None if result is None else freeze(result),
        )

    def _keys(self) -> tuple[str, ...]:
        return _PRESENT[self.node is not None, self.context is not None, self.timing == "after"]

    def __getitem__(self, key: str) -> Any:
        if key in self._keys():
            return getattr(self, key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())
