"""Issue 19, the server half: AgentLoom agents served over A2A 1.0 by ``agentloom serve`` (a
real subprocess on 127.0.0.1), driven by the official ``a2a-sdk`` client over both bindings —
the card, send, stream, get, list, cancel, resubscribe, input-required and its answer; a
request without ``A2A-Version`` gets the 1.0 server's documented error on both bindings; a key
is required; another owner's task is not found exactly like a missing one; a SIGKILL of the
server mid-task loses nothing (acceptance 1 server side, acceptance 2 third item)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value
from tests.cli.support import write_project

from .support import START_TIMEOUT_S, free_port, make_key, serving
from .test_i18_api import _project

BINDINGS = ["JSONRPC", "HTTP+JSON"]
SLEEPY = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [sleep, "%s"], timeout_s: 120}
  - text: went on
"""
FAST_LEASES = "workers: {lease_ttl_s: 2, takeover_grace_s: 1, poll_s: 0.5}\n"
WAIT_S = 90.0
MISSING = "00000000-0000-0000-0000-000000000000"
S = TaskState


def _sleepy(tmp_path: Path, seconds: int, extra: str = "") -> Path:
    return write_project(tmp_path / "p", SLEEPY % seconds, tools=["exec"], extra=extra)


def _message(text: str | None = None, *, task_id: str = "", context_id: str = "",
             data: dict[str, Any] | None = None) -> Message:
    parts = [Part(text=text)] if text is not None else []
    if data is not None:
        parts.append(Part(data=ParseDict(data, Value())))
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=parts,
                   task_id=task_id, context_id=context_id)


def _send(message: Message, *, now: bool = False) -> SendMessageRequest:
    return SendMessageRequest(message=message, configuration=SendMessageConfiguration(
        return_immediately=now))


@contextlib.asynccontextmanager
async def _client(base: str, key: str, binding: str, *,
                  streaming: bool = False) -> AsyncIterator[Client]:
    """The official SDK client for ``base`` (its card fetched), speaking ``binding`` only."""
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=WAIT_S)
    client = await create_client(base, client_config=ClientConfig(
        streaming=streaming, supported_protocol_bindings=[binding], httpx_client=http))
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


async def _one(client: Client, request: SendMessageRequest) -> Task:
    (event,) = [e async for e in client.send_message(request)]
    assert event.WhichOneof("payload") == "task", event
    return event.task


async def _until(client: Client, task_id: str, states: set[int]) -> Task:
    deadline = time.monotonic() + WAIT_S
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in states:
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.2)


def _text(task: Task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


@pytest.mark.parametrize("binding", BINDINGS)
def test_i19_1_sdk_client_sends_streams_gets_and_lists_over_each_binding(
        tmp_path: Path, binding: str) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    with serving(_project(tmp_path), store) as base:
        card = httpx.get(base + "/.well-known/agent-card.json").json()
        assert [(i["protocolBinding"], i["url"], i["protocolVersion"])
                for i in card["supportedInterfaces"]] == [
            ("JSONRPC", base + "/a2a/jsonrpc", "1.0"), ("HTTP+JSON", base + "/a2a/rest", "1.0")]
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
        assert [s["id"] for s in card["skills"]] == ["main"]
        assert card["capabilities"]["streaming"] is True

        async def scenario() -> None:
            async with _client(base, key, binding) as client:
                sent = await _one(client, _send(_message("write the file", context_id="c-1")))
                assert sent.status.state == S.TASK_STATE_COMPLETED
                assert (_text(sent), sent.context_id) == ("done", "c-1")
                assert [m.parts[0].text for m in sent.history] == ["write the file"]
                assert sent.metadata["agentloom"]["run_status"] == "succeeded"
                got = await client.get_task(GetTaskRequest(id=sent.id))
                assert got == sent
                assert not (await client.get_task(GetTaskRequest(id=sent.id,
                                                                 history_length=0))).history
                unknown = _send(_message("write"))
                unknown.metadata.update({"skill": "nope"})
                with pytest.raises(A2AError, match=r"names no skill.*\['main'\]"):
                    await _one(client, unknown)
            async with _client(base, key, binding, streaming=True) as client:
                events: list[StreamResponse] = [
                    e async for e in client.send_message(_send(_message("again")))]
                kinds = [e.WhichOneof("payload") for e in events]
                assert kinds[0] == "task" and kinds[-2:] == ["artifact_update", "status_update"]
                assert events[0].task.status.state == S.TASK_STATE_SUBMITTED
                assert events[-2].artifact_update.artifact.parts[0].text == "done"
                assert events[-1].status_update.status.state == S.TASK_STATE_COMPLETED
                streamed = events[0].task.id
                listed = await client.list_tasks(ListTasksRequest())
                assert [t.id for t in listed.tasks] == [streamed, sent.id]  # latest first
                assert listed.total_size == 2 and not listed.tasks[0].artifacts
                only = await client.list_tasks(ListTasksRequest(context_id="c-1",
                                                                include_artifacts=True))
                assert [(t.id, _text(t)) for t in only.tasks] == [(sent.id, "done")]
                paged = await client.list_tasks(ListTasksRequest(page_size=1))
                assert [t.id for t in paged.tasks] == [streamed] and paged.next_page_token
                rest = await client.list_tasks(ListTasksRequest(
                    page_size=1, page_token=paged.next_page_token))
                assert [t.id for t in rest.tasks] == [sent.id] and not rest.next_page_token
                done = await client.list_tasks(ListTasksRequest(
                    status=S.TASK_STATE_CANCELED))
                assert list(done.tasks) == []

        asyncio.run(scenario())


@pytest.mark.parametrize("binding", BINDINGS)
def test_i19_1_sdk_client_cancels_and_resubscribes_over_each_binding(
        tmp_path: Path, binding: str) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    with serving(_sleepy(tmp_path, 60), store) as base:
        async def scenario() -> None:
            async with _client(base, key, binding) as client:
                task = await _one(client, _send(_message("sleep"), now=True))
            async with _client(base, key, binding, streaming=True) as client:
                assert task.status.state in (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING)
                await _until(client, task.id, {S.TASK_STATE_WORKING})
                seen: list[StreamResponse] = []
                subscribed = asyncio.Event()

                async def follow() -> None:
                    async for event in client.subscribe(SubscribeToTaskRequest(id=task.id)):
                        seen.append(event)
                        subscribed.set()

                follower = asyncio.create_task(follow())
                await asyncio.wait_for(subscribed.wait(), WAIT_S)
                assert seen[0].task.status.state == S.TASK_STATE_WORKING
                cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
                assert cancelled.status.state == S.TASK_STATE_CANCELED
                assert "cancelled over A2A by alice" in cancelled.status.message.parts[0].text
                await asyncio.wait_for(follower, WAIT_S)  # the subscription ends with it
                assert seen[-1].status_update.status.state == S.TASK_STATE_CANCELED
                with pytest.raises(TaskNotCancelableError):
                    await client.cancel_task(CancelTaskRequest(id=task.id))
                with pytest.raises(UnsupportedOperationError):
                    async for _ in client.subscribe(SubscribeToTaskRequest(id=task.id)):
                        pass

        asyncio.run(scenario())


@pytest.mark.parametrize("binding", BINDINGS)
def test_i19_1_waiting_for_approval_is_input_required_and_a_data_answer_goes_on(
        tmp_path: Path, binding: str) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    with serving(_project(tmp_path, asking=True), store) as base:
        async def scenario() -> None:
            async with _client(base, key, binding) as client:
                asking = await _one(client, _send(_message("write the file")))
                assert asking.status.state == S.TASK_STATE_INPUT_REQUIRED
                assert "Write it?" in asking.status.message.parts[0].text
                with pytest.raises(A2AError, match="approve"):
                    await _one(client, _send(_message("yes please", task_id=asking.id)))
                done = await _one(client, _send(_message(task_id=asking.id,
                                                         data={"approve": True})))
                assert (done.status.state, _text(done)) == (S.TASK_STATE_COMPLETED, "done")
                with pytest.raises(UnsupportedOperationError):
                    await _one(client, _send(_message("more", task_id=asking.id)))

        asyncio.run(scenario())


def test_i19_1_a_request_without_the_version_header_gets_the_documented_error(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    auth = {"Authorization": f"Bearer {key}"}
    body = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}}
    with serving(_project(tmp_path), store) as base:
        rpc = httpx.post(base + "/a2a/jsonrpc", headers=auth, json={
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": body})
        assert rpc.status_code == 200
        assert rpc.json()["error"]["code"] == -32009
        assert "A2A version '0.3' is not supported" in rpc.json()["error"]["message"]
        rest = httpx.post(base + "/a2a/rest/message:send", headers=auth, json=body)
        assert rest.status_code == 400
        error = rest.json()["error"]
        assert error["status"] == "FAILED_PRECONDITION"
        assert [d["reason"] for d in error["details"]] == ["VERSION_NOT_SUPPORTED"]
        listed = httpx.get(base + "/v1/runs", headers=auth).json()["items"]
        assert listed == []  # nothing was started

        versioned = {**auth, "A2A-Version": "1.0"}
        for url in ("/a2a/jsonrpc", "/a2a/rest/message:send"):
            refused = httpx.post(base + url, json=body, headers={"A2A-Version": "1.0"})
            assert refused.status_code == 401, url
            assert refused.headers["www-authenticate"] == "Bearer"
            assert refused.json()["code"] == "UNAUTHENTICATED"
        ok = httpx.post(base + "/a2a/rest/message:send", headers=versioned, json=body)
        assert ok.status_code == 200 and ok.json()["task"]["status"]["state"] in (
            "TASK_STATE_COMPLETED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


def test_i19_1_another_owners_task_is_not_found_exactly_like_a_missing_one(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    alice = make_key(store, "alice", "acme")
    bob = make_key(store, "bob", "acme")
    with serving(_project(tmp_path, asking=True), store) as base:
        async def scenario() -> str:
            async with _client(base, alice, "JSONRPC") as client:
                mine = await _one(client, _send(_message("write the file")))
                assert mine.status.state == S.TASK_STATE_INPUT_REQUIRED
            for binding in BINDINGS:
                async with _client(base, bob, binding, streaming=True) as client:
                    refusals: list[str] = []
                    for task_id in (MISSING, mine.id):
                        calls: list[Any] = [
                            client.get_task(GetTaskRequest(id=task_id)),
                            client.cancel_task(CancelTaskRequest(id=task_id)),
                            _one(client, _send(_message(task_id=task_id,
                                                        data={"approve": True})))]
                        for call in calls:
                            with pytest.raises(TaskNotFoundError) as caught:
                                await call
                            refusals.append(str(caught.value))
                        with pytest.raises(TaskNotFoundError) as caught:
                            async for _ in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                                pass
                        refusals.append(str(caught.value))
                    assert refusals[:4] == refusals[4:], binding  # identical answers
                    assert list((await client.list_tasks(ListTasksRequest())).tasks) == []
            async with _client(base, alice, "HTTP+JSON") as client:
                still = await client.get_task(GetTaskRequest(id=mine.id))
                assert still.status.state == S.TASK_STATE_INPUT_REQUIRED  # bob changed nothing
            return mine.id

        mine_id = asyncio.run(scenario())
        headers = {"Authorization": f"Bearer {bob}", "A2A-Version": "1.0"}
        on_the_wire = [httpx.post(base + "/a2a/jsonrpc", headers=headers, json={
            "jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": task_id}}).json()
            for task_id in (MISSING, mine_id)]
        assert on_the_wire[0] == on_the_wire[1] and on_the_wire[0]["error"]["code"] == -32001
        rest = [httpx.get(f"{base}/a2a/rest/tasks/{task_id}", headers=headers)
                for task_id in (MISSING, mine_id)]
        assert [r.status_code for r in rest] == [404, 404]
        assert rest[0].json() == rest[1].json()


@contextlib.contextmanager
def _killable(config: Path, store_url: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``agentloom serve`` in its own process group (with any process it starts)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    log = (config.parent / f"serve-{port}.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "agentloom", "serve", str(config), "--store",
                             store_url, "--port", str(port)], cwd=config.parent, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, (config.parent / f"serve-{port}.log").read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.1)
        yield base, proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()


def test_i19_2_sigkill_of_the_server_mid_task_then_get_task_sees_it_end(
        tmp_path: Path, durable_store_url: str) -> None:
    config = _sleepy(tmp_path, 2, FAST_LEASES)
    key = make_key(durable_store_url, "alice", "acme")
    auth = {"Authorization": f"Bearer {key}"}
    with _killable(config, durable_store_url) as (base, proc):
        async def start() -> Task:
            async with _client(base, key, "JSONRPC") as client:
                return await _one(client, _send(_message("sleep", context_id="ctx-9"),
                                                now=True))

        task = asyncio.run(start())
        deadline = time.monotonic() + WAIT_S
        while True:  # the exec call started: the task is mid-way
            ops = httpx.get(f"{base}/v1/runs/{task.id}/operations", headers=auth).json()
            if any(o["capability"] == "exec" and o["attempts"]["items"] for o in ops["items"]):
                break
            assert time.monotonic() < deadline, ops
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    with _killable(config, durable_store_url) as (base, _):
        async def after() -> Task:
            async with _client(base, key, "HTTP+JSON") as client:
                return await _until(client, task.id, {S.TASK_STATE_COMPLETED,
                                                      S.TASK_STATE_FAILED,
                                                      S.TASK_STATE_CANCELED})

        ended = asyncio.run(after())
        assert (ended.status.state, _text(ended)) == (S.TASK_STATE_COMPLETED, "went on")
        assert ended.context_id == "ctx-9"
        assert [m.parts[0].text for m in ended.history] == ["sleep"]
        ops = httpx.get(f"{base}/v1/runs/{task.id}/operations", headers=auth).json()["items"]
        (call,) = [o for o in ops if o["capability"] == "exec"]
        assert call["attempts"]["count"] == 1  # the interrupted call was not sent again
