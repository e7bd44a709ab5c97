"""``agentloom ask CONFIG "text"``: admission of one message (issue 21, 003 F09).

The message is recognised against the config's ``intents:`` and routed:

* **start** — a matched intent whose slots are all valid: its command is submitted to the
  command bus (``commands:``) and the receipt shown (``accepted`` with a confirmation token
  for a command that needs one: ``agentloom commands confirm CONFIG TOKEN``);
* **clarify** — missing or invalid slots, kept and asked about; nothing runs;
* **agent** — no intent: ``ask`` does not start an agent run, it prints the
  ``agentloom run`` line that would. Why: ``ask`` is the admission decision, cheap and
  deterministic — an agent run streams, costs model calls and picks an agent, which is
  ``run``'s job; a script that wants both calls ``run`` on ``decision == "agent"``.

``--conversation ID`` keeps the pending intent between invocations (a follow-up such as
"make it friday" fills it) in ``.agentloom/conversations/`` beside the config. The CLI acts
as ``--actor`` (default ``cli:<login name>``) in ``--project`` (default ``local``).

``--json`` prints exactly ``{"decision", "intent", "slots", "missing", "invalid": [{"slot",
"reason"}], "receipt": {"state", "operation_id", "result"} | null}``. Exit 0 for start
(committed or accepted), clarify and agent; 1 when the started command was rejected or its
outcome is unknown.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.cli.commands import ActorOpt, ProjectOpt, configured_bus, principal_of
from agentloom.cli.errors import EXIT_FAILED, EXIT_OK
from agentloom.cli.options import BesideStoreOpt, JsonOpt
from agentloom.cli.output import print_json, say, setup_logging, stdout_console
from agentloom.command import Admission, Admitter
from agentloom.config import load_config
from agentloom.errors import RevisionConflict
from agentloom.intent import (
    ConversationKey,
    IntentRegistry,
    PendingIntent,
    Recognizer,
    SlotProblem,
)

__all__ = ["FileConversationStore", "ask"]


class FileConversationStore:
    """``agentloom.intent.ConversationStore`` in JSON files (one per conversation, under an
    exclusive ``flock``): the CLI's pending intents outlive the process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: ConversationKey) -> Path:
        name = hashlib.sha256(json.dumps([key.owner, key.project, key.conversation])
                              .encode()).hexdigest()[:32]
        return self.folder / f"{name}.json"

    def _locked(self, key: ConversationKey) -> Any:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle = open(self._path(key).with_suffix(".lock"), "a+")  # noqa: SIM115 - closed by caller
        fcntl.flock(handle, fcntl.LOCK_EX)
        return handle

    def _read(self, key: ConversationKey) -> dict[str, Any]:
        path = self._path(key)
        return json.loads(path.read_text()) if path.exists() else {"revision": 0, "pending": None}

    def _write(self, key: ConversationKey, data: dict[str, Any]) -> None:
        path = self._path(key)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)

    @staticmethod
    def _pending(data: dict[str, Any]) -> PendingIntent | None:
        p = data.get("pending")
        if p is None:
            return None
        return PendingIntent(intent=p["intent"], action=p["action"], slots=p["slots"],
                             missing=tuple(p["missing"]),
                             invalid=tuple(SlotProblem(slot=s, reason=r) for s, r in p["invalid"]),
                             revision=p["revision"])

    async def get(self, key: ConversationKey) -> PendingIntent | None:
        with self._locked(key):
            return self._pending(self._read(key))

    async def save(self, key: ConversationKey, pending: PendingIntent, *,
                   expected_revision: int | None) -> PendingIntent:
        with self._locked(key):
            data = self._read(key)
            current = self._pending(data)
            if (current.revision if current else None) != expected_revision:
                raise RevisionConflict(f"conversation {key.conversation!r} moved on")
            revision = int(data["revision"]) + 1
            data = {"revision": revision, "pending": {
                "intent": pending.intent, "action": pending.action,
                "slots": json.loads(json.dumps(dict(pending.slots))),
                "missing": list(pending.missing),
                "invalid": [[p.slot, p.reason] for p in pending.invalid], "revision": revision}}
            self._write(key, data)
            return self._pending(data)  # type: ignore[return-value]

    async def clear(self, key: ConversationKey, *, revision: int) -> bool:
        with self._locked(key):
            data = self._read(key)
            current = self._pending(data)
            if current is None or current.revision != revision:
                return False
            self._write(key, {"revision": data["revision"], "pending": None})
            return True


def ask(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", show_default=False,
                                           help="The YAML config file (intents:, commands:).")],
    text: Annotated[str, typer.Argument(metavar="TEXT", show_default=False,
                                        help="The user's message.")],
    conversation: Annotated[str | None, typer.Option(
        "--conversation", metavar="ID",
        help="Continue conversation ID: a follow-up fills its pending intent.")] = None,
    actor: ActorOpt = None,
    project: ProjectOpt = "local",
    store: BesideStoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Route TEXT as start (run its command), clarify (ask for slots) or agent (no intent).

    Exit 0 unless a started command was rejected or its outcome is unknown (1); 2 on a
    usage or config error.
    """
    setup_logging()
    cfg = load_config(config)
    principal = principal_of(actor, project)
    folder = cfg.base_dir / ".agentloom" / "conversations"
    key = None if conversation is None else ConversationKey(
        owner=principal.actor, project=principal.project, conversation=conversation)

    async def work() -> Admission:
        recognizer = Recognizer(IntentRegistry.from_config(cfg.intents),
                                conversations=FileConversationStore(folder))
        async with configured_bus(cfg, store) as configured:
            return await Admitter(recognizer, configured.bus).admit(
                text, principal=principal, conversation=key)

    admission = asyncio.run(work())
    receipt = admission.receipt
    if as_json:
        print_json(admission.to_dict())
    else:
        _say(admission, config, text)
    failed = receipt is not None and receipt.state in ("rejected", "unknown")
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


def _say(admission: Admission, config: Path, text: str) -> None:
    console = stdout_console()
    say(console, f"{admission.decision}" + (f": {admission.intent}" if admission.intent else ""))
    if admission.slots:
        say(console, "  slots: " + ", ".join(f"{k}={v!r}" for k, v in admission.slots.items()))
    for name in admission.missing:
        say(console, f"  missing: {name}")
    for slot, reason in admission.invalid:
        say(console, f"  invalid: {slot}: {reason}")
    receipt = admission.receipt
    if receipt is not None:
        say(console, f"  receipt: {receipt.state} {receipt.operation_id}")
        if receipt.state == "committed":
            say(console, f"  result: {receipt.to_dict()['result']}")
        elif receipt.reason:
            say(console, f"  {receipt.reason}")
        if receipt.confirmation:
            say(console, "  confirm it with: agentloom commands confirm "
                f"{shlex.quote(str(config))} {receipt.confirmation}")
    if admission.decision == "agent":
        say(console, "  no intent matched; run an agent on it with:\n"
            f"  agentloom run {shlex.quote(str(config))} {shlex.quote(text)}")
