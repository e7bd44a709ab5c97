"""Issue 16, hook handler kinds and acceptance 4: ``kind: http`` hooks.

The edge fake is a real HTTP server on 127.0.0.1 (``http.server`` in a thread) answering by
path. The event is POSTed as JSON; a 2xx answer's JSON body is the decision; every outcome —
deny, allow with a patch, HTTP 500, a timeout, a body that is not JSON, a redirect — is
recorded with the statuses Python hooks get. Loopback is refused unless the hook says
``allow_private``, redirects are never followed, and header secrets never reach a record.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.hooks.support import HookSetup
from tests.pipeline.support import CountingTool, spec

from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel

PATCH = {"decision": "allow",
         "payload_patch": [{"op": "replace", "path": "/payload/text", "value": "patched"}]}


@dataclass
class Edge:
    """The scripted server: what each path answers, and what it received."""

    port: int
    received: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [p for p, _, _ in self.received]


@pytest.fixture
def edge() -> Iterator[Edge]:
    state: Edge

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.received.append((self.path, dict(self.headers), body))
            match self.path:
                case "/deny":
                    self._send(200, {"decision": "deny", "reason": "blocked by policy"})
                case "/patch":
                    self._send(200, PATCH)
                case "/empty":
                    self._send(200, b"")
                case "/crash":
                    self._send(500, f"boom; saw {self.headers.get('Authorization')}".encode())
                case "/garbage":
                    self._send(200, b"<html>not json</html>")
                case "/slow":
                    state.release.wait(10)
                    self._send(200, {"decision": "deny"})
                case "/redirect":
                    self.send_response(302)
                    self.send_header("Location", state.url("/deny", host="localhost"))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                case _:
                    self._send(404, b"")

        def _send(self, status: int, body: dict[str, Any] | bytes) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the hook timed out (``/slow``):
                pass  # the runtime hung up first

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state = Edge(port=server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


Setup = HookSetup


def http(hook_id: str, url: str, *, allow_private: bool = True, timeout_s: float = 10.0,
         headers: dict[str, str] | None = None, on_failure: str = "allow") -> HookSpec:
    return HookSpec(hook_id=hook_id, timing="before",
                    handler=HandlerRef(kind="http", url=url, allow_private=allow_private,
                                       headers=tuple((headers or {}).items())),
                    timeout_s=timeout_s, on_failure=on_failure)  # type: ignore[arg-type]


@pytest.fixture
async def make(durable_store_url: str,
               tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Setup]]]:
    made: list[Kernel] = []

    async def factory(hooks: list[HookSpec]) -> Setup:
        kernel = Kernel(durable_store_url, hooks=hooks, workspace_root=tmp_path / "ws")
        made.append(kernel)
        tool = CountingTool()
        kernel.publish("rel", [(spec(), tool)], roles={"main": ["demo.echo"]})
        lease = await kernel.start_run(workspace=False)
        return Setup(kernel, tool, lease, kernel.invocation_context(lease, release_id="rel"))

    yield factory
    for kernel in made:
        kernel.close()


async def test_i16_4_http_hook_deny_stands_and_receives_the_event_as_json(
    make: Any, edge: Edge,
) -> None:
    h = await make([http("guard", edge.url("/deny"))])
    result = await h.call("from the model")
    assert result.outcome == "denied_before_execution"
    assert result.reason == "blocked by policy" and h.tool.calls == []
    row = h.rows(result.operation_id)["guard"]
    assert (row["status"], row["decision"]) == ("succeeded", "deny")
    ((_, headers, body),) = edge.received
    event = json.loads(body)
    assert headers["Content-Type"] == "application/json"
    assert event["capability"] == "demo.echo" and event["payload"] == {"text": "from the model"}
    assert event["operation_id"] == result.operation_id


async def test_i16_4_http_hook_allow_with_patch_changes_what_executes(
    make: Any, edge: Edge,
) -> None:
    h = await make([http("patch", edge.url("/patch")), http("empty", edge.url("/empty"))])
    result = await h.call("raw")
    assert result.succeeded and result.executed_arguments == {"text": "patched"}
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "patched"}]
    assert [(r["status"], r["decision"]) for r in h.rows(result.operation_id).values()] == [
        ("succeeded", "allow")] * 2


async def test_i16_4_http_hook_500_is_a_failure_and_header_secrets_stay_out_of_records(
    make: Any, edge: Edge, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOK_HTTP_TOKEN", "tok-http-4242")
    h = await make([http("crash", edge.url("/crash"),
                         headers={"Authorization": "Token ${HOOK_HTTP_TOKEN}"}),
                    http("strict", edge.url("/crash"), on_failure="deny")])
    result = await h.call()
    rows = h.rows(result.operation_id)
    assert rows["crash"]["status"] == rows["strict"]["status"] == "failed"
    assert "HTTP 500" in rows["crash"]["data"]["diagnostic"]
    assert edge.received[0][1]["Authorization"] == "Token tok-http-4242"  # it was sent
    stored = json.dumps(h.kernel.store.query("hook_invocations", {}))
    assert "tok-http-4242" not in stored  # the server echoed it: redacted in the diagnostic
    assert result.outcome == "denied_before_execution"  # on_failure: deny, as for Python


async def test_i16_4_http_hook_timeout_is_timed_out(make: Any, edge: Edge) -> None:
    h = await make([http("slow", edge.url("/slow"), timeout_s=0.5)])
    result = await h.call()
    edge.release.set()
    assert result.succeeded  # fail-open
    assert h.rows(result.operation_id)["slow"]["status"] == "timed_out"


async def test_i16_4_http_hook_garbage_body_is_an_invalid_decision(make: Any, edge: Edge) -> None:
    h = await make([http("garbage", edge.url("/garbage"))])
    result = await h.call()
    assert result.succeeded
    row = h.rows(result.operation_id)["garbage"]
    assert row["status"] == "invalid" and "not JSON" in row["data"]["diagnostic"]


async def test_i16_4_http_hook_redirect_is_a_failure_and_never_followed(
    make: Any, edge: Edge,
) -> None:
    h = await make([http("moved", edge.url("/redirect"))])
    result = await h.call()
    assert result.succeeded and edge.paths() == ["/redirect"]  # /deny was never requested
    row = h.rows(result.operation_id)["moved"]
    assert row["status"] == "failed"
    assert "302" in row["data"]["diagnostic"] and "not followed" in row["data"]["diagnostic"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_i16_4_http_hook_to_loopback_is_refused_unless_allow_private(
    make: Any, edge: Edge, host: str,
) -> None:
    h = await make([http("ssrf", edge.url("/deny", host=host), allow_private=False)])
    result = await h.call()
    assert result.succeeded and edge.received == []  # nothing was sent
    row = h.rows(result.operation_id)["ssrf"]
    assert row["status"] == "failed" and "allow_private" in row["data"]["diagnostic"]


async def test_i16_4_http_hook_with_allow_private_reaches_a_name_on_loopback(
    make: Any, edge: Edge,
) -> None:
    h = await make([http("named", edge.url("/deny", host="localhost"), allow_private=True)])
    result = await h.call()
    assert result.outcome == "denied_before_execution" and edge.paths() == ["/deny"]
    assert edge.received[0][1]["Host"] == f"localhost:{edge.port}"  # the URL's, not the address
