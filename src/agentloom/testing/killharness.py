"""A real-process kill harness for the recorded phases of one call (000 §3.1).

Run it as a subprocess::

    python -m agentloom.testing.killharness --store URL --ledger PATH --run-id ID \\
        --calls N [--hooks before,after] [--recover]

It builds a :class:`~agentloom.kernel.Kernel` on ``URL``, publishes one tool,
``ledger.append`` (arguments ``{"n": int}``), and issues ``N`` calls with the
logical keys ``call-0`` … ``call-<N-1>``. The tool's handler is the *independent*
side-effect counter: it appends ``"<operation_id> <n>\\n"`` to the ledger file and
fsyncs it before returning, so the file says what really ran whatever the store says.
With ``--hooks`` a real before-hook (replaces ``n`` with ``n + HOOK_OFFSET`` and adds
``tag``) and/or after-hook (adds result metadata) run through the pipeline; each
appends ``"<operation_id> <timing>\\n"`` to the hook ledger (default ``PATH.hooks``).
``--die-in-hook TIMING`` makes that hook SIGKILL the process right after its ledger
line: the hook took effect but its decision was never committed.

Without ``--recover`` the run is started; with it, the run is claimed (a new lease
epoch), :meth:`Kernel.recover` finishes every non-terminal operation, and the same
logical calls are issued again (a finished one returns its stored envelope); with
``--no-sweep`` the sweep is skipped and re-issuing a logical call resumes it. Each
finished call prints one JSON line. Set ``AGENTLOOM_CRASH_AT=name[@n]`` to make the
process SIGKILL itself at a phase boundary (``agentloom.pipeline.crashpoints``).

:func:`observe` reads back the store and both ledgers; :func:`violations` checks the
invariants every crash/recover cycle must keep (no lost operation, no duplicated or
unaccounted side effect, the envelope tells what the handler executed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel
from agentloom.pipeline.records import stored_envelope
from agentloom.results import ToolResult
from agentloom.store import open_store
from agentloom.store.run_rows import run_rows

RELEASE_ID = "kill-harness"
CAPABILITY_KEY = "ledger.append"
EXPOSED_NAME = "ledger_append"
HOOK_OFFSET = 1000
"""The before-hook replaces ``n`` with ``n + HOOK_OFFSET``: ``n % HOOK_OFFSET`` is the call."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}},
    "required": ["n"],
    "additionalProperties": False,
}


def logical_key(index: int) -> str:
    return f"call-{index}"


def _append_line(path: Path, line: str) -> None:
    """Append one line and make it durable before returning (the effect *happened*)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


class LedgerAppend:
    """The raw handler of ``ledger.append``: one call = one fsynced ledger line."""

    rerunnable = False
    recoverable = False

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        n = int(request.arguments["n"])
        _append_line(self.ledger, f"{request.operation_id} {n}\n")
        return ToolResult.success({"n": n})


def _hook_ran(hook_ledger: Path, event: dict[str, Any], timing: str, die: bool) -> None:
    _append_line(hook_ledger, f"{event['operation_id']} {timing}\n")
    if die:
        os.kill(os.getpid(), signal.SIGKILL)


def _before_hook(hook_ledger: Path, die: bool) -> Any:
    def before(event: dict[str, Any]) -> dict[str, Any]:
        _hook_ran(hook_ledger, event, "before", die)
        n = event["payload"]["n"]
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/n", "value": n + HOOK_OFFSET},
            {"op": "add", "path": "/payload/tag", "value": "patched"},
        ]}
    return before


def _after_hook(hook_ledger: Path, die: bool) -> Any:
    def after(event: dict[str, Any]) -> dict[str, Any]:
        _hook_ran(hook_ledger, event, "after", die)
        return {"decision": "allow", "payload_patch": [
            {"op": "add", "path": "/result/metadata/checked", "value": True},
        ]}
    return after


def build_kernel(store_url: str, ledger: Path, *, hooks: Sequence[str] = (),
                 hook_ledger: Path | None = None, die_in_hook: str | None = None) -> Kernel:
    """A kernel with ``ledger.append`` published under ``RELEASE_ID`` (role ``main``)."""
    unknown = {*hooks, *([die_in_hook] if die_in_hook else [])} - {"before", "after"}
    if unknown:
        raise ValueError(f"unknown hook timings {sorted(unknown)}; use before and/or after")
    hook_ledger = hook_ledger or ledger.with_name(ledger.name + ".hooks")
    factories = {"before": _before_hook, "after": _after_hook}
    specs = [HookSpec(hook_id=f"kill-{t}", timing="before" if t == "before" else "after",
                      handler=HandlerRef(ref=f"killharness:{t}")) for t in sorted(set(hooks))]
    functions = {f"killharness:{t}": factories[t](hook_ledger, t == die_in_hook)
                 for t in sorted(set(hooks))}
    kernel = Kernel(store_url, hooks=specs, hook_functions=functions)
    spec = CapabilitySpec(
        resource_version_id="kill-harness-v1", capability_key=CAPABILITY_KEY, kind="hosted",
        exposed_name=EXPOSED_NAME, description="append one line to the side-effect ledger",
        input_schema=INPUT_SCHEMA, handler_ref="kill-harness:ledger",
    )
    kernel.publish(RELEASE_ID, [(spec, LedgerAppend(ledger))], roles={"main": [CAPABILITY_KEY]})
    return kernel


async def run_harness(*, store: str, ledger: Path, run_id: str, calls: int,
                      hooks: Sequence[str] = (), recover: bool = False,
                      hook_ledger: Path | None = None, sweep: bool = True,
                      die_in_hook: str | None = None) -> list[dict[str, Any]]:
    """Start (or claim and recover) ``run_id`` and issue its ``calls`` logical calls."""
    kernel = build_kernel(store, ledger, hooks=hooks, hook_ledger=hook_ledger,
                          die_in_hook=die_in_hook)
    lines: list[dict[str, Any]] = []

    def emit(source: str, key: str, result: Any) -> None:
        line = {"source": source, "logical_key": key, "operation_id": result.operation_id,
                "outcome": result.outcome, "attempts": result.attempts}
        lines.append(line)
        print(json.dumps(line, sort_keys=True), flush=True)

    try:
        if recover:
            lease = kernel.claim(run_id)
            ctx = kernel.invocation_context(lease, release_id=RELEASE_ID)
            keys = {r["operation_id"]: r["logical_key"] for r in kernel.operations(run_id)}
            for result in await kernel.recover(ctx) if sweep else []:
                emit("recover", keys.get(result.operation_id, "?"), result)
        else:
            lease = await kernel.start_run(run_id=run_id)
            ctx = kernel.invocation_context(lease, release_id=RELEASE_ID)
        for index in range(calls):
            key = logical_key(index)
            result = await kernel.bus.request(EXPOSED_NAME, {"n": index}, ctx, logical_key=key)
            emit("call", key, result)
    finally:
        kernel.close()
    return lines


# -- reading back what happened ---------------------------------------------------------
@dataclass(slots=True)
class Observed:
    """The store's view of one run next to the ledgers' independent view."""

    run_id: str
    operations: list[dict[str, Any]]
    attempts: dict[str, list[dict[str, Any]]]
    hook_rows: dict[str, list[dict[str, Any]]]
    effects: list[tuple[str, int]]
    """Ledger lines in order: ``(operation_id, n)``."""
    hook_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Hook ledger: ``(operation_id, timing)`` → how many times the hook function ran."""
    context: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Context records of the run by ``record_id``, oldest revision first."""

    def by_key(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in self.operations:
            grouped.setdefault(row["logical_key"], []).append(row)
        return grouped

    def effect_count(self, operation_id: str) -> int:
        return sum(1 for op, _ in self.effects if op == operation_id)

    def effect_values(self, operation_id: str) -> list[int]:
        return [n for op, n in self.effects if op == operation_id]


def read_ledger(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    effects = []
    for line in path.read_text(encoding="utf-8").splitlines():
        operation_id, n = line.split()
        effects.append((operation_id, int(n)))
    return effects


def observe(store_url: str, run_id: str, ledger: Path,
            hook_ledger: Path | None = None) -> Observed:
    hook_ledger = hook_ledger or ledger.with_name(ledger.name + ".hooks")
    store = open_store(store_url)
    try:
        rows = run_rows(store, run_id)
    finally:
        store.close()
    hook_calls: Counter[tuple[str, str]] = Counter()
    if hook_ledger.exists():
        for line in hook_ledger.read_text(encoding="utf-8").splitlines():
            operation_id, timing = line.split()
            hook_calls[(operation_id, timing)] += 1
    return Observed(run_id, [dict(r) for r in rows.operations],
                    {k: [dict(r) for r in v] for k, v in rows.attempts.items()},
                    {k: [dict(r) for r in v] for k, v in rows.hook_rows.items()},
                    read_ledger(ledger), hook_calls,
                    {k: [dict(r) for r in v] for k, v in rows.context.items()})


def violations(obs: Observed, calls: int) -> list[str]:
    """Every invariant a crash + recovery must keep, as readable findings (empty = all kept).

    I2: each logical call has exactly one operation and it is terminal. I1/I3: no
    logical call took effect more than once (counted by the ledger's ``n``, so a
    re-execution under a *new* operation id is caught too), and every effect belongs
    to an operation of this run. I4: a ``succeeded`` operation has a succeeded
    Attempt with its raw result. The envelope's ``executed_arguments`` is what the
    handler received. I6: the context pairs each call with exactly one result record
    and shows the model the arguments that were executed.
    """
    found: list[str] = []
    grouped = obs.by_key()
    expected = {logical_key(i) for i in range(calls)}
    for key in sorted(expected):
        rows = grouped.get(key, [])
        if len(rows) != 1:
            found.append(f"{key}: {len(rows)} operations (want exactly 1)")
    for key in sorted(set(grouped) - expected):
        found.append(f"{key}: an operation no call asked for")
    for row in obs.operations:
        if row["outcome"] is None:
            found.append(f"{row['logical_key']}: left non-terminal in phase {row['phase']!r}")
    per_call = Counter(n % HOOK_OFFSET for _, n in obs.effects)
    for index, count in sorted(per_call.items()):
        if count > 1:
            found.append(f"{logical_key(index)}: the side effect happened {count} times")
    known = {row["operation_id"]: row for row in obs.operations}
    for operation_id, n in obs.effects:
        if operation_id not in known:
            found.append(f"effect n={n} by {operation_id}: no operation of run {obs.run_id}")
    for operation_id, row in known.items():
        envelope = envelope_dict(row)
        values = obs.effect_values(operation_id)
        if row["outcome"] == "succeeded":
            raws = [a for a in obs.attempts[operation_id]
                    if a["status"] == "succeeded" and a["data"].get("raw")]
            if len(raws) != 1:
                found.append(f"{row['logical_key']}: succeeded with {len(raws)} raw results")
            if len(values) != 1:
                found.append(f"{row['logical_key']}: succeeded with {len(values)} effects")
        executed = envelope.get("executed_arguments") or {}
        if values and executed.get("n") != values[0]:
            found.append(f"{row['logical_key']}: handler ran n={values[0]} but the envelope "
                         f"says it executed {executed!r}")
        found.extend(_context_findings(obs, row))
    return found


def envelope_dict(row: dict[str, Any]) -> dict[str, Any]:
    """The stored envelope of an operations row as a dict ({} while it is not terminal)."""
    envelope = stored_envelope(row)
    return envelope.to_dict() if envelope is not None else {}


def _context_findings(obs: Observed, row: dict[str, Any]) -> list[str]:
    """I6: the model's history pairs the call with one result, and shows what was executed."""
    key, operation_id = row["logical_key"], row["operation_id"]
    envelope = envelope_dict(row)
    calls = obs.context.get(f"call:{operation_id}", [])
    results = obs.context.get(f"result:{operation_id}", [])
    found = []
    if not calls:
        found.append(f"{key}: no tool_call record in the context")
    elif envelope.get("executed_arguments") is not None and \
            calls[-1]["data"].get("arguments") != envelope["executed_arguments"]:
        found.append(f"{key}: the context shows arguments {calls[-1]['data'].get('arguments')!r}"
                     f" but {envelope['executed_arguments']!r} were executed")
    if row["outcome"] is not None:
        if len(results) != 1:
            found.append(f"{key}: {len(results)} tool_result records (want exactly 1)")
        elif results[0]["data"].get("outcome") != row["outcome"]:
            found.append(f"{key}: the context says {results[0]['data'].get('outcome')!r} but the "
                         f"operation is {row['outcome']!r}")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentloom.testing.killharness",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--store", required=True, help="store URL (sqlite:///… or postgresql://…)")
    parser.add_argument("--ledger", required=True, type=Path, help="side-effect ledger file")
    parser.add_argument("--hook-ledger", type=Path, help="hook ledger (default LEDGER.hooks)")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--hooks", default="", help="comma-separated: before, after")
    parser.add_argument("--recover", action="store_true",
                        help="claim the run, recover it, then (re)issue the calls")
    parser.add_argument("--no-sweep", action="store_true",
                        help="with --recover: skip Kernel.recover; re-issuing resumes each call")
    parser.add_argument("--die-in-hook", choices=("before", "after"),
                        help="that hook SIGKILLs the process after its ledger line")
    args = parser.parse_args(argv)
    hooks = [h.strip() for h in args.hooks.split(",") if h.strip()]
    asyncio.run(run_harness(store=args.store, ledger=args.ledger, run_id=args.run_id,
                            calls=args.calls, hooks=hooks, recover=args.recover,
                            hook_ledger=args.hook_ledger, sweep=not args.no_sweep,
                            die_in_hook=args.die_in_hook))
    return 0


if __name__ == "__main__":
    sys.exit(main())
