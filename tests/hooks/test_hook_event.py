"""Issue 13 point 3: a hook receives a frozen, typed ``HookEvent`` — and hooks written against
the event as a dict keep working, with the same keys and values as before.

Every test drives real hooks through a ``Kernel`` on a SQLite store and the real pipeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.pipeline.support import Harness, harness, hook

from agentloom.hooks import HookEvent

BEFORE_KEYS = ["timing", "event", "capability", "exposed_name", "role", "run_id", "operation_id",
               "purpose", "payload", "payload_version", "proposed_payload", "context"]


@pytest.fixture
async def make(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    made: list[Harness] = []

    async def factory(*args: Any, **kwargs: Any) -> Harness:
        h = await harness(f"sqlite:///{tmp_path / 'agentloom.db'}", *args, **kwargs)
        made.append(h)
        return h

    yield factory
    for h in made:
        h.kernel.close()


def refused(change: Callable[[], Any]) -> str:
    """The name of the exception ``change`` raised, or ``"changed"`` when it went through."""
    try:
        change()
    except Exception as exc:
        return type(exc).__name__
    return "changed"


def set_item(target: Any, key: Any, value: Any) -> None:
    target[key] = value


def statuses(h: Harness, operation_id: str) -> dict[str, str]:
    return {r["hook_id"]: r["status"] for r in h.hook_rows(operation_id)}


async def test_13_3_a_python_hook_receives_a_frozen_hook_event_with_the_documented_fields(
    make: Any,
) -> None:
    seen: dict[str, Any] = {}

    def before(event: HookEvent) -> dict[str, Any]:
        seen["before"] = event
        seen["attributes"] = (event.timing, event.event, event.capability, event.exposed_name,
                              event.role, event.purpose, event.payload_version)
        seen["payload"] = (event.payload["text"], event.payload["items"],
                           event.proposed_payload["text"], event.result)
        seen["call_record"] = event.context["call_record"] if event.context else None
        seen["refused"] = {
            "set field": refused(lambda: setattr(event, "timing", "after")),
            "delete field": refused(lambda: delattr(event, "payload")),
            "new attribute": refused(lambda: setattr(event, "extra", 1)),
            "set key": refused(lambda: set_item(event, "timing", "after")),
            "set payload key": refused(lambda: set_item(event.payload, "text", "x")),
            "set in list": refused(lambda: set_item(event.payload["items"], 0, 9)),
            "set in context": refused(lambda: set_item(event["context"], "call_record", {})),
        }
        return {"decision": "allow"}

    async def after(event: HookEvent) -> dict[str, Any]:
        seen["after"] = (type(event), event.timing, event.result is not None
                         and event.result["status"], event.payload["text"])
        return {"decision": "allow"}

    h = await make([hook("before", before), hook("after", after, timing="after")])
    result = await h.call({"text": "hi", "items": [1, 2]})

    assert result.outcome == "succeeded"
    assert statuses(h, result.operation_id) == {"before": "succeeded", "after": "succeeded"}
    assert isinstance(seen["before"], HookEvent)
    assert seen["attributes"] == ("before", "tool", "demo.echo", "demo_echo", "main", None, 0)
    assert seen["payload"] == ("hi", (1, 2), "hi", None)
    assert seen["before"].run_id == h.lease.run_id
    assert seen["before"].operation_id == result.operation_id
    assert seen["call_record"]["record_id"] == f"call:{result.operation_id}"
    refusals = seen["refused"]
    assert "changed" not in refusals.values(), refusals  # no change goes through
    assert (refusals["set field"], refusals["delete field"]) == ("FrozenInstanceError",) * 2
    assert (refusals["set key"], refusals["set payload key"], refusals["set in list"],
            refusals["set in context"]) == ("TypeError",) * 4
    assert seen["after"] == (HookEvent, "after", "succeeded", "hi")
    assert h.tool.calls[0]["arguments"] == {"text": "hi", "items": [1, 2]}


async def test_13_3_item_assignment_on_the_event_raises_type_error_as_on_the_old_mapping(
    make: Any,
) -> None:
    seen: dict[str, str] = {}

    def assign(event: Any) -> dict[str, Any]:
        seen["event"] = refused(lambda: event.update({"timing": "after"}))
        try:
            event["timing"] = "after"
        except TypeError:
            seen["item"] = "TypeError"
        try:
            del event["payload"]
        except TypeError:
            seen["del"] = "TypeError"
        return {"decision": "allow"}

    h = await make([hook("assign", assign)])
    result = await h.call({"text": "hi"})

    assert statuses(h, result.operation_id) == {"assign": "succeeded"}
    assert seen == {"event": "AttributeError", "item": "TypeError", "del": "TypeError"}


async def test_13_3_dict_style_hooks_keep_working_with_the_same_keys_and_values(
    make: Any,
) -> None:
    seen: dict[str, Any] = {}

    def dict_style(event: Any) -> dict[str, Any]:
        copied: dict[str, Any] = {}
        copied.update(event)
        seen["before"] = {
            "keys": list(event), "dict": dict(event), "updated": copied, "len": len(event),
            "items": dict(event.items()), "values": list(event.values()),
            "get": (event.get("purpose"), event.get("result", "absent"), event.get("nope", 7)),
            "in": ("payload" in event, "result" in event, "nope" in event),
            "equal": event == dict(event),
            "missing": refused(lambda: event["result"]),
        }
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/text", "value": event["payload"]["text"] + "!"}]}

    def dict_after(event: Any) -> dict[str, Any]:
        seen["after"] = (list(event), event["result"]["content"], event["payload"]["text"],
                         event.get("payload_version"), "result" in event)
        return {"decision": "allow"}

    h = await make([hook("dict-style", dict_style), hook("dict-after", dict_after, timing="after")])
    result = await h.call({"text": "hi"})

    assert statuses(h, result.operation_id) == {"dict-style": "succeeded", "dict-after": "succeeded"}
    assert h.tool.calls[0]["arguments"] == {"text": "hi!"}  # the patch built from the mapping
    before = seen["before"]
    assert before["keys"] == BEFORE_KEYS
    assert list(before["dict"]) == BEFORE_KEYS and before["updated"] == before["dict"]
    assert before["items"] == before["dict"] and before["values"] == list(before["dict"].values())
    assert before["len"] == len(BEFORE_KEYS)
    assert before["get"] == (None, "absent", 7)
    assert before["in"] == (True, False, False)
    assert before["equal"] is True and before["missing"] == "KeyError"
    assert before["dict"]["payload"] == {"text": "hi"}
    assert before["dict"]["operation_id"] == result.operation_id
    keys, content, text, version, has_result = seen["after"]
    assert keys == [*BEFORE_KEYS, "result"] and has_result is True
    assert content == ({"type": "json", "data": {"echo": {"text": "hi!"}}},)
    assert (text, version) == ("hi!", 1)


async def test_13_3_mapping_access_and_attributes_give_the_same_values(make: Any) -> None:
    pairs: list[tuple[str, bool]] = []

    def compare(event: HookEvent) -> dict[str, Any]:
        pairs.extend((key, event[key] is getattr(event, key)) for key in event)
        return {"decision": "allow"}

    h = await make([hook("compare", compare), hook("compare-after", compare, timing="after")])
    result = await h.call({"text": "hi"})

    assert statuses(h, result.operation_id) == {"compare": "succeeded",
                                                 "compare-after": "succeeded"}
    assert [k for k, same in pairs if not same] == []
    assert [k for k, _ in pairs] == [*BEFORE_KEYS, *BEFORE_KEYS, "result"]


def test_13_3_an_event_key_the_hook_event_does_not_know_is_refused_not_dropped() -> None:
    event = {"timing": "before", "event": "tool", "capability": "demo.echo",
             "exposed_name": "demo_echo", "role": "main", "run_id": "r", "operation_id": "o",
             "purpose": None, "payload": {}, "payload_version": 0, "proposed_payload": {}}

    assert dict(HookEvent.from_mapping(event)) == event
    with pytest.raises(ValueError, match="unexpected keys \\['attempt'\\]"):
        HookEvent.from_mapping({**event, "attempt": 1})
    with pytest.raises(ValueError, match="timing"):
        HookEvent.from_mapping({**event, "timing": "during"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        HookEvent.from_mapping(event).payload = {}  # type: ignore[misc]
