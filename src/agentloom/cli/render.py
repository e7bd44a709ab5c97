"""Human output of the CLI (rich): the live view of a run and the ``runs`` tables.

Nothing here is used with ``--json``; JSON output is plain ``json.dumps`` on stdout. Every value
that comes from a run or a store is shown through ``terminal.plain`` / ``printable``: its control
characters escaped, its markup printed as text (table cells are ``Text``, never markup strings).

The live view shows one row per model, tool or delegation call — role, call id, capability,
status and a summary of the actual result — from the run handle's events. On a terminal it
redraws in place; otherwise (a pipe, a CI log) it prints one line per finished call. A command
that exited non-zero is summarised by its exit code and the tail of its stderr
(``agentloom.agent.events.command_failure``), live and in ``runs show``. A run's hook
warnings are printed once more at the end of its output (``print_hook_warnings``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from agentloom.agent import RunEvent, RunResult
from agentloom.agent.events import command_failure
from agentloom.agent.spec import DELEGATE_PREFIX
from agentloom.cli.terminal import plain, printable
from agentloom.views import USAGE_FIELDS, diagnosis_lines, excerpt

__all__ = ["LiveView", "hook_warning", "print_events", "print_hook_warnings", "print_result",
           "print_run_detail", "print_runs"]

STATUS_STYLE = {
    "succeeded": "green", "running": "yellow", "started": "yellow", "failed": "red",
    "denied": "magenta", "unknown": "bright_red", "cancelled": "bright_black",
    "timed_out": "red", "interrupted": "bright_red",
}
TEXT_LIMIT = 160
# A call's summary is shown whole: its event keeps it short (200 characters; a failed command's
# exit code and stderr tail, ~310); this only bounds what another producer might send.
SUMMARY_SHOWN = 400
ROW_LIMIT = 80  # a summary in a table row


def _status(status: str | None) -> Text:
    status = status or "—"
    return plain(status, STATUS_STYLE.get(status, ""))


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if at else "—"


@dataclass(slots=True)
class _Call:
    kind: str
    role: str
    name: str
    call_id: str
    status: str = "started"
    summary: str = ""


class LiveView:
    """Consumes ``RunHandle.events()`` and shows the calls of a run as they happen."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.calls: list[_Call] = []
        self._open: dict[tuple[str, str, str], _Call] = {}
        self._live: Live | None = None

    def __enter__(self) -> LiveView:
        if self.console.is_terminal:
            self._live = Live(self._table(), console=self.console, auto_refresh=False,
                              transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.update(self._table(), refresh=True)
            self._live.__exit__(kind, exc, tb)

    def handle(self, event: RunEvent) -> None:
        data = dict(event.data)
        role = printable(data.get("role") or "")
        if event.type == "run.started":
            self._line(Text.assemble(("run ", "bold"), plain(
                f"{event.run_id} started (agent {data.get('agent')})")))
        elif event.type == "model.call.started":
            self._start(_Call("model", role, printable(f"turn {data.get('turn')}"), "—"),
                        ("model", role, str(data.get("turn"))))
        elif event.type == "model.call.completed":
            calls, rejected = data.get("tool_calls"), data.get("answer_rejected")
            detail = f"answer rejected: {rejected}" if rejected else \
                ("final answer" if calls == 0 else f"{calls} tool call(s)") \
                if calls is not None else str(data.get("error_code") or "")
            self._finish(("model", role, str(data.get("turn"))), str(data.get("status")), detail)
        elif event.type in ("tool.call.started", "delegation.call.started"):
            capability = str(data.get("capability") or "")
            kind = "delegation" if capability.startswith(DELEGATE_PREFIX) else "tool"
            self._start(_Call(kind, role, printable(capability),
                              printable(data.get("call_id") or "—")),
                        ("tool", role, str(data.get("call_id"))))
        elif event.type in ("tool.call.completed", "delegation.call.completed"):
            self._finish(("tool", role, str(data.get("call_id"))), str(data.get("status")),
                         str(data.get("summary") or ""))
        elif event.type == "node.started":  # a workflow node (issue 20)
            node = printable(str(data.get("node")))
            self._start(_Call("node", node, printable(f"attempt {data.get('attempt')}"),
                              printable(data.get("call_id") or "—")),
                        ("node", node, str(data.get("call_id"))))
        elif event.type == "node.completed":
            self._finish(("node", printable(str(data.get("node"))), str(data.get("call_id"))),
                         str(data.get("status")), str(data.get("error_code") or ""))
        elif event.type == "node.waiting":
            self._line(plain(f"node {data.get('node')} waits for a person: "
                             f"{excerpt(str(data.get('reason') or ''), TEXT_LIMIT)}", "yellow"))
        self._refresh()

    # -- rows ----------------------------------------------------------------------------
    def _start(self, call: _Call, key: tuple[str, str, str]) -> None:
        self.calls.append(call)
        self._open[key] = call

    def _finish(self, key: tuple[str, str, str], status: str, summary: str) -> None:
        call = self._open.pop(key, None)
        if call is None:
            return
        summary = summary.removeprefix(f"{status}:").strip()
        call.status, call.summary = printable(status), printable(excerpt(summary, SUMMARY_SHOWN))
        if self._live is None:  # every field of a _Call is printable() already
            self._line(Text.assemble(
                f"{call.role:<10} {call.kind:<10} {call.name} ",
                (f"[{call.call_id}] " if call.call_id != "—" else ""), _status(call.status),
                (f": {call.summary}" if call.summary else "")))

    def _line(self, text: Text) -> None:
        if self._live is None:
            self.console.print(text, highlight=False, soft_wrap=True)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._table(), refresh=True)

    def _table(self) -> Table:
        table = Table(box=None, show_edge=False, pad_edge=False, expand=True)
        for column in ("#", "role", "kind", "call", "call id", "status", "summary"):
            table.add_column(column, overflow="ellipsis", no_wrap=True,
                             ratio=1 if column == "summary" else None)
        for i, call in enumerate(self.calls[-40:], start=max(1, len(self.calls) - 39)):
            table.add_row(str(i), Text(call.role), call.kind, Text(call.name), Text(call.call_id),
                          _status(call.status), Text(call.summary))
        return table


def print_result(console: Console, result: RunResult) -> None:
    """The run's final line and answer (or error)."""
    head = Text.assemble(("run ", "bold"), plain(result.run_id), " ", _status(result.status),
                         f" after {result.steps} step(s)")
    console.print(head, highlight=False)
    if isinstance(result.output, str):
        if result.output:
            console.print(plain(result.output), highlight=False, soft_wrap=True)
    elif result.output is not None:  # a structured answer: its JSON, indented
        console.print(plain(json.dumps(result.output, indent=2, ensure_ascii=False)),
                      highlight=False, soft_wrap=True)
    if result.error is not None:
        console.print(plain(f"{result.error.code}: {result.error.message}", "red"),
                      highlight=False, soft_wrap=True)
    for call in result.waiting:
        console.print(plain(
            f"waits for a person: {call['capability']} (op {call['operation_id']}): "
            f"{call['question']}\n  answer with: agentloom runs approve {result.run_id} "
            f"{call['operation_id']}  (or runs reject … --reason TEXT); then a worker resumes "
            "it (agentloom worker CONFIG, or agentloom runs resume RUN_ID)", "yellow"),
            highlight=False, soft_wrap=True)
    if result.status == "pending":
        console.print(plain("given back to the queue: a worker resumes it from its last step",
                            "yellow"), highlight=False)


def print_runs(console: Console, runs: list[dict[str, Any]]) -> None:
    if not runs:
        console.print("no runs in this store")
        return
    table = Table(show_edge=False)
    for column in ("run id", "status", "agent", "created", "task"):
        table.add_column(column, no_wrap=True, overflow="ellipsis",
                         min_width=20 if column == "task" else None)
    for run in runs:
        table.add_row(plain(run["run_id"]), _status(run["status"]), plain(run["agent"] or "—"),
                      _when(run["created_at"]), plain(excerpt(run["task"], ROW_LIMIT)))
    console.print(table)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return excerpt(text, TEXT_LIMIT)


def print_run_detail(console: Console, run: dict[str, Any]) -> None:
    """``runs show``: the run, then one block per operation (long values truncated)."""
    console.print(Text.assemble(("run ", "bold"), plain(run["run_id"]), " ",
                                _status(run["status"])), highlight=False)
    for label, value in (("agent", run["agent"]), ("task", run["task"]),
                         ("created", _when(run["created_at"])),
                         ("updated", _when(run["updated_at"])), ("steps", run["steps"]),
                         ("session", run["session_id"]), ("sandbox", run["sandbox_backend"]),
                         ("output", run["output"])):
        if value is not None:
            console.print(plain(f"  {label}: {_short(value)}"), highlight=False)
    origin = run.get("forked_from")
    if origin:
        changed = " (under another release)" if origin.get("release_changed") else ""
        console.print(plain(f"  forked from: run {origin['run_id']} at {origin['operation_id']} "
                            f"(turn {origin.get('turn')}){changed}"), highlight=False)
        console.print(plain(f"  files: {run.get('files')}"), highlight=False)
    if run["duration_s"] is not None:
        console.print(plain(f"  duration: {run['duration_s']:.3f} s"), highlight=False)
    if any(v is not None for v in run["usage"].values()):
        console.print(plain(f"  usage: {_tokens(run['usage'])}"), highlight=False)
    if run["error"]:
        console.print(plain(f"  error: {run['error']['code']}: {_short(run['error']['message'])}",
                            "red"), highlight=False)
    for warning in run.get("warnings", []):
        console.print(plain("  " + hook_warning(warning), "yellow"), highlight=False)
    failures = run["failures"]
    if failures and run["status"] in ("running", "interrupted"):
        last = failures["last"]
        console.print(plain(
            f"  failed {failures['count']} time(s) in a row ({failures['total']} in all); "
            f"a worker tries again after {_when(failures['retry_at'])}: "
            f"{last['code']}: {_short(last['message'])}", "red"), highlight=False)
    cleanup = run.get("cleanup")
    if cleanup and cleanup["pending"]:
        console.print(plain(
            f"  cleanup pending: its folders are not deleted yet ({cleanup['attempts']} "
            f"attempt(s)); agentloom worker tries again after {_when(cleanup['next_try'])}, "
            f"agentloom cleanup at once: {_short(cleanup['last_error'])}", "yellow"),
            highlight=False)
    for line in diagnosis_lines(run["diagnosis"]) if run.get("diagnosis") else ():
        console.print(plain(f"  {line}", "cyan"), highlight=False)
    if run.get("nodes") is not None:
        _graph(console, run)
    console.print(Text(f"\n{len(run['operations'])} operation(s)", style="bold"))
    for i, op in enumerate(run["operations"], start=1):
        console.print(_operation(i, op), soft_wrap=True)


_NODE_MARKS = {"succeeded": ("✓", "green"), "failed": ("✗", "red"), "running": ("▶", "cyan"),
               "waiting": ("⏸", "yellow"), "pending": ("·", "dim")}


def _graph(console: Console, run: dict[str, Any]) -> None:
    """A workflow run's graph state: each node with its status, attempts and output, the
    current nodes, what a waiting node waits for, then the edges."""
    current = ", ".join(run["current"]) or "none"
    console.print(Text.assemble(("\nworkflow ", "bold"), plain(str(run["workflow"])),
                                plain(f"  current: {current}")), highlight=False)
    width = max(len(n["node"]) for n in run["nodes"])
    for node in run["nodes"]:
        mark, style = _NODE_MARKS.get(node["status"], ("?", "red"))
        tries = f"  ({node['attempts']} attempts)" if node["attempts"] > 1 else ""
        line = Text.assemble(plain(f"  {mark} ", style), plain(f"{node['node']:<{width}}  "),
                             plain(f"{node['kind']:<10} "), _status(node["status"]), plain(tries))
        if node["output"]:
            line.append_text(plain(f"  → {_short(node['output'])}"))
        if node["error"]:
            line.append_text(plain(f"  {node['error'].get('code')}: "
                                   f"{_short(node['error'].get('message'))}", "red"))
        console.print(line, highlight=False)
        for unknown in node["unknown"]:
            console.print(plain(f"      effect unknown: {unknown.get('capability')} "
                                f"{_short(unknown.get('arguments'))} (op "
                                f"{unknown.get('operation_id')})", "yellow"), highlight=False)
    for edge in run.get("edges") or []:
        extra = "".join(f", {k} {edge[k]}" for k in ("when", "on_error", "max") if k in edge)
        join = f" (join {edge['join']})" if len(edge["from"]) > 1 else ""
        console.print(plain(f"    {' + '.join(edge['from'])} → {', '.join(edge['to'])}"
                            f"{join}{extra}", "dim"), highlight=False)


def _tokens(usage: dict[str, int | None]) -> str:
    """``12 input, 5 output, 0 reasoning tokens`` (``—`` for a count not reported)."""
    counts = [f"{'—' if usage[f] is None else usage[f]} {f.removesuffix('_tokens')}"
              for f in USAGE_FIELDS]
    return ", ".join(counts) + " tokens"


def _operation(i: int, op: dict[str, Any]) -> Group:
    call = f" [{op['call_id']}]" if op["call_id"] else ""
    node = op.get("node")  # the workflow node the call served (issue 37)
    if node:
        call += f" [node {node['name']}#{node['attempt']}]"
    lines: list[Text] = [Text.assemble(
        (f"{i:>3}. ", "bold"), plain(f"{op['kind']} {op['capability']}{call}  role {op['role'] or '—'}  "),
        _status(op["status"]), plain(f"  ({op['phase']}, op {op['operation_id']})"))]
    attempts = op["attempts"]
    shown = ", ".join(f"#{a['attempt_no']} {a['status']}" for a in attempts["items"])
    took = f", {op['duration_s']:.3f} s" if op["duration_s"] is not None else ""
    lines.append(plain(f"     attempts: {attempts['count']}" + (f" ({shown})" if shown else "")
                       + took))
    if op["usage"] is not None:
        lines.append(plain(f"     usage: {_tokens(op['usage'])}"))
    for hook in op["hooks"]:
        decision = hook["decision"] or "no decision"
        why = hook["reason"] or hook["diagnostic"]
        lines.append(plain(f"     hook {hook['hook_id']} ({hook['timing']}): {hook['status']}, "
                           f"{decision}{f' — {_short(why)}' if why else ''}"))
        if hook["patch_error"]:
            dropped = hook["patch_error"]
            lines.append(plain(f"       patch dropped: {dropped['code']}: "
                               f"{_short(dropped['message'])}"))
    approval = op.get("approval")
    if approval:  # who answered the person's question about this call, when and why
        lines.append(plain(f"     approval: {_approval_line(approval)}",
                           "yellow" if approval["status"] == "pending" else "magenta"))
    if op["kind"] != "model":
        lines.append(plain(f"     proposed: {_short(op['proposed_arguments'])}"))
        if op["executed_arguments"] is None:
            lines.append(Text("     executed: — (not executed)"))
        elif op["arguments_changed"]:
            lines.append(plain(f"     executed: {_short(op['executed_arguments'])}", "yellow"))
        else:
            lines.append(Text("     executed: (as proposed)"))
    if op["raw_result"] is not None:
        lines.append(plain(f"     raw: {_short(op['raw_result'])}"))
        if op["effective_result"] is None:
            lines.append(Text("     effective: — (not delivered)"))
        elif op["result_changed"]:
            lines.append(plain(f"     effective: {_short(op['effective_result'])}", "yellow"))
        else:
            lines.append(Text("     effective: (same as raw)"))
    failure = _command_failure(op)
    if failure is not None:
        lines.append(plain(f"     {failure}", "red"))
    if op["error"]:
        lines.append(plain(f"     error: {op['error']['code']}: {_short(op['error']['message'])}",
                           "red"))
    elif op["reason"]:
        lines.append(plain(f"     reason: {_short(op['reason'])}", "magenta"))
    return Group(*lines)


def _approval_line(approval: Mapping[str, Any]) -> str:
    """``approved by cli:alice at 2026-12-01 15:00:00 (reason: ok) — asked: Write it?``;
    ``pending — asked: …`` while nobody answered (local time, as ``runs show`` prints times)."""
    status = approval["status"]
    asked = f" — asked: {_short(approval['question'])}"
    if status == "pending":
        deadline = f" (until {_when(approval['deadline'])})" if approval["deadline"] else ""
        return f"pending{deadline}{asked}"
    when = f" at {_when(approval['answered_at'])}"
    if status == "expired":
        return f"expired{when} (the default, {approval['default']}, applied){asked}"
    by = f" by {approval['actor']}" if approval["actor"] else ""
    why = f" (reason: {_short(approval['reason'])})" if approval["reason"] else ""
    return printable(f"{status}{by}{when}{why}{asked}")


def _command_failure(op: dict[str, Any]) -> str | None:
    """``exit N: <stderr tail>`` when the operation's result (the delivered one, else the raw)
    is a command's that exited non-zero; the ``raw:`` line cuts its JSON before its stderr."""
    text = op["effective_result"] if op["effective_result"] is not None else op["raw_result"]
    if op["kind"] == "model" or not text or not text.startswith("{"):
        return None
    try:
        body = json.loads(text)
    except ValueError:  # an error result's text ends with "CODE: message"
        return None
    return command_failure(body) if isinstance(body, dict) else None


def print_events(console: Console, events: list[dict[str, Any]]) -> None:
    if not events:
        console.print("no events")
        return
    table = Table(show_edge=False)
    for column in ("time", "event", "role", "capability", "call id", "status", "summary"):
        table.add_column(column, no_wrap=True, overflow="ellipsis",
                         min_width=20 if column == "summary" else None)
    for e in events:
        summary = e.get("summary") or e.get("output") or (e.get("task") if e["type"] == "run.started"
                                                         else None) or _approval_note(e)
        table.add_row(time.strftime("%H:%M:%S", time.localtime(e["at"])), plain(e["type"]),
                      plain(e.get("role") or ""), plain(e.get("capability") or ""),
                      plain(e.get("call_id") or ""), _status(e.get("status")) if e.get("status") else "",
                      plain(excerpt(str(summary), ROW_LIMIT)) if summary else "")
    console.print(table)


def _approval_note(event: Mapping[str, Any]) -> str | None:
    """What ``run.waiting`` asks and who answered for ``run.resumed``."""
    if event["type"] == "run.waiting":
        return f"asked: {event.get('question')}"
    if event["type"] == "run.resumed":
        if event.get("status") == "expired":
            return f"expired: the default, {event.get('decision')}, applied"
        why = f": {event['reason']}" if event.get("reason") else ""
        return f"{event.get('status')} by {event.get('actor')}{why}"
    return None


def hook_warning(warning: Mapping[str, Any]) -> str:
    """The one line a hook's failure, missing decision or dropped patch gets."""
    verb = "denied the call" if warning.get("denied") else "the call went on"
    return printable(
        f"warning: hook {warning['hook_id']} ({warning['timing']} {warning['capability']}): "
        f"{warning['code']}: {excerpt(str(warning['message']), TEXT_LIMIT)} ({verb})")


def print_hook_warnings(console: Console, warnings: Sequence[Mapping[str, Any]]) -> None:
    """The last lines of a run's output: every hook warning of the run again (each was
    printed when it happened, maybe far up), under a count; nothing when there was none."""
    if not warnings:
        return
    console.print(plain(f"\n{len(warnings)} hook warning(s) in this run:", "yellow"),
                  highlight=False, soft_wrap=True)
    for warning in warnings:
        console.print(plain("  " + hook_warning(warning), "yellow"), highlight=False,
                      soft_wrap=True)
