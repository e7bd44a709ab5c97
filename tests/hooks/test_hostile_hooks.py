"""Issue 11 points 3-5: nothing a hook does takes the runtime down.

A hook that raises anything (``SystemExit``, ``KeyboardInterrupt``, its own ``CancelledError``),
hangs in a thread, or patches the event with a value of the wrong type fails for itself only;
a real stop of the run still stops it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import pytest
from tests.models_gateway.support import gateway, model_hook, request
from tests.pipeline.support import Harness, harnesses, hook

from agentloom import Kernel
from agentloom.cancel import CancelToken
from agentloom.hooks.runner import PythonHookRunner
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.hooks.threads import MAX_ABANDONED_THREADS
from agentloom.models.offline import TestModel

WAIT_S = 30.0


@pytest.fixture
async def make(durable_store_url: str) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    async with harnesses(durable_store_url) as factory:
        yield factory


class Hostile(BaseException):
    """A BaseException of the hook's own, caught by nothing but a bare ``except``."""


def raising(exc: BaseException, *, coroutine: bool) -> Callable[[Any], Any]:
    if coroutine:
        async def async_hook(event: Any) -> Any:
            raise exc
        return async_hook

    def sync_hook(event: Any) -> Any:
        raise exc
    return sync_hook


def set_text(value: str) -> Callable[[Any], Any]:
    return lambda event: {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/text", "value": value}]}


def statuses(h: Harness, operation_id: str) -> dict[str, str]:
    return {r["hook_id"]: r["status"] for r in h.hook_rows(operation_id)}


async def test_i11_3_a_hook_raising_system_exit_keyboard_interrupt_or_cancelled_error_fails_open(
    make: Any,
) -> None:
    # the hook ref `sys:exit`, imported as configured: sys.exit(event) raises SystemExit
    sys_exit = (HookSpec(hook_id="sys-exit", timing="before", handler=HandlerRef(ref="sys:exit")),
                "tests:unused", sys.exit)
    hostile = {
        "exit-async": raising(SystemExit(3), coroutine=True),
        "interrupt": raising(KeyboardInterrupt(), coroutine=False),
        "interrupt-async": raising(KeyboardInterrupt(), coroutine=True),
        "cancel": raising(asyncio.CancelledError(), coroutine=False),
        "cancel-async": raising(asyncio.CancelledError(), coroutine=True),
        "base": raising(Hostile("mine"), coroutine=False),
    }
    h = await make([sys_exit, *(hook(name, fn) for name, fn in hostile.items()),
                    hook("last", set_text("still ran")),
                    hook("after-exit", sys.exit, timing="after"),
                    hook("after-cancel", raising(asyncio.CancelledError(), coroutine=True),
                         timing="after")])

    result = await asyncio.wait_for(h.call({"text": "hi"}), WAIT_S)

    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0  # nobody cancelled the caller
    assert result.outcome == "succeeded"
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "still ran"}]
    assert result.result.content == result.raw.content
    rows = {r["hook_id"]: r for r in h.hook_rows(result.operation_id)}
    assert {k: r["status"] for k, r in rows.items()} == {
        "sys-exit": "failed", **dict.fromkeys(hostile, "failed"), "last": "succeeded",
        "after-exit": "failed", "after-cancel": "failed"}
    for hook_id, name in [("sys-exit", "SystemExit"), ("exit-async", "SystemExit"),
                          ("interrupt", "KeyboardInterrupt"), ("cancel", "CancelledError"),
                          ("cancel-async", "CancelledError"), ("base", "Hostile")]:
        assert f"raised {name}" in rows[hook_id]["data"]["diagnostic"], hook_id
    assert [o.execution_status for o in h.kernel.hook_outcomes(result.operation_id)][:2] == [
        "failed", "failed"]
    assert h.ops()[0]["outcome"] == "succeeded"


async def test_i11_3_a_real_stop_still_cancels_the_run(make: Any) -> None:
    """A stop of the run (its CancelToken) ends the call at once even while a hook hangs; a
    cancellation of the calling task from outside still cancels it. Neither is a hook failure."""
    release = threading.Event()
    entered: asyncio.Queue[str] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def hang(event: Any) -> Any:
        loop.call_soon_threadsafe(entered.put_nowait, event["payload"]["text"])
        release.wait(WAIT_S * 4)
        return {"decision": "allow"}

    async def hang_async(event: Any) -> Any:  # runs in an event loop of its own, on a thread
        loop.call_soon_threadsafe(entered.put_nowait, event["payload"]["text"])
        await asyncio.Event().wait()

    def gate(event: Any) -> Any:
        return hang(event) if event["payload"]["text"] == "sync" else {"decision": "allow"}

    async def gate_async(event: Any) -> Any:
        if event["payload"]["text"] == "async":
            return await hang_async(event)
        return {"decision": "allow"}

    def gate_after(event: Any) -> Any:
        return hang(event) if event["payload"]["text"] == "after" else {"decision": "allow"}

    # Timeouts far beyond every wait below: only the stop can end these calls in time.
    h = await make([hook("gate", gate, timeout_s=WAIT_S * 4),
                    hook("gate-async", gate_async, timeout_s=WAIT_S * 4),
                    hook("gate-after", gate_after, timing="after", timeout_s=WAIT_S * 4)])
    try:
        for text, hook_id in [("sync", "gate"), ("async", "gate-async"), ("after", "gate-after")]:
            token = CancelToken()
            ctx = h.kernel.invocation_context(h.lease, release_id="rel", cancel=token)
            call = asyncio.ensure_future(h.kernel.bus.request("demo_echo", {"text": text}, ctx))
            assert await asyncio.wait_for(entered.get(), WAIT_S) == text
            token.set("stopped by the user")
            result = await asyncio.wait_for(call, WAIT_S)
            assert result.outcome == "cancelled", text
            assert result.error.code == "RUN_STOPPED"
            assert statuses(h, result.operation_id)[hook_id] == "abandoned"
            if text == "after":
                assert result.raw.status == "succeeded" and "not delivered" in result.describe()
            else:
                assert result.attempts == 0 and result.raw is None and result.result is None
        # the stop came before execution for two calls, after it for the third
        assert [c["arguments"]["text"] for c in h.tool.calls] == ["after"]

        ctx = h.kernel.invocation_context(h.lease, release_id="rel")
        call = asyncio.ensure_future(h.kernel.bus.request("demo_echo", {"text": "async"}, ctx))
        assert await asyncio.wait_for(entered.get(), WAIT_S) == "async"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, WAIT_S)
        assert call.cancelled()
        assert [c["arguments"]["text"] for c in h.tool.calls] == ["after"]
        (op,) = [o for o in h.ops() if o["outcome"] is None]
        assert statuses(h, op["operation_id"]) == {"gate": "succeeded", "gate-async": "started"}
        # its decision was never committed: recovery marks it indeterminate, never re-runs it
        (recovered,) = await asyncio.wait_for(h.kernel.recover(ctx), WAIT_S)
        assert recovered.operation_id == op["operation_id"] and recovered.succeeded
        assert statuses(h, op["operation_id"])["gate-async"] == "indeterminate"
        assert entered.empty()
    finally:
        release.set()


HUNG_HOOKS = 6


async def test_i11_4_a_hung_sync_hook_never_blocks_file_tools_or_exit(
    durable_store_url: str, tmp_path: Path,
) -> None:
    # The default executor of a 2-CPU machine (min(32, cpus + 4)), which file tools share.
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=HUNG_HOOKS))
    release = threading.Event()

    def hang(event: Any) -> Any:
        release.wait(WAIT_S * 4)
        return {"decision": "deny"}

    kernel = Kernel(durable_store_url, workspace_root=tmp_path / "work",
                    hooks=[HookSpec(hook_id="hang", timing="before",
                                    match=HookMatch(capability="fs.read"),
                                    handler=HandlerRef(ref="tests:hang"), timeout_s=0.2)],
                    hook_functions={"tests:hang": hang})
    try:
        kernel.publish("rel", ["fs.read", "fs.write"], roles={"main": ["fs.read", "fs.write"]})
        lease = await kernel.start_run()
        ctx = kernel.invocation_context(lease, release_id="rel")
        reads = await asyncio.wait_for(asyncio.gather(*(
            kernel.bus.request("fs_read", {"path": f"{i}.txt"}, ctx) for i in range(HUNG_HOOKS))),
            WAIT_S)
        # every hook timed out (fail-open) and its thread still hangs on ``release``
        for read in reads:
            (row,) = kernel.store.query("hook_invocations", {"operation_id": read.operation_id})
            assert row["status"] == "timed_out"
            assert read.error is not None and read.error.code != "RUN_STOPPED"
        runner = cast(PythonHookRunner, kernel.hooks.runner("python"))
        assert runner.threads.abandoned == HUNG_HOOKS

        wrote = await asyncio.wait_for(
            kernel.bus.request("fs_write", {"path": "a.txt", "content": "still works"}, ctx),
            WAIT_S)
        assert wrote.succeeded, wrote.error
        assert not release.is_set()
    finally:
        release.set()
        kernel.close()

    # A process whose sync hook never returns still exits when its work is done.
    script = tmp_path / "hung_hook.py"
    script.write_text(textwrap.dedent("""
        import asyncio, sys, threading
        from agentloom import HandlerRef, HookMatch, HookSpec, Kernel

        def hang(event):
            threading.Event().wait()  # never returns

        async def main():
            kernel = Kernel(sys.argv[1], workspace_root=sys.argv[2], hooks=[HookSpec(
                hook_id="hang", timing="before", match=HookMatch(capability="fs.write"),
                handler=HandlerRef(ref="script:hang"), timeout_s=0.2)],
                hook_functions={"script:hang": hang})
            kernel.publish("rel", ["fs.write"], roles={"main": ["fs.write"]})
            lease = await kernel.start_run()
            ctx = kernel.invocation_context(lease, release_id="rel")
            result = await kernel.bus.request("fs_write", {"path": "a.txt", "content": "x"}, ctx)
            print(result.outcome, flush=True)
            kernel.close()

        asyncio.run(main())
    """))
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(script), f"sqlite:///{tmp_path / 'exit.db'}", str(tmp_path / "w2")],
        capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "succeeded"), done.stderr


async def test_i11_4_once_the_abandoned_limit_is_reached_new_sync_hooks_fail_fast(
    make: Any,
) -> None:
    release = threading.Event()

    def gate(event: Any) -> Any:
        if event["payload"]["text"] == "hang":
            release.wait(WAIT_S * 4)
        return {"decision": "allow", "payload_patch": [
            {"op": "add", "path": "/payload/count", "value": 1}]}

    async def patch_async(event: Any) -> Any:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/text", "value": "async ran"}]}

    h = await make([hook("gate", gate, timeout_s=0.2), hook("async", patch_async)])
    try:
        hung = await asyncio.wait_for(asyncio.gather(*(
            h.call({"text": "hang"}) for _ in range(MAX_ABANDONED_THREADS))), WAIT_S)
        assert {statuses(h, r.operation_id)["gate"] for r in hung} == {"timed_out"}

        result = await asyncio.wait_for(h.call({"text": "quick"}), WAIT_S)
        assert result.succeeded
        assert h.tool.calls[-1]["arguments"] == {"text": "async ran"}
        rows = {r["hook_id"]: r for r in h.hook_rows(result.operation_id)}
        assert rows["gate"]["status"] == "failed"
        assert f"{MAX_ABANDONED_THREADS} synchronous hooks" in rows["gate"]["data"]["diagnostic"]
        assert rows["async"]["status"] == "succeeded"
        runner = cast(PythonHookRunner, h.kernel.hooks.runner("python"))
        assert runner.threads.abandoned == MAX_ABANDONED_THREADS
    finally:
        release.set()


WRONG_RESULT_PATCHES: list[tuple[str, Any]] = [
    ("/result/content", "a string"),
    ("/result/content", {"type": "text", "text": "a dict"}),
    ("/result/content", [1]),
    ("/result/content", [{"type": "text", "text": 5}]),
    ("/result/content", [{"type": "image", "url": "x"}]),
    ("/result/content/0", "not a block"),
    ("/result/metadata", "x"),
    ("/result/metadata", [["a", "b"]]),
    ("/result/metadata/when", {1, 2}),
    ("/result/artifacts", "x"),
    ("/result/artifacts", [{"ref": 5}]),
]


async def test_i11_5_an_after_hook_patch_of_the_wrong_type_is_hook_patch_invalid(
    make: Any, durable_store_url: str, tmp_path: Path,
) -> None:
    def patcher(path: str, value: Any) -> Callable[[Any], Any]:
        return lambda event: {"decision": "allow", "payload_patch": [
            {"op": "replace" if path.count("/") < 3 else "add", "path": path, "value": value}]}

    wrong = [hook(f"w{i}", patcher(path, value), timing="after")
             for i, (path, value) in enumerate(WRONG_RESULT_PATCHES)]
    good = hook("good", patcher("/result/metadata", {"checked": True}), timing="after")
    h = await make([*wrong, good])
    result = await asyncio.wait_for(h.call({"text": "hi"}), WAIT_S)

    assert result.outcome == "succeeded"
    assert result.result.content == result.raw.content
    assert result.result.metadata == {"checked": True}
    rows = {r["hook_id"]: r for r in h.hook_rows(result.operation_id)}
    for i, (path, _) in enumerate(WRONG_RESULT_PATCHES):
        row = rows[f"w{i}"]
        assert row["status"] == "succeeded" and row["decision"] == "allow"
        assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_INVALID", path
        assert row["data"]["patch_error"]["message"], path
        assert row["data"]["changes"] is None
    assert "content" in rows["w0"]["data"]["patch_error"]["message"]

    # a valid deny with a wrong-type patch still stands
    denier = await make([hook("deny", lambda e: {"decision": "deny", "reason": "no", "payload_patch": [
        {"op": "replace", "path": "/result/content", "value": "a string"}]}, timing="after")])
    denied = await asyncio.wait_for(denier.call({"text": "hi"}), WAIT_S)
    assert denied.outcome == "denied_after_execution"
    (row,) = denier.hook_rows(denied.operation_id)
    assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_INVALID"

    # arguments and a model's messages and response are checked the same way
    args = await make([hook("args", lambda e: {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/count", "value": "three"}]})])
    called = await asyncio.wait_for(args.call({"text": "hi", "count": 1}), WAIT_S)
    assert args.tool.calls[0]["arguments"] == {"text": "hi", "count": 1}
    (row,) = args.hook_rows(called.operation_id)
    assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_INVALID"

    g = await gateway(durable_store_url, tmp_path, {"main": TestModel()}, hooks=[
        model_hook("messages", lambda e: {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/messages/0/content", "value": 42}]}),
        model_hook("response", lambda e: {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/content", "value": {"text": "hello"}}]},
            timing="after")])
    try:
        response = await asyncio.wait_for(g.generate(request("ping", tools=())), WAIT_S)
        assert "ping" in response.text
        (op,) = g.operations()
        rows = {r["hook_id"]: r for r in g.kernel.store.query(
            "hook_invocations", {"operation_id": op["operation_id"]})}
        assert {k: r["data"]["patch_error"]["code"] for k, r in rows.items()} == {
            "messages": "HOOK_PATCH_INVALID", "response": "HOOK_PATCH_INVALID"}
    finally:
        await g.kernel.models.aclose()
        g.kernel.close()
