"""Issue 18, OpenTelemetry: a traced run's call to an MCP server over Streamable HTTP carries
the W3C ``traceparent`` of the call's Attempt in the HTTP headers, so the server's spans join the
run's trace.

The server (``servers/trace_echo.py``) is a real ``mcp`` SDK server in a subprocess on
127.0.0.1; its one tool answers with the trace headers its HTTP request carried, so the run's
own tool result shows what reached the server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.mcp.mcp_support import free_port, serve_http

from agentloom.agent import Runtime
from agentloom.assembly import agent_specs
from agentloom.config import load_config
from agentloom.pipeline.records import OperationState
from agentloom.store import open_store
from agentloom.store.records import operations

SERVER = Path(__file__).parent / "servers" / "trace_echo.py"


@pytest.fixture
def trace_echo() -> Iterator[str]:
    port = free_port()
    yield from serve_http([sys.executable, str(SERVER), str(port)], port)


def project(folder: Path, url: str) -> Path:
    (folder / "turns.yaml").write_text(
        "turns:\n"
        "  - tool_calls:\n      - {id: s1, name: mcp__echo__seen, arguments: {}}\n"
        "  - expect: {role: tool}\n    text: done\n", encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        "agents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        "    tools: [mcp.echo.seen]\n"
        f"mcp_servers:\n  echo: {{transport: http, url: {json.dumps(url)}}}\n"
        "sandbox: {backend: none}\n", encoding="utf-8")
    return config


def seen_by_server(store_url: str, run_id: str) -> dict[str, str | None]:
    store = open_store(store_url)
    try:
        (record,) = operations(store, run_id, event_type="tool")
        raw = OperationState.from_row(record.to_row(), store).raw
    finally:
        store.close()
    assert raw is not None and raw["status"] == "succeeded", raw
    seen: dict[str, str | None] = json.loads(raw["content"][0]["text"])
    return seen


async def test_i18_5_an_mcp_server_over_http_receives_the_traceparent_of_the_calls_attempt(
    tmp_path: Path, trace_echo: str,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    url = f"sqlite:///{tmp_path / 'al.db'}"
    specs = agent_specs(load_config(project(tmp_path, trace_echo)), store=url)
    rt = Runtime(specs, store=url, workspace_root=tmp_path / "ws", sandbox_backend="none",
                 tracer_provider=provider)
    try:
        result = await rt.run("ask the server what it saw")
    finally:
        await rt.aclose()
    assert result.status == "succeeded", result.error

    seen = seen_by_server(url, result.run_id)
    assert seen["traceparent"] is not None, seen
    _, trace_id, parent_id, _ = seen["traceparent"].split("-")
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.parent is None]
    (tool,) = [s for s in spans if s.name == "execute_tool mcp__echo__seen"]
    (attempt,) = [s for s in spans if s.name == "agentloom.attempt"
                  and s.parent is not None and s.parent.span_id == tool.context.span_id]
    assert int(trace_id, 16) == run.context.trace_id == tool.context.trace_id
    # the mcp SDK's own client span (global provider unset here: not recording) is the
    # Attempt's context itself
    assert int(parent_id, 16) == attempt.context.span_id
    assert (tool.attributes or {})["gen_ai.tool.type"] == "extension"
