"""Issue 18, OpenTelemetry and acceptance 5: a delegating run yields one trace.

The spans go to the OpenTelemetry SDK's ``InMemorySpanExporter`` through a provider handed to
``Runtime(tracer_provider=…)``. The models are offline scripts (a Planner delegating to a
Writer, as in examples/python_api.py); the HTTP hook's server is a real one on 127.0.0.1;
"tracing off" is checked in a fresh interpreter, where importing the SDK would show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import agentloom
from agentloom import HookDecision
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.models.offline import Script, ScriptModel
from agentloom.pipeline.records import OperationState
from agentloom.store import open_store
from agentloom.store.records import operations
from agentloom.telemetry import wanted

ROOT = Path(__file__).resolve().parents[2]


@agentloom.tool(name="text.count_words")
def count_words(text: str) -> dict[str, int]:
    """Count the words of a text."""
    return {"words": len(text.split())}


@agentloom.hook(timing="before", match="text.count_words")
def trim(event: dict[str, Any]) -> HookDecision:
    """Strip the blanks around the text."""
    text = event["payload"]["text"]
    return HookDecision("allow", payload_patch=[
        {"op": "replace", "path": "/payload/text", "value": text.strip()}])


PLANNER = Script.model_validate({"model": "planner-1", "turns": [
    {"tool_calls": [
        {"id": "d1", "name": "delegate_writer", "arguments": {"task": "Write hello.txt"}},
        {"id": "w1", "name": "text_count_words", "arguments": {"text": "  two words  "}}]},
    {"expect": {"role": "tool"},
     "tool_calls": [{"id": "r1", "name": "fs_read", "arguments": {"path": "hello.txt"}}]},
    {"expect": {"role": "tool", "contains": "hello"}, "text": "hello.txt says hello."},
]})
WRITER = Script.model_validate({"model": "writer-1", "turns": [
    {"tool_calls": [{"id": "f1", "name": "fs_write",
                     "arguments": {"path": "hello.txt", "content": "hello\n"}}]},
    {"expect": {"role": "tool"}, "text": "Wrote hello.txt."},
]})
SOLO = Script.model_validate({"turns": [
    {"tool_calls": [{"id": "w1", "name": "text_count_words", "arguments": {"text": "a b"}}]},
    {"expect": {"role": "tool"}, "text": "two"},
]})


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def provider_of(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def agents(planner: Script = PLANNER) -> list[agentloom.AgentSpec]:
    return [agentloom.AgentSpec(name="main", model=ScriptModel(planner, source="planner"),
                                tools=("fs.read", count_words), executors=("writer",)),
            agentloom.AgentSpec(name="writer", model=ScriptModel(WRITER, source="writer"),
                                tools=("fs.write",))]


async def run_traced(tmp_path: Path, provider: Any, *, hooks: list[Any],
                     planner: Script = PLANNER) -> tuple[agentloom.RunResult, agentloom.Runtime]:
    rt = agentloom.Runtime(agents(planner), store=f"sqlite:///{tmp_path / 'al.db'}",
                           workspace_root=tmp_path / "ws", hooks=hooks, tracer_provider=provider)
    try:
        result = await rt.run("Write a greeting file and check it")
    finally:
        await rt.aclose()
    return result, rt


class Tree:
    """The finished spans, by id, with their children in start order."""

    def __init__(self, spans: tuple[ReadableSpan, ...]) -> None:
        self.spans = spans
        self.by_id = {s.context.span_id: s for s in spans}

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.spans if s.parent is None]

    def children(self, span: ReadableSpan, name: str | None = None) -> list[ReadableSpan]:
        found = [s for s in self.spans if s.parent is not None
                 and s.parent.span_id == span.context.span_id]
        found.sort(key=lambda s: s.start_time or 0)
        return [s for s in found if name is None or s.name == name]

    def one(self, span: ReadableSpan, name: str) -> ReadableSpan:
        (child,) = self.children(span, name)
        return child

    def names(self, span: ReadableSpan) -> list[str]:
        return sorted(s.name for s in self.children(span))


def stored_usage(tmp_path: Path, run_id: str) -> dict[str, dict[str, Any]]:
    """Each model call's token usage as its raw result records it, by operation id."""
    store = open_store(f"sqlite:///{tmp_path / 'al.db'}")
    try:
        return {r.operation_id: OperationState.from_row(r.to_row(), store).raw["content"][0]["data"]
                ["usage"] for r in operations(store, run_id, event_type="model")}  # type: ignore[index]
    finally:
        store.close()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in (span.attributes or {}).items()}


async def test_i18_5_a_delegating_run_yields_one_trace_with_the_span_tree_and_attributes(
    tmp_path: Path, exporter: InMemorySpanExporter,
) -> None:
    result, _ = await run_traced(tmp_path, provider_of(exporter), hooks=[trim])
    assert result.status == "succeeded", result.error
    tree = Tree(exporter.get_finished_spans())

    assert len({s.context.trace_id for s in tree.spans}) == 1  # ONE trace
    (run,) = tree.roots()
    assert run.name == "agentloom.run main"
    assert attrs(run) == {"agentloom.run.id": result.run_id, "gen_ai.agent.name": "main",
                          "agentloom.run.status": "succeeded"}

    planner = tree.one(run, "invoke_agent main")
    assert attrs(planner) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main",
        "gen_ai.request.model": "planner-1", "gen_ai.provider.name": "agentloom",
        "agentloom.run.id": result.run_id, "agentloom.invocation.id": result.run_id,
        "agentloom.outcome": "succeeded"}
    assert tree.names(planner) == ["chat planner-1"] * 3 + [
        "execute_tool delegate_writer", "execute_tool fs_read", "execute_tool text_count_words"]

    for chat in tree.children(planner, "chat planner-1"):
        a = attrs(chat)
        assert chat.kind == SpanKind.CLIENT
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == "planner-1"
        assert a["gen_ai.provider.name"] == "agentloom"
        assert a["agentloom.capability"] == "model.main"
        assert a["agentloom.outcome"] == "succeeded"
        assert a["gen_ai.response.model"] == "planner-1"
        (attempt,) = tree.children(chat, "agentloom.attempt")
        assert attrs(attempt)["agentloom.attempt.number"] == 1
        assert attrs(attempt)["agentloom.attempt.status"] == "succeeded"

    counted = tree.one(planner, "execute_tool text_count_words")
    a = attrs(counted)
    assert {k: a[k] for k in ("gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
                              "gen_ai.tool.type", "agentloom.capability", "agentloom.outcome",
                              "agentloom.event_type", "agentloom.role", "agentloom.phase")} == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "text_count_words",
        "gen_ai.tool.call.id": "w1", "gen_ai.tool.type": "function",
        "agentloom.capability": "text.count_words", "agentloom.outcome": "succeeded",
        "agentloom.event_type": "tool", "agentloom.role": "main", "agentloom.phase": "delivered"}
    hook_id = "trim"
    assert tree.names(counted) == sorted(["agentloom.attempt", f"agentloom.hook {hook_id}"])
    hook = tree.one(counted, f"agentloom.hook {hook_id}")
    assert attrs(hook) == {"agentloom.operation.id": a["agentloom.operation.id"],
                           "agentloom.hook.id": hook_id, "agentloom.hook.timing": "before",
                           "agentloom.hook.position": 0, "agentloom.hook.status": "succeeded",
                           "agentloom.hook.decision": "allow"}
    (attempt,) = tree.children(counted, "agentloom.attempt")
    assert hook.end_time is not None and attempt.start_time is not None
    assert hook.end_time <= attempt.start_time  # the before-hook ran before the Attempt

    # the Executor's invocation runs inside the delegation's Attempt
    delegation = tree.one(planner, "execute_tool delegate_writer")
    d = attrs(delegation)
    assert (d["gen_ai.tool.call.id"], d["agentloom.event_type"], d["agentloom.capability"]) == (
        "d1", "delegation", "delegate.writer")
    writer = tree.one(tree.one(delegation, "agentloom.attempt"), "invoke_agent writer")
    assert attrs(writer)["agentloom.invocation.id"] == f"{result.run_id}/x/{d['agentloom.operation.id']}"
    assert attrs(writer)["gen_ai.request.model"] == "writer-1"
    assert tree.names(writer) == ["chat writer-1", "chat writer-1", "execute_tool fs_write"]
    assert attrs(tree.one(writer, "execute_tool fs_write"))["gen_ai.tool.call.id"] == "f1"

    # token usage on every model span, as the model call's record has it
    chats = [s for s in tree.spans if s.name.startswith("chat ")]
    usage = stored_usage(tmp_path, result.run_id)
    assert len(chats) == len(usage) == 5
    for chat in chats:
        recorded = usage[attrs(chat)["agentloom.operation.id"]]
        assert recorded["input_tokens"] > 0 and recorded["output_tokens"] > 0
        assert (attrs(chat)["gen_ai.usage.input_tokens"], attrs(chat)["gen_ai.usage.output_tokens"]) \
            == (recorded["input_tokens"], recorded["output_tokens"])
    assert [attrs(c)["gen_ai.response.finish_reasons"] for c in tree.children(planner)
            if c.name.startswith("chat ")] == [["tool_calls"], ["tool_calls"], ["stop"]]

    # every operation span covers its own Attempts and hooks
    for span in tree.spans:
        if span.parent is not None and span.name.startswith(("agentloom.attempt", "agentloom.hook")):
            owner = tree.by_id[span.parent.span_id]
            assert owner.start_time is not None and span.start_time is not None
            assert owner.start_time <= span.start_time
            assert span.end_time is not None and owner.end_time is not None
            assert span.end_time <= owner.end_time


async def test_i18_5_a_failed_tool_call_is_an_error_span_with_its_error_type(
    tmp_path: Path, exporter: InMemorySpanExporter,
) -> None:
    script = Script.model_validate({"turns": [
        {"tool_calls": [{"id": "bad", "name": "fs_read", "arguments": {"path": "missing.txt"}}]},
        {"expect": {"role": "tool"}, "text": "it is missing"},
    ]})
    result, _ = await run_traced(tmp_path, provider_of(exporter), hooks=[], planner=script)
    assert result.status == "succeeded"
    (read,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool fs_read"]
    assert attrs(read)["agentloom.outcome"] == "failed"
    assert read.status.status_code == StatusCode.ERROR
    assert attrs(read)["error.type"]


@pytest.fixture
def hook_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    received: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.append({k.lower(): v for k, v in self.headers.items()})
            body = json.dumps({"decision": "allow"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


async def test_i18_5_an_http_hook_receives_the_traceparent_of_its_span_in_the_runs_trace(
    tmp_path: Path, exporter: InMemorySpanExporter, hook_server: tuple[str, list[dict[str, str]]],
) -> None:
    url, received = hook_server
    guard = HookSpec(hook_id="edge", timing="before", match=HookMatch(capability="text.count_words"),
                     handler=HandlerRef(kind="http", url=url, allow_private=True))
    result, _ = await run_traced(tmp_path, provider_of(exporter), hooks=[guard], planner=SOLO)
    assert result.status == "succeeded", result.error
    (headers,) = received
    version, trace_id, parent_id, flags = headers["traceparent"].split("-")
    (hook,) = [s for s in exporter.get_finished_spans() if s.name == "agentloom.hook edge"]
    (run,) = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert version == "00" and int(flags, 16) & 1  # sampled
    assert int(trace_id, 16) == run.context.trace_id == hook.context.trace_id
    assert int(parent_id, 16) == hook.context.span_id  # the server's spans nest under the hook


def test_i18_5_tracing_is_off_by_default_and_on_with_the_otlp_endpoint_or_the_config_key() -> None:
    assert not wanted(None, {})
    assert wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert wanted(True, {})
    assert not wanted(False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert not wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": ""})


OFF = """
import asyncio, sys
import agentloom
from agentloom.models.offline import Script, ScriptModel

script = Script.model_validate({"turns": [
    {"tool_calls": [{"id": "r", "name": "fs_read", "arguments": {"path": "x.txt"}}]},
    {"expect": {"role": "tool"}, "text": "done"}]})

async def main():
    rt = agentloom.Runtime([agentloom.AgentSpec(name="main", model=ScriptModel(script),
                                                tools=("fs.read",))],
                           store=sys.argv[1], workspace_root=sys.argv[2])
    try:
        result = await rt.run("read x.txt")
    finally:
        await rt.aclose()
    traced = [m for m in sys.modules if m.startswith(("opentelemetry", "agentloom.telemetry._"))]
    print(result.status, rt.tracing is None, rt.kernel.bus.pipeline.tracer is None, traced)

asyncio.run(main())
"""


def test_i18_5_with_tracing_off_no_span_is_made_and_no_opentelemetry_module_is_imported(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", OFF, f"sqlite:///{tmp_path / 'al.db'}",
                           str(tmp_path / "ws")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["succeeded", "True", "True", "[]"]


async def test_i18_5_telemetry_false_wins_over_the_otlp_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    rt = agentloom.Runtime(agents(), store=f"sqlite:///{tmp_path / 'al.db'}",
                           workspace_root=tmp_path / "ws", telemetry=False)
    try:
        assert rt.tracing is None and rt.kernel.bus.pipeline.tracer is None
    finally:
        await rt.aclose()


@agentloom.hook(timing="before", match="text.count_words")
def ask_first(event: dict[str, Any]) -> HookDecision:
    """Ask a person before counting."""
    return HookDecision.ask("Count these words?")


async def test_i18_5_a_run_that_waits_for_a_person_ends_its_trace_with_the_waiting_call_open(
    tmp_path: Path, exporter: InMemorySpanExporter,
) -> None:
    result, _ = await run_traced(tmp_path, provider_of(exporter), hooks=[ask_first], planner=SOLO)
    assert result.status == "waiting"
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.parent is None]
    assert attrs(run)["agentloom.run.status"] == "waiting"
    (call,) = [s for s in spans if s.name == "execute_tool text_count_words"]
    assert attrs(call)["agentloom.phase"] == "awaiting_approval"
    assert "agentloom.outcome" not in attrs(call)
    (hook,) = [s for s in spans if s.name == "agentloom.hook ask_first"]
    assert attrs(hook)["agentloom.hook.decision"] == "ask"
    assert not [s for s in spans if s.name == "agentloom.attempt"
                and s.parent is not None and s.parent.span_id == call.context.span_id]


async def test_i18_5_a_run_resumed_after_an_approval_links_its_new_trace_to_its_first(
        tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    """A run that waited for a person is driven again later, often by another process: its
    second run span starts a new trace (a span cannot outlive its process) and links to the
    span of the first drive, whose ids the run recorded."""
    @agentloom.hook(timing="before", event="model")
    def ask_model(event: dict[str, Any]) -> HookDecision:
        return HookDecision.ask("Spend tokens on this?")

    answer = Script.model_validate({"turns": [{"text": "the answer"}]})
    rt = agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=ScriptModel(answer, source="answer"))],
        store=f"sqlite:///{tmp_path / 'al.db'}", workspace_root=tmp_path / "ws",
        hooks=[ask_model], tracer_provider=provider_of(exporter))
    try:
        waiting = await rt.run("answer me")
        assert waiting.status == "waiting"
        (call,) = waiting.waiting
        await rt.approve(waiting.run_id, call["operation_id"])
        result = await (await rt.resume(waiting.run_id)).result()
        assert result.status == "succeeded"
    finally:
        await rt.aclose()
    first, second = sorted((s for s in exporter.get_finished_spans()
                            if s.name == "agentloom.run main"), key=lambda s: s.start_time or 0)
    assert first.attributes is not None and second.attributes is not None
    assert "agentloom.run.resumed" not in first.attributes and not first.links
    assert second.attributes["agentloom.run.resumed"] is True
    (link,) = second.links
    assert (link.context.trace_id, link.context.span_id) == (first.context.trace_id,
                                                             first.context.span_id)
    assert second.context.trace_id != first.context.trace_id
