"""Large-result benchmark: one agent run whose SDK tool returns a 100 MB string (issue #11).

Run from the repository root::

    python bench/large_result.py                     # 100 MiB, SQLite and PostgreSQL
    python bench/large_result.py --mb 20             # a smaller result
    python bench/large_result.py --backends sqlite   # a subset: sqlite, postgres
    python bench/large_result.py --json > out.json   # JSON on stdout, the table on stderr
    python bench/large_result.py --check             # exit status 1 when a target fails

Each backend runs in a fresh interpreter (its own peak RSS). There a ``Runtime`` runs one
agent on an in-process scripted model: turn 1 calls the SDK tool, which builds and returns
the text (so the text itself counts in the growth, as a real tool's would); turn 2 reads
one page of it with ``result_read`` through the ref the tool message names; turn 3
answers. Measured:

* peak RSS growth: ``VmHWM`` after the run minus ``VmRSS`` before it, the high-water mark
  reset just before the run (``/proc/self/clear_refs``; where that is refused, the peak
  since the interpreter started, said so in the output);
* stored copies: how many values in the whole database hold a marker placed once in the
  middle of the text (past every preview), and the store's bytes (every text and binary
  value of every table, summed in SQL) over the text's size;
* the database's size on disk (SQLite: the file and its WAL);
* that the page ``result_read`` returned is exactly those bytes of the text.

Every figure printed is measured in that run; the targets are the only constants.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

BACKENDS = ("sqlite", "postgres")
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
MIB = 1 << 20
MARKER = "<<large-result bench marker 7d41c2>>"
PAGE = (4096, 65536)  # the page result_read is asked for: offset past the previews, limit

TARGET_PEAK_GROWTH_MIB = 256.0  # the run of a 100 MiB result: peak RSS growth below this
TARGET_COPIES = 1  # the text is stored exactly once


def log(message: str) -> None:
    print(f"… {message}", file=sys.stderr, flush=True)


# -- the child: one run, measured -------------------------------------------------------------
def make_text(size: int) -> str:
    """``size`` bytes of ASCII lines with ``MARKER`` once, near the middle and away from any
    1 MiB boundary (a store may cut the text there), made with one join: one copy in memory."""
    unit = "".join(f"row {n:07d} of the large result, some words to fill it up\n"
                   for n in range(20_000))

    def fill(n: int) -> list[str]:
        return [unit] * (n // len(unit)) + [unit[: n % len(unit)]]

    at = (size // 2) // MIB * MIB + MIB // 2
    return "".join([*fill(at), MARKER, *fill(size - at - len(MARKER))])


def status_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0); False when refused."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return status_bytes("VmHWM") <= status_bytes("VmRSS") + MIB


class ScriptedModel:
    """Turn 1: the tool call; turn 2: ``result_read`` of ``PAGE`` through the named ref."""

    model = "large-result"

    def __init__(self) -> None:
        self.ref: str | None = None

    async def stream_once(self, request: Any, attempt: Any) -> Any:
        import re

        from agentloom.models.types import Finish, TextDelta, ToolCallDelta

        tools = [m for m in request.messages if m.role == "tool"]
        if not tools:
            yield ToolCallDelta(index=0, id="c1", name="large_text", arguments="{}")
            yield Finish("tool_calls")
            return
        if len(tools) == 1:
            found = re.search(r"result_ref '([^']+)'", str(tools[0].content))
            if found is not None:
                self.ref = found.group(1)
                offset, limit = PAGE
                yield ToolCallDelta(index=0, id="c2", name="result_read", arguments=json.dumps(
                    {"result_ref": self.ref, "offset": offset, "limit": limit}))
                yield Finish("tool_calls")
                return
        yield TextDelta("done")
        yield Finish("stop")

    async def discover(self, connection: Any = None) -> list[Any]:
        return []

    async def aclose(self) -> None:
        return None


def large_tool(size: int) -> Any:
    from agentloom import StrictInput, Tool, ToolContext

    class NoInput(StrictInput):
        pass

    class LargeText(Tool[NoInput]):
        name = "large.text"
        description = "Return a large text."
        input_type = NoInput

        async def execute(self, args: NoInput, ctx: ToolContext) -> str:
            return make_text(size)

    return LargeText()


async def child_run(url: str, size: int, workspaces: str) -> dict[str, Any]:
    from agentloom.agent import AgentSpec, Runtime
    from agentloom.pipeline.records import stored_envelope

    model = ScriptedModel()
    rt = Runtime([AgentSpec(name="main", model=model, tools=(large_tool(size),), window=128_000)],
                 store=url,
                 workspace_root=workspaces)
    try:
        rss_before = status_bytes("VmRSS")
        reset = reset_peak()
        started = time.perf_counter()
        result = await rt.run("get the large text")
        elapsed = time.perf_counter() - started
        peak = status_bytes("VmHWM")
        if result.status != "succeeded":
            raise RuntimeError(f"the run ended {result.status}: {result.error}")
        page_ok = None
        for op in rt.kernel.operations(result.run_id):
            if op["capability_key"] == "result.read":
                envelope = stored_envelope(op, rt.store)
                if envelope is None or envelope.result is None:
                    page_ok = False
                    continue
                offset, limit = PAGE
                expected = make_text(size).encode()[offset:offset + limit].decode()
                page_ok = envelope.result.content[0].data["text"] == expected  # type: ignore[union-attr]
    finally:
        await rt.aclose()
    return {"rss_before": rss_before, "peak": peak, "peak_reset": reset,
            "growth": peak - rss_before, "seconds": elapsed, "ref": model.ref,
            "page_read_exactly": page_ok}


def sqlite_counts(path: str) -> tuple[dict[str, int], int]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        by_table: dict[str, int] = {}
        copies = 0
        marker = MARKER.encode()
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({name})")]
            size = 0
            for column in columns:
                value = f"CAST({column} AS BLOB)"
                n, hits = conn.execute(
                    f"SELECT COALESCE(SUM(length({value})), 0), "
                    f"COALESCE(SUM(instr({value}, ?) > 0), 0) FROM {name} "
                    f"WHERE typeof({column}) IN ('text', 'blob')", (marker,)).fetchone()
                size += n
                copies += hits
            by_table[name] = size
        return by_table, copies
    finally:
        conn.close()


def postgres_counts(url: str) -> tuple[dict[str, int], int]:
    import psycopg

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    schema = query.pop("schema")
    dsn = urlunsplit(parts._replace(query=urlencode(query)))
    by_table: dict[str, int] = {}
    copies = 0
    with psycopg.connect(dsn) as pg:
        columns = pg.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s AND data_type IN ('text', 'bytea')", (schema,)).fetchall()
        for table, column, kind in columns:
            needle = "%s::bytea" if kind == "bytea" else "%s"
            n, hits = pg.execute(
                f'SELECT COALESCE(SUM(octet_length("{column}")), 0), '
                f'COUNT(*) FILTER (WHERE position({needle} in "{column}") > 0) '
                f'FROM "{schema}"."{table}"',
                (MARKER.encode() if kind == "bytea" else MARKER,)).fetchone()
            by_table[table] = by_table.get(table, 0) + int(n)
            copies += int(hits)
    return by_table, copies


def child(args: argparse.Namespace) -> None:
    size = args.mb * MIB
    work = tempfile.mkdtemp(prefix="agentloom-large-")
    try:
        url = f"sqlite:///{work}/agentloom.db" if args.backend == "sqlite" else args.url
        figures = asyncio.run(child_run(url, size, f"{work}/ws"))
        if args.backend == "sqlite":
            path = f"{work}/agentloom.db"
            figures["disk_bytes"] = sum(os.path.getsize(path + s) for s in ("", "-wal")
                                        if os.path.exists(path + s))
            by_table, copies = sqlite_counts(path)
        else:
            figures["disk_bytes"] = None
            by_table, copies = postgres_counts(url)
        figures.update(size=size, by_table=by_table, store_bytes=sum(by_table.values()),
                       copies=copies)
        print(json.dumps(figures))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- the parent: one child per backend, the table ----------------------------------------------
def pg_schema_url(base: str) -> tuple[str | None, str | None]:
    """A fresh-schema URL on ``base``, or (None, why) when the server is unreachable."""
    try:
        import psycopg

        with psycopg.connect(base, connect_timeout=3):
            pass
    except Exception as exc:  # any failure means: skip this backend
        from agentloom.errors import redact_secrets

        return None, redact_secrets(f"{type(exc).__name__}: {exc}")[:200]
    parts = urlsplit(base)
    query = dict(parse_qsl(parts.query))
    query["schema"] = f"bench_{os.getpid()}_{secrets.token_hex(4)}"
    return urlunsplit(parts._replace(query=urlencode(query))), None


def drop_schema(url: str) -> None:
    from agentloom.store import open_store

    store = open_store(url)
    try:
        store.drop_schema()  # type: ignore[attr-defined]
    finally:
        store.close()


def measure(backend: str, mb: int, pg_base: str) -> dict[str, Any]:
    url = ""
    if backend == "postgres":
        made, why = pg_schema_url(pg_base)
        if made is None:
            return {"skipped": f"PostgreSQL unreachable ({why})"}
        url = made
    log(f"[{backend}] one run with a {mb} MiB SDK tool result, in a fresh interpreter")
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", "--backend", backend, "--mb", str(mb),
             "--url", url], capture_output=True, text=True, timeout=1800, check=False)
    finally:
        if url:
            drop_schema(url)
    if done.returncode != 0:
        return {"error": done.stderr[-3000:]}
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(mb: int, results: dict[str, dict[str, Any]], out: Any) -> bool:
    print(f"\nlarge result: one run whose SDK tool returns {mb} MiB of text "
          f"({mb * MIB:,} bytes); each backend in a fresh interpreter", file=out)
    failed = False
    for backend, res in results.items():
        if "skipped" in res:
            print(f"  {backend}: SKIP — {res['skipped']}", file=out)
            continue
        if "error" in res:
            print(f"  {backend}: ERROR\n{res['error']}", file=out)
            failed = True
            continue
        growth_mib = res["growth"] / MIB
        peak_note = "" if res["peak_reset"] else " (peak since start: VmHWM reset refused)"
        print(f"  {backend}:", file=out)
        print(f"    run time              {res['seconds']:.2f} s", file=out)
        print(f"    RSS before            {res['rss_before'] / MIB:,.1f} MiB", file=out)
        print(f"    peak RSS              {res['peak'] / MIB:,.1f} MiB{peak_note}", file=out)
        print(f"    peak RSS growth       {growth_mib:,.1f} MiB", file=out)
        print(f"    stored copies         {res['copies']} (values holding the marker)", file=out)
        print(f"    store bytes           {res['store_bytes']:,} "
              f"({res['store_bytes'] / res['size']:.3f}× the result)", file=out)
        top = sorted(res["by_table"].items(), key=lambda kv: -kv[1])[:4]
        print("    largest tables        " + ", ".join(f"{k} {v:,}" for k, v in top), file=out)
        if res["disk_bytes"] is not None:
            print(f"    database on disk      {res['disk_bytes']:,} bytes (file + WAL)", file=out)
        print(f"    result_read page      {'exact' if res['page_read_exactly'] else 'WRONG'} "
              f"(ref {res['ref']})", file=out)
        growth_ok = growth_mib < TARGET_PEAK_GROWTH_MIB * mb / 100
        copies_ok = res["copies"] == TARGET_COPIES and bool(res["page_read_exactly"])
        print(f"    target: peak growth < {TARGET_PEAK_GROWTH_MIB * mb / 100:.0f} MiB → "
              f"{verdict(growth_ok)}; stored once, read back exactly → {verdict(copies_ok)}",
              file=out)
        failed = failed or not (growth_ok and copies_ok)
    return not failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="result size in MiB (default 100)")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated subset of sqlite,postgres")
    parser.add_argument("--pg-url", default=os.environ.get(
        "AGENTLOOM_BENCH_PG", os.environ.get("AGENTLOOM_TEST_PG", DEFAULT_PG)))
    parser.add_argument("--json", action="store_true", help="JSON on stdout, table on stderr")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - set(BACKENDS)
    if unknown:
        parser.error(f"unknown backends {sorted(unknown)}; choose from {', '.join(BACKENDS)}")
    results = {b: measure(b, args.mb, args.pg_url) for b in backends}
    out = sys.stderr if args.json else sys.stdout
    ok = report(args.mb, results, out)
    if args.json:
        print(json.dumps({"mb": args.mb, "results": results}, indent=2))
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
