"""Model adapter benchmark: what our Attempt costs next to the bare ``openai`` SDK.

Run from the repository root::

    python bench/models.py             # full run (under ~1 minute)
    python bench/models.py --quick     # fewer samples (under ~15 s)
    python bench/models.py --json      # JSON on stdout, the table on stderr
    python bench/models.py --check     # exit status 1 when a target fails

Everything runs against one scripted OpenAI-compatible server on 127.0.0.1 (real HTTP,
real SSE; ``agentloom.testing.openai_server``), started once for the whole run:

* per-call latency, Chat and Responses: the bare SDK (``create(stream=True)`` and
  iterating the same response to the end) vs. our full Attempt (``complete_once``:
  adapter ``stream_once`` + clocks + aggregation + validation), on the same scripted
  turn (60 text chunks, reasoning, one tool call in 8 argument fragments, usage),
  samples interleaved so drift hits both sides; medians and their ratio;
* aggregation throughput for a 10,000-chunk response: the ``Aggregator`` fed directly,
  ``drive`` + ``Aggregator`` over an in-memory event stream, and end to end through the
  server (bare SDK iteration of the same stream printed beside it).

Every figure printed is measured in that run; the targets are the only constants.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import openai
from openai import AsyncOpenAI

from agentloom.models.adapters import (
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    build_chat_body,
    build_responses_body,
)
from agentloom.models.aggregate import Aggregator, complete_once
from agentloom.models.ports import AttemptInfo, Connection
from agentloom.models.timers import drive
from agentloom.models.types import Finish, Message, ModelRequest, ProviderEvent, TextDelta, ToolDef
from agentloom.testing.openai_server import ScriptedOpenAIServer, Step, chat_turn, responses_turn

TARGET_OVERHEAD_RATIO = 1.2  # our Attempt vs the bare SDK, per call (median)
BIG = 10_000

TOOL = ToolDef(name="get_weather", description="Weather for a city",
               parameters={"type": "object", "properties": {"city": {"type": "string"}}})
REQUEST = ModelRequest(messages=(Message(role="system", content="Be brief."),
                                 Message(role="user", content="Weather in Paris?")), tools=(TOOL,))
ARGS = ['{"ci', 'ty"', ': ', '"Pa', 'ri', 's"', ', "unit"', ': "C"}']


def typical_chat() -> list[Step]:
    return chat_turn([f"word{i} " for i in range(60)], reasoning=[f"r{i} " for i in range(10)],
                     tool_calls=[("call_1", "get_weather", ARGS)], usage=(120, 80))


def typical_responses() -> list[Step]:
    return responses_turn([f"word{i} " for i in range(60)], reasoning=[f"r{i} " for i in range(10)],
                          tool_calls=[("call_1", "get_weather", ARGS)], usage=(120, 80))


def big_chat() -> list[Step]:
    return chat_turn([f"t{i} " for i in range(BIG)], usage=(10, BIG))


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_facts() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "openai": openai.__version__,
    }


def attempt() -> AttemptInfo:
    return AttemptInfo(first_output_timeout_s=30, deadline=time.time() + 300)


async def bare_chat(client: AsyncOpenAI, body: dict[str, Any]) -> int:
    stream = await client.chat.completions.create(
        model=body["model"], messages=body["messages"], tools=body["tools"], stream=True,
        stream_options={"include_usage": True})
    n = 0
    async for _ in stream:
        n += 1
    return n


async def bare_responses(client: AsyncOpenAI, body: dict[str, Any]) -> int:
    stream = await client.responses.create(model=body["model"], input=body["input"], tools=body["tools"],
                                           stream=True)
    n = 0
    async for _ in stream:
        n += 1
    return n


async def paired(
    srv: ScriptedOpenAIServer, turn: Callable[[], list[Step]], samples: int,
    bare: Callable[[], Awaitable[Any]], ours: Callable[[], Awaitable[Any]],
) -> dict[str, Any]:
    """Interleaved samples of the bare SDK and our Attempt on the same scripted turn."""
    bare_ns: list[int] = []
    ours_ns: list[int] = []
    warmup = max(5, samples // 10)
    for i in range(warmup + samples):
        order = ((bare, bare_ns), (ours, ours_ns))
        for fn, out in order if i % 2 == 0 else order[::-1]:
            srv.script(turn())
            t0 = time.perf_counter_ns()
            await fn()
            if i >= warmup:
                out.append(time.perf_counter_ns() - t0)
    bare_ms = statistics.median(bare_ns) / 1e6
    ours_ms = statistics.median(ours_ns) / 1e6
    return {
        "samples": samples,
        "bare_sdk_median_ms": round(bare_ms, 3),
        "agentloom_median_ms": round(ours_ms, 3),
        "added_ms": round(ours_ms - bare_ms, 3),
        "ratio": round(ours_ms / bare_ms, 3),
        "bare_sdk_p90_ms": round(_pct(bare_ns, 0.9) / 1e6, 3),
        "agentloom_p90_ms": round(_pct(ours_ns, 0.9) / 1e6, 3),
    }


def _pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def aggregate_direct(repeats: int) -> dict[str, Any]:
    events: list[ProviderEvent] = [TextDelta(f"t{i} ") for i in range(BIG)]
    events.append(Finish("stop"))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        agg = Aggregator()
        for event in events:
            agg.feed(event)
        agg.response()
        best = min(best, time.perf_counter() - t0)
    return {"chunks": BIG, "best_s": round(best, 6), "chunks_per_s": round(BIG / best)}


async def drive_in_memory(repeats: int) -> dict[str, Any]:
    events: list[ProviderEvent] = [TextDelta(f"t{i} ") for i in range(BIG)]
    events.append(Finish("stop"))

    async def stream() -> AsyncIterator[ProviderEvent]:
        for event in events:
            yield event

    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        agg = Aggregator()
        await drive(stream(), AttemptInfo(stream_idle_timeout_s=30, deadline=time.time() + 300), agg.feed)
        agg.response()
        best = min(best, time.perf_counter() - t0)
    return {"chunks": BIG, "best_s": round(best, 6), "chunks_per_s": round(BIG / best),
            "note": "idle timeout on: the timer is rescheduled on every event"}


async def end_to_end(srv: ScriptedOpenAIServer, adapter: OpenAIChatAdapter, client: AsyncOpenAI,
                     body: dict[str, Any], repeats: int) -> dict[str, Any]:
    ours: list[float] = []
    bare: list[float] = []
    for _ in range(repeats):
        srv.script(big_chat())
        t0 = time.perf_counter()
        response = await complete_once(adapter, REQUEST, attempt())
        ours.append(time.perf_counter() - t0)
        assert response.text.count(" ") == BIG
        srv.script(big_chat())
        t0 = time.perf_counter()
        await bare_chat(client, body)
        bare.append(time.perf_counter() - t0)
    o, b = statistics.median(ours), statistics.median(bare)
    return {"chunks": BIG, "agentloom_median_s": round(o, 4), "agentloom_chunks_per_s": round(BIG / o),
            "bare_sdk_median_s": round(b, 4), "bare_sdk_chunks_per_s": round(BIG / b),
            "ratio": round(o / b, 3)}


async def gateway_paired(srv: ScriptedOpenAIServer, samples: int, client: AsyncOpenAI,
                         chat_body: dict[str, Any], store: str) -> dict[str, Any]:
    """The whole recorded call — bus, pipeline, commits, hooks chain (empty) — against the
    bare SDK streaming the same turn."""
    import tempfile

    from agentloom import Kernel

    with tempfile.TemporaryDirectory(prefix="agentloom-bench-") as tmp:
        url = "memory://" if store == "memory" else f"sqlite:///{tmp}/bench.db"
        kernel = Kernel(url, workspace_root=f"{tmp}/ws")
        kernel.add_model("main", Connection(base_url=srv.base_url, api_key="sk-bench",
                                            model="bench-model"))
        kernel.publish("bench", [], roles={"main": []})
        lease = await kernel.start_run(workspace=False)
        ctx = kernel.invocation_context(lease, release_id="bench")
        try:
            return await paired(srv, typical_chat, samples, lambda: bare_chat(client, chat_body),
                                lambda: kernel.models.generate(REQUEST, ctx, model="main"))
        finally:
            await kernel.models.aclose()
            kernel.close()


async def run(quick: bool) -> dict[str, Any]:
    samples = 60 if quick else 300
    repeats = 3 if quick else 7
    out: dict[str, Any] = {
        "machine": machine_facts(), "targets": {"overhead_ratio_max": TARGET_OVERHEAD_RATIO},
    }
    with ScriptedOpenAIServer() as srv:
        chat_conn = Connection(base_url=srv.base_url, api_key="sk-bench", model="bench-model")
        resp_conn = Connection(base_url=srv.base_url, api_key="sk-bench", model="bench-model",
                               protocol="responses")
        chat = OpenAIChatAdapter(chat_conn)
        responses = OpenAIResponsesAdapter(resp_conn)
        client = AsyncOpenAI(api_key="sk-bench", base_url=srv.base_url, max_retries=0)
        chat_body = build_chat_body(REQUEST, chat_conn)
        resp_body = build_responses_body(REQUEST, resp_conn)
        try:
            print("… per call: chat", file=sys.stderr)
            out["per_call_chat"] = await paired(
                srv, typical_chat, samples, lambda: bare_chat(client, chat_body),
                lambda: complete_once(chat, REQUEST, attempt()))
            print("… per call: responses", file=sys.stderr)
            out["per_call_responses"] = await paired(
                srv, typical_responses, samples, lambda: bare_responses(client, resp_body),
                lambda: complete_once(responses, REQUEST, attempt()))
            for store in ("memory", "sqlite"):
                print(f"… per call: ModelGateway.generate on {store}", file=sys.stderr)
                out[f"per_call_gateway_{store}"] = await gateway_paired(
                    srv, samples, client, chat_body, store)
            print("… aggregation throughput", file=sys.stderr)
            out["aggregate_direct"] = aggregate_direct(repeats)
            out["drive_and_aggregate_in_memory"] = await drive_in_memory(repeats)
            out["end_to_end_10k_chunks"] = await end_to_end(srv, chat, client, chat_body, repeats)
        finally:
            await chat.aclose()
            await responses.aclose()
            await client.close()
    out["checks"] = {
        name: "PASS" if out[name]["ratio"] <= TARGET_OVERHEAD_RATIO else "FAIL"
        for name in ("per_call_chat", "per_call_responses", "per_call_gateway_memory",
                     "per_call_gateway_sqlite")
    }
    return out


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        f"machine: {m['cpu_model']} · {m['cpu_count']} CPUs ({m['cpus_usable']} usable) · {m['platform']}",
        f"         {m['python']} · openai {m['openai']}",
        "",
        "per call (median ms; typical turn: 60 text chunks, reasoning, 1 tool call in 8 fragments)",
        "  chat / responses: one adapter Attempt (complete_once); gw/*: ModelGateway.generate —",
        "  the whole recorded call through bus, pipeline and store — on a memory / SQLite store",
        f"  {'protocol':<10} {'bare SDK':>10} {'AgentLoom':>10} {'added':>8} {'ratio':>7}  target ≤ "
        f"{TARGET_OVERHEAD_RATIO}×",
    ]
    for name, label in (("per_call_chat", "chat"), ("per_call_responses", "responses"),
                        ("per_call_gateway_memory", "gw/memory"),
                        ("per_call_gateway_sqlite", "gw/sqlite")):
        r = result[name]
        lines.append(f"  {label:<10} {r['bare_sdk_median_ms']:>10.3f} {r['agentloom_median_ms']:>10.3f} "
                     f"{r['added_ms']:>8.3f} {r['ratio']:>6.3f}×  {result['checks'][name]}"
                     f"   (p90 {r['bare_sdk_p90_ms']:.3f} / {r['agentloom_p90_ms']:.3f}; n={r['samples']})")
    d = result["aggregate_direct"]
    i = result["drive_and_aggregate_in_memory"]
    e = result["end_to_end_10k_chunks"]
    lines += [
        "",
        f"aggregation throughput ({BIG:,}-chunk response)",
        f"  Aggregator fed directly          {d['chunks_per_s']:>12,} chunks/s  ({d['best_s'] * 1e3:.2f} ms)",
        f"  drive + Aggregator, in memory    {i['chunks_per_s']:>12,} chunks/s  ({i['best_s'] * 1e3:.2f} ms)",
        f"  end to end via server, ours      {e['agentloom_chunks_per_s']:>12,} chunks/s  "
        f"({e['agentloom_median_s'] * 1e3:.1f} ms)",
        f"  end to end via server, bare SDK  {e['bare_sdk_chunks_per_s']:>12,} chunks/s  "
        f"({e['bare_sdk_median_s'] * 1e3:.1f} ms)  ratio {e['ratio']:.3f}×",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    parser.add_argument("--check", action="store_true", help="exit status 1 when a target fails")
    args = parser.parse_args()
    result = asyncio.run(run(args.quick))
    table = render(result)
    if args.json:
        print(table, file=sys.stderr)
        print(json.dumps(result, indent=2))
    else:
        print(table)
    if args.check and "FAIL" in result["checks"].values():
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
