"""``agentloom hooks replay``: a config's hooks, as they are now, run on the recorded calls of
past runs — before-hooks on the model's proposed arguments, after-hooks on the recorded raw
result — and compared, call by call, with what the record says they decided (docs/replay.md).

::

    store (read only) ── operations, hook_invocations ──► recorded: decision, patches, value
        │ OperationState.from_row: the proposal, the raw result
        ▼
    pipeline.chain.call_event (the live event builder) ──► HookManager.chain / run, hook by hook
        │ each patch normalised, checked and applied as live (hooks.patch, hooks.fields,
        │ hooks.shapes) to a working copy ──► new: decision, patches, value
        ▼
    ReplayReport: per call the change (unchanged, newly_denied, newly_allowed, newly_asked,
    patched_differently), a diff of the value after the chain, and the totals

Nothing is executed and nothing is written: no capability handler is called, no row is put
(the caller opens the store read only), and a patch of another context record is reported, not
applied. ``command`` hooks run in the sandbox as configured, in a scratch folder of their own
(``ScratchHookEnvironment``: no run's workspace is mounted); ``http`` and ``mcp`` hooks are
skipped unless ``include_remote`` — a skipped hook counts with its recorded decision and patch,
a note says so.

Owns: the replay of hook chains on recorded calls, ``ReplayReport`` and its JSON shape. Does
not own: building the ``HookManager`` from a config (``assembly``, the CLI), the event a hook
sees (``pipeline.chain.call_event``), matching and running a hook (``hooks.manager``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentloom.context.manager import ContextManager, call_record_id
from agentloom.hooks.decision import may_ask
from agentloom.hooks.fields import check_model_ops, writable_paths
from agentloom.hooks.handlers.command import HookWorkspaces
from agentloom.hooks.manager import HookManager
from agentloom.hooks.patch import CallRecord, ChangeSet, PatchInvalid, PatchOp, apply_ops, normalise
from agentloom.hooks.shapes import check_payload, check_result
from agentloom.hooks.spec import FAILURE_STATUSES, HookSpec, Timing
from agentloom.pipeline.chain import call_event
from agentloom.pipeline.records import OperationState
from agentloom.results import ToolResult
from agentloom.sandbox import SandboxBackend
from agentloom.store import Store
from agentloom.store.operations import HookInvocationRecord, hook_invocations
from agentloom.store.records import operations
from agentloom.workspace.scope import WorkspaceScope

__all__ = ["REMOTE_KINDS", "CallReplay", "ChainOutcome", "ReplayReport", "ScratchHookEnvironment",
           "diff_values", "replay_runs"]

Decision = Literal["allow", "deny", "ask"]
Change = Literal["unchanged", "newly_denied", "newly_allowed", "newly_asked",
                 "patched_differently"]
REMOTE_KINDS = frozenset({"http", "mcp"})
"""Handler kinds skipped unless ``include_remote``: they call a service, which may act."""
TOTALS = ("calls", "unchanged", "newly_denied", "newly_allowed", "newly_asked",
          "patched_differently", "hooks_failed", "hooks_skipped")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainOutcome:
    """One timing's chain of one call: its decision (``deny`` if a hook denied, else ``ask``
    if one asked, else ``allow``), each hook's run, and the value after it (the payload before
    execution, the effective result after)."""

    decision: Decision
    hooks: tuple[Mapping[str, Any], ...]
    value: Any

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "hooks": [dict(h) for h in self.hooks],
                "value": self.value}


@dataclass(frozen=True, slots=True, kw_only=True)
class CallReplay:
    """One recorded call: each timing's recorded and new chain (``None`` where none ran or
    can run), the change and the timing whose chain made it, the diff of the value after
    that chain, and notes."""

    run_id: str
    operation_id: str
    capability: str
    event_type: str
    change: Change
    changed_at: Timing | None
    timings: Mapping[str, Mapping[str, ChainOutcome | None]]
    diff: tuple[Mapping[str, Any], ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "operation_id": self.operation_id,
                "capability": self.capability, "event_type": self.event_type,
                "change": self.change, "changed_at": self.changed_at,
                **{t: {side: None if o is None else o.to_dict() for side, o in sides.items()}
                   for t, sides in self.timings.items()},
                "diff": [dict(d) for d in self.diff], "notes": list(self.notes)}


@dataclass(slots=True, kw_only=True)
class ReplayReport:
    """Every replayed call and the totals; ``changed``: some decision or value differs."""

    runs: list[str]
    calls: list[CallReplay] = field(default_factory=list)
    hooks_failed: int = 0
    hooks_skipped: int = 0

    @property
    def totals(self) -> dict[str, int]:
        counts = dict.fromkeys(TOTALS, 0)
        counts["calls"] = len(self.calls)
        for call in self.calls:
            counts[call.change] += 1
        counts["hooks_failed"], counts["hooks_skipped"] = self.hooks_failed, self.hooks_skipped
        return counts

    @property
    def changed(self) -> bool:
        return any(c.change != "unchanged" for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "changed": self.changed, "totals": self.totals,
                "calls": [c.to_dict() for c in self.calls]}


class _NoWorkspaces:
    """No run's folder: a replayed command hook never sees the origin run's files."""

    def scopes_for_run(self, run_id: str) -> list[WorkspaceScope]:
        return []

    def path(self, scope: WorkspaceScope) -> Path:  # pragma: no cover - never called
        raise LookupError(scope.workspace_scope_id)

    def ensure_folder(self, scope: WorkspaceScope) -> Path:  # pragma: no cover - never called
        raise LookupError(scope.workspace_scope_id)


@dataclass(frozen=True, slots=True)
class ScratchHookEnvironment:
    """Where replayed ``command`` hooks run: the configured sandbox backend, a spool folder of
    the replay's own, and no workspace (``HookManager.attach_environment``)."""

    sandbox_backend: SandboxBackend
    spool_dir: Path
    scopes: HookWorkspaces = field(default_factory=_NoWorkspaces)


async def replay_runs(store: Store, manager: HookManager, run_ids: Sequence[str], *,
                      include_remote: bool = False) -> ReplayReport:
    """Replay ``manager``'s hooks on every call of ``run_ids`` (oldest call first); reads
    ``store`` only."""
    report = ReplayReport(runs=list(run_ids))
    context = ContextManager(store)
    for run_id in run_ids:
        for op in operations(store, run_id, lenient=True):
            state = OperationState.from_row(op.to_row(), store)
            if "resource_version_id" not in state.request:
                continue  # refused before it resolved: no hook ran, none would now
            replayer = _CallReplayer(store, manager, context, state, report, include_remote)
            report.calls.append(await replayer.replay())
    return report


class _CallReplayer:
    """One recorded call: its recorded chains, its new ones, the comparison."""

    def __init__(self, store: Store, manager: HookManager, context: ContextManager,
                 state: OperationState, report: ReplayReport, include_remote: bool) -> None:
        self.store, self.manager, self.context = store, manager, context
        self.state, self.report, self.include_remote = state, report, include_remote
        self.notes: list[str] = []
        rows = hook_invocations(store, state.operation_id)
        self.rows = {t: sorted((r for r in rows if r.timing == t), key=lambda r: r.position)
                     for t in ("before", "after")}

    async def replay(self) -> CallReplay:
        state = self.state
        timings: dict[str, dict[str, ChainOutcome | None]] = {}
        recorded_before = self._recorded("before", state.payload)
        new_before = await self._run("before", dict(state.request["proposed_arguments"]))
        timings["before"] = {"recorded": recorded_before, "new": new_before}
        change, diff = _compare(recorded_before, new_before, "/payload")
        changed_at: Timing | None = None if change == "unchanged" else "before"
        raw = state.raw
        recorded_after = None if raw is None else self._recorded(
            "after", state.result if state.result is not None else raw)
        new_after = None
        if new_before.decision == "deny":
            pass  # live, the call would end here
        elif raw is None:
            self.notes.append("not executed in the record: its after-hooks cannot be "
                              "evaluated (no recorded result)")
        else:
            new_after = await self._run("after", raw)
            if new_after.hooks and new_before.value != state.payload:
                self.notes.append("the new arguments differ from the executed ones; the "
                                  "after-hooks saw the result of the executed ones")
        timings["after"] = {"recorded": recorded_after, "new": new_after}
        if change == "unchanged" and recorded_after is not None and new_after is not None:
            change, diff = _compare(recorded_after, new_after, "/result")
            changed_at = None if change == "unchanged" else "after"
        return CallReplay(run_id=state.run_id, operation_id=state.operation_id,
                          capability=state.capability_key, event_type=state.event_type,
                          change=change, changed_at=changed_at, timings=timings, diff=tuple(diff),
                          notes=tuple(self.notes))

    def _recorded(self, timing: Timing, value: Any) -> ChainOutcome:
        rows = self.rows[timing]
        decisions = {r.decision or r.data.get("decision") for r in rows}
        return ChainOutcome(decision=_chain_decision(decisions), value=value,
                            hooks=tuple(_recorded_hook(r) for r in rows))

    async def _run(self, timing: Timing, value: dict[str, Any]) -> ChainOutcome:
        """The new chain of ``timing`` on a working copy of the call (``value``: the proposal,
        or the recorded raw result), as ``pipeline.chain.HookChain.run`` takes it."""
        state, request = self.state, self.state.request
        node = request.get("node")
        hooks = self.manager.chain(
            timing, state.event_type, capability=state.capability_key, role=request.get("role"),
            purpose=request.get("purpose"), node=node.get("name") if isinstance(node, dict)
            else None, status=value.get("status") if timing == "after" else None)
        scope = request.get("context_scope")
        work = dataclasses.replace(
            state, payload=value if timing == "before" else state.payload,
            payload_version=0 if timing == "before" else state.payload_version,
            call_revision=(1 if scope else 0) if timing == "before" else state.call_revision,
            result=None, raw=state.raw if timing == "after" else None)
        decisions: list[str] = []
        ran: list[dict[str, Any]] = []
        for hook in hooks:
            outcome = await self._one(timing, work, hook)
            ran.append(outcome)
            decisions.append(outcome["decision"])
            if outcome["decision"] == "deny":
                break
        value_after = work.payload if timing == "before" else (
            work.result if work.result is not None else work.raw)
        return ChainOutcome(decision=_chain_decision(decisions), hooks=tuple(ran),
                            value=value_after)

    async def _one(self, timing: Timing, work: OperationState, hook: HookSpec) -> dict[str, Any]:
        """Run one hook on ``work`` and apply its accepted patch to it; what it did."""
        request = work.request
        scope = request.get("message_scope")
        event = call_event(
            timing, work, event_type=work.event_type, exposed_name=request["exposed_name"],
            role=request.get("role"), run_id=work.run_id, purpose=request.get("purpose"),
            context_scope=request.get("context_scope"),
            message_revisions=None if not isinstance(scope, str)
            else lambda: self.context.message_revisions(scope))
        out: dict[str, Any] = {"hook_id": hook.hook_id, "kind": hook.handler.kind}
        if hook.handler.kind in REMOTE_KINDS and not self.include_remote:
            return self._skipped(timing, work, event, hook, out)
        run = await self.manager.run(hook, event)
        parsed = run.decision
        if parsed is not None and parsed.decision == "ask" and not may_ask(timing, work.event_type):
            parsed = None
            run = dataclasses.replace(run, status="invalid", decision=None,
                                      diagnostic=f"hook {hook.hook_id!r} answered 'ask' where "
                                      "only a before-hook of a tool, model or delegation may")
        out.update(status=run.status, diagnostic=run.diagnostic, changes=None, patch_error=None)
        if run.status in FAILURE_STATUSES:
            self.report.hooks_failed += 1
        if run.not_started or (parsed is None and hook.on_failure == "deny"):
            out.update(decision="deny", reason=run.diagnostic)
            return out
        if parsed is None:
            out.update(decision="allow", reason=None)  # fail-open for this hook only
            return out
        out.update(decision=parsed.decision, reason=parsed.reason)
        error = parsed.patch_error
        if error is None and (parsed.payload_patch or parsed.context_patch):
            try:
                changes = normalise(
                    parsed.payload_patch, parsed.context_patch, writable=writable_paths(
                        timing, work.event_type), payload_version=work.payload_version,
                    call=CallRecord(call_record_id(work.operation_id), work.call_revision,
                                    "/arguments", "/payload")
                    if timing == "before" and request.get("context_scope") else None,
                    records=_message_records(event) if parsed.context_patch else None)
                self._accept(timing, work, event, changes, out)
            except PatchInvalid as exc:
                error = exc
        if error is not None:
            out["patch_error"] = {"code": error.code, "message": error.message}
            if parsed.decision != "deny" and hook.on_failure == "deny":
                out["decision"] = "deny"
        return out

    def _accept(self, timing: Timing, work: OperationState, event: dict[str, Any],
                changes: ChangeSet, out: dict[str, Any]) -> None:
        """Check and apply ``changes`` as live (``HookChain._prepare_changes``); raises
        ``PatchInvalid`` as it does. A change of another context record is reported only."""
        if changes.empty:
            return
        if work.event_type == "model" and timing == "before":
            check_model_ops(changes.ops, list(event["payload"].get("messages") or []))
        new_doc = apply_ops(event, changes.ops)
        if timing == "before":
            check_payload(new_doc.get("payload"))
        else:
            check_result(new_doc.get("result"))
            try:
                patched = ToolResult.from_dict(new_doc["result"])
            except Exception as exc:
                raise PatchInvalid("HOOK_PATCH_INVALID", f"patched result is invalid: {exc}") \
                    from exc
            if work.raw is not None and patched.status != work.raw["status"]:
                raise PatchInvalid("HOOK_PATCH_PROTECTED", "a hook cannot change a result's "
                                   "status")
        out["changes"] = changes.to_dict()
        if changes.context_changes:
            self.notes.append(f"hook {out['hook_id']!r} changes other context records; "
                              "reported, not applied")
        if changes.ops:
            if timing == "before":
                work.payload, work.payload_version = new_doc["payload"], work.payload_version + 1
                work.call_revision += 1 if work.request.get("context_scope") else 0
            else:
                work.result = new_doc["result"]

    def _skipped(self, timing: Timing, work: OperationState, event: dict[str, Any],
                 hook: HookSpec, out: dict[str, Any]) -> dict[str, Any]:
        """A remote hook not run: its recorded decision and patch stand in (allow, none,
        when the record has no run of it)."""
        self.report.hooks_skipped += 1
        row = next((r for r in self.rows[timing] if r.hook_id == hook.hook_id), None)
        recorded = None if row is None else _recorded_hook(row)
        decision = (recorded or {}).get("decision") or "allow"
        self.notes.append(f"{hook.handler.kind} hook {hook.hook_id!r} skipped (pass "
                          "--include-remote to run it); its recorded decision stands"
                          if row is not None else f"{hook.handler.kind} hook {hook.hook_id!r} "
                          "skipped (pass --include-remote to run it); not in the record: allow")
        out.update(status="skipped", decision=decision, reason=None, patch_error=None,
                   changes=(recorded or {}).get("changes"))
        ops = ((recorded or {}).get("changes") or {}).get("ops") or []
        if ops and decision != "deny":
            try:
                self._accept(timing, work, event, ChangeSet(
                    tuple(PatchOp(o["op"], o["path"], o.get("value")) for o in ops), ()), out)
            except (PatchInvalid, KeyError, TypeError) as exc:
                self.notes.append(f"the recorded patch of {hook.hook_id!r} does not apply: {exc}")
        return out


def _message_records(event: Mapping[str, Any]) -> dict[str, CallRecord]:
    """A model request's message records as its event names them, each mapping onto its
    message's ``/content`` (as ``HookChain._message_records``): an edit by record id is the
    same change as one by index."""
    listed = (event.get("context") or {}).get("message_records") or []
    return {m["record_id"]: CallRecord(m["record_id"], m["revision"], "/content",
                                       f"/payload/messages/{m['index']}/content")
            for m in listed}


def _recorded_hook(row: HookInvocationRecord) -> dict[str, Any]:
    return {"hook_id": row.hook_id, "status": row.status,
            "decision": row.decision or row.data.get("decision"),
            "reason": row.data.get("reason"), "changes": row.data.get("changes"),
            "patch_error": row.data.get("patch_error")}


def _chain_decision(decisions: Iterable[str | None]) -> Decision:
    seen = set(decisions)
    return "deny" if "deny" in seen else "ask" if "ask" in seen else "allow"


def _compare(recorded: ChainOutcome, new: ChainOutcome, root: str
             ) -> tuple[Change, list[dict[str, Any]]]:
    """The change from ``recorded`` to ``new`` and the diff of their values (none when both
    deny: nothing would run, whatever the payload)."""
    if recorded.decision != new.decision:
        kind: Change = ("newly_denied" if new.decision == "deny" else
                        "newly_asked" if new.decision == "ask" else "newly_allowed")
        return kind, diff_values(recorded.value, new.value, root) if "deny" not in (
            recorded.decision, new.decision) else []
    if new.decision == "deny":
        return "unchanged", []
    diff = diff_values(recorded.value, new.value, root)
    return ("patched_differently" if diff else "unchanged"), diff


def diff_values(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """Where ``old`` and ``new`` differ, as ``{path, recorded, new}`` (JSON pointers; a key
    only one side has shows ``null`` on the other)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[dict[str, Any]] = []
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key not in old or key not in new:
                out.append({"path": sub, "recorded": old.get(key), "new": new.get(key)})
            else:
                out += diff_values(old[key], new[key], sub)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True))
                for d in diff_values(a, b, f"{path}/{i}")]
    return [] if old == new else [{"path": path, "recorded": old, "new": new}]
