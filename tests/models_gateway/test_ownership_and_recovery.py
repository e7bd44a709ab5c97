"""The ModelManager is the one owner of ``model`` requests; model connections are published in
every role's catalog and unreachable as tools; a stored call is returned again, never re-run;
a stop and a crash mid-Attempt are reported, never retried or passed off as a response."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.errors import ConfigError, RegistrationError
from agentloom.kernel import Kernel
from agentloom.models.gateway import ModelCallFailed, request_to_payload
from agentloom.models.manager import ModelManager, model_capability
from agentloom.models.offline import ScriptModel, TestModel, parse_script
from agentloom.models.ports import AttemptInfo
from agentloom.models.types import Finish, ModelDescriptor, ModelRequest, ProviderEvent, TextDelta
from agentloom.pipeline.retry import RetryPolicy

from .support import model_hook, request


class Counting(TestModel):
    """The test model, counting the Attempts it served."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        self.attempts += 1
        async for event in super().stream_once(request, attempt):
            yield event


class Hanging:
    """An adapter that sends half a sentence and then never answers."""

    def __init__(self) -> None:
        self.attempts = 0
        self.streaming = asyncio.Event()

    async def stream_once(self, request: ModelRequest, attempt: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        self.attempts += 1
        yield TextDelta("half a sen")
        self.streaming.set()
        await asyncio.Event().wait()

    async def discover(self, connection: Any = None) -> list[ModelDescriptor]:
        return []

    async def aclose(self) -> None:
        pass


def test_the_model_manager_is_the_one_owner_of_model_requests(tmp_path: Path) -> None:
    kernel = Kernel("memory://", workspace_root=tmp_path)
    try:
        with pytest.raises(RegistrationError):
            kernel.bus.register_owner("model", ModelManager())
        kernel.add_model("main", TestModel())
        with pytest.raises(RegistrationError):
            kernel.add_model("main", TestModel())
        with pytest.raises(ConfigError):
            kernel.add_model("not a name", TestModel())
        with pytest.raises(ConfigError):
            kernel.add_model("slow", TestModel(), first_output_timeout_s=0)
        with pytest.raises(RegistrationError, match="add_model"):
            kernel.publish("rel", [model_capability("unknown")], roles={"main": []})
    finally:
        kernel.close()


async def test_model_connections_are_in_every_role_catalog_and_never_reachable_as_tools(make: Any) -> None:
    model = Counting()
    g = await make({"main": model})
    g.kernel.publish("rel2", [g.kernel.model_manager.specs()[0]], roles={"planner": [], "executor": []})
    for role in ("planner", "executor"):
        assert "model_main" in g.kernel.registry.for_role("rel2", role).specs
    as_tool = await g.kernel.bus.request("model_main", request_to_payload(request()), g.ctx)
    assert as_tool.outcome == "failed" and as_tool.error is not None
    assert as_tool.error.code == "NO_HANDLER"
    assert model.attempts == 0


async def test_a_model_missing_from_the_callers_catalog_fails_explicitly(make: Any) -> None:
    g = await make({"main": TestModel()})
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate(model="other")
    assert caught.value.error.category == "not_found"
    assert caught.value.code == "UNKNOWN_CAPABILITY"


async def test_a_model_call_writes_no_tool_records_into_the_role_context(make: Any) -> None:
    g = await make({"main": TestModel()})
    await g.generate()
    assert g.ctx.context_scope is not None
    assert g.kernel.context.view(g.ctx.context_scope) == []


async def test_the_same_logical_key_returns_the_stored_response_without_calling_the_model(
    make: Any,
) -> None:
    model = Counting()
    g = await make({"main": model})
    first = await g.generate(logical_key="turn-1")
    again = await g.generate(logical_key="turn-1")
    assert again == first
    assert model.attempts == 1 and len(g.operations()) == 1


async def test_12_4_a_call_an_after_hook_renames_to_a_tool_not_offered_is_marked_never_runnable(
    make: Any,
) -> None:
    def rename(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/content/0/data/tool_calls/0/name", "value": "rm_rf"}]}

    g = await make({"main": TestModel()}, hooks=[model_hook("rename", rename, timing="after")])
    response = await g.generate()

    (call,) = response.tool_calls
    assert call.name == "rm_rf" and call.problem is not None
    assert call.problem.code == "TOOL_NOT_OFFERED"
    assert "'rm_rf' is not offered" in call.problem.message and "get_weather" in call.problem.message
    assert g.kinds()[-1] == "model.completed"


async def test_12_4_a_tool_a_before_hook_took_out_of_the_offer_is_marked_not_offered(
    make: Any,
) -> None:
    def no_tools(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/tools", "value": []}]}

    g = await make({"main": ScriptModel(parse_script({"turns": [{"tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Paris"}}]}]}, source="inline"))},
        hooks=[model_hook("no-tools", no_tools)])
    response = await g.generate()

    (call,) = response.tool_calls
    assert call.problem is not None and call.problem.code == "TOOL_NOT_OFFERED"
    assert "No tools are offered to you" in call.problem.message


async def test_a_stop_during_the_stream_is_cancelled_not_retried_and_keeps_nothing_as_a_response(
    make: Any,
) -> None:
    model = Hanging()
    g = await make({"main": model}, retry=RetryPolicy(enabled=True, max_attempts=3, interval_s=0.0))
    call = asyncio.ensure_future(g.generate())
    async with asyncio.timeout(10):
        await model.streaming.wait()
    g.ctx.cancel.set("user stop")
    with pytest.raises(ModelCallFailed) as caught:
        async with asyncio.timeout(10):
            await call
    assert caught.value.outcome == "cancelled"
    assert model.attempts == 1
    (op,) = g.operations()
    assert op["outcome"] == "cancelled" and op["data"]["result"] is None


class HangsOnce(Hanging):
    """Hangs on its first Attempt (the process "dies" there), answers on the next."""

    async def stream_once(self, request: ModelRequest, attempt: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        if self.attempts == 0:
            async for event in super().stream_once(request, attempt):
                yield event
        self.attempts += 1
        yield TextDelta("a whole answer")
        yield Finish("stop")


async def test_s9_a_model_attempt_lost_in_a_crash_leaves_nothing_and_is_issued_again(
    make: Any,
) -> None:
    """Issue #5: a model call interrupted before its raw response was saved is re-issued as a
    new Attempt (generation has no external side effect). Without before-hooks its intent is
    committed with its result, so a crash mid-Attempt leaves no operation at all."""
    model = HangsOnce()
    g = await make({"main": model})
    call = asyncio.ensure_future(g.generate(logical_key="turn-1"))
    async with asyncio.timeout(10):
        await model.streaming.wait()
    call.cancel()  # the process "dies" mid-Attempt: nothing was committed for this call
    with pytest.raises(asyncio.CancelledError):
        await call
    assert g.operations() == []
    assert await g.kernel.recover(g.ctx) == []

    response = await g.generate(logical_key="turn-1")
    assert response.text == "a whole answer" and model.attempts == 2
    (op,) = g.operations()
    assert op["outcome"] == "succeeded" and op["data"]["attempts"] == 1
    assert "half a sen" not in str(op["data"]["raw"])  # never spliced with the lost Attempt


async def test_s9_a_model_attempt_lost_after_its_intent_was_saved_is_a_new_attempt_on_recovery(
    make: Any,
) -> None:
    """With a before-hook the intent is committed first; recovery marks the lost Attempt and
    sends the request again as Attempt 2 — never ``unknown`` for a generation."""
    model = HangsOnce()
    g = await make({"main": model}, hooks=[model_hook("allow", lambda event: {"decision": "allow"})])
    call = asyncio.ensure_future(g.generate(logical_key="turn-1"))
    async with asyncio.timeout(10):
        await model.streaming.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    (op,) = g.operations()
    assert op["phase"] == "attempt_started" and op["outcome"] is None

    (recovered,) = await g.kernel.recover(g.ctx)
    assert recovered.outcome == "succeeded" and recovered.attempts == 2
    attempts = g.kernel.store.query("attempts", {"operation_id": op["operation_id"]},
                                    order_by=("attempt_no",))
    assert [a["status"] for a in attempts] == ["lost", "succeeded"]
    assert (await g.generate(logical_key="turn-1")).text == "a whole answer"
    assert model.attempts == 2  # the stored result is returned, not generated a third time
