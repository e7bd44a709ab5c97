"""``agentloom commands receipt|confirm|decline``: command receipts (issue 21; docs/commands.md).

Whose receipts: the CLI acts as one principal — ``--actor`` (default ``cli:<login name>``) in
``--project`` (default ``local``), as ``agentloom ask`` does. A receipt is shown to the
principal that submitted it only; another's is reported exactly like a missing one
(``COMMAND_RECEIPT_NOT_FOUND``, exit 1). An ``unknown`` receipt is reconciled from the recorded
pipeline operation when shown (and the reconciled state written back) — never run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import PipelineCommandExecutor, RecordedCommands
from agentloom.assembly import hook_functions, hook_specs, store_url_for, user_code
from agentloom.cli.errors import EXIT_FAILED, EXIT_OK, UsageFailure
from agentloom.cli.options import BesideStoreOpt, ConfigOpt, JsonOpt, StoreOpt
from agentloom.cli.output import print_json, say, setup_logging, stdout_console
from agentloom.cli.stores import resolve_store_url
from agentloom.command import CommandBus, CommandRegistry, Receipt
from agentloom.config import Config, load_config
from agentloom.kernel import Kernel
from agentloom.refs import Principal

__all__ = ["ActorOpt", "ProjectOpt", "commands_app", "configured_bus", "principal_of",
           "print_receipt"]

commands_app = typer.Typer(no_args_is_help=True,
                           help="Command receipts: show, confirm or decline (docs/commands.md).")

ActorOpt = Annotated[str | None, typer.Option(
    "--actor", metavar="A", help="Who acts (default: cli:<your login name>).")]
ProjectOpt = Annotated[str, typer.Option(
    "--project", metavar="P", help="The project acted in.")]


def principal_of(actor: str | None, project: str) -> Principal:
    """The CLI's principal: ``--actor`` (default ``cli:<login>``) in ``--project``."""
    return Principal(actor=actor or f"cli:{getpass.getuser()}", project=project)


@dataclass
class ConfiguredBus:
    kernel: Kernel
    executor: PipelineCommandExecutor
    bus: CommandBus


@contextlib.asynccontextmanager
async def configured_bus(config: Config, store: str | None) -> AsyncIterator[ConfiguredBus]:
    """The command bus ``config``'s ``commands:`` describe, on its store: every command
    published as ``command.<id>`` on a ``Kernel`` with the config's hooks (those whose
    ``match.role`` is ``"*"`` see command calls: they run in role ``@commands``)."""
    if str(config.base_dir) not in sys.path:  # handlers are ``module:attr`` beside the config
        sys.path.insert(0, str(config.base_dir))
    url = store_url_for(config, store)
    kernel = Kernel(url, hooks=hook_specs(config, store=url),
                    hook_functions=hook_functions(config),
                    workspace_root=config.workspace_root())
    try:
        registry = CommandRegistry.from_config(config.commands)
        executor = PipelineCommandExecutor(kernel, registry, resolve=user_code(config))
        bus = CommandBus(registry, executor, StoreReceiptLog(kernel.store,
                                                             kernel.coordinator))
        try:
            yield ConfiguredBus(kernel, executor, bus)
        finally:
            await executor.close()
    finally:
        kernel.close()


def print_receipt(receipt: Receipt, as_json: bool) -> None:
    if as_json:
        print_json(receipt.to_dict())
        return
    console = stdout_console()
    say(console, f"{receipt.state}: {receipt.command} ({receipt.operation_id})")
    if receipt.result is not None and receipt.state == "committed":
        say(console, f"  result: {receipt.to_dict()['result']}")
    if receipt.reason:
        say(console, f"  {receipt.reason}")
    if receipt.confirmation:
        say(console, f"  confirm it with: agentloom commands confirm CONFIG {receipt.confirmation}")


def _exit(receipt: Receipt) -> None:
    raise typer.Exit(EXIT_OK if receipt.state in ("committed", "accepted") else EXIT_FAILED)


@commands_app.command("receipt")
def receipt(
    operation_id: Annotated[str, typer.Argument(metavar="OP_ID", show_default=False,
                                                help="The command operation's id.")],
    store: StoreOpt = None,
    config: ConfigOpt = None,
    actor: ActorOpt = None,
    project: ProjectOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Show the receipt of command OP_ID (yours only), reconciling an unknown one.

    Exit 0 when committed or accepted, 1 when rejected, unknown or not found.
    """
    setup_logging()
    found = _on_stored_bus(store, config, lambda bus: bus.reconcile(
        operation_id, principal=principal_of(actor, project)))
    print_receipt(found, as_json)
    _exit(found)


def _on_stored_bus(store: str | None, config: Path | None,
                   act: Callable[[CommandBus], Coroutine[Any, Any, Receipt]]) -> Receipt:
    """``act`` on a command bus over the store alone (no registry: what a stored receipt
    needs), the store closed after."""
    from agentloom.pipeline.coordinator import CommitCoordinator
    from agentloom.store import open_store

    opened = open_store(resolve_store_url(store, config))
    coordinator = CommitCoordinator(opened)
    try:
        return asyncio.run(act(CommandBus(CommandRegistry(), RecordedCommands(opened),
                                          StoreReceiptLog(opened, coordinator))))
    finally:
        coordinator.close()
        opened.close()


@commands_app.command("confirm")
def confirm(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", show_default=False,
                                           help="The YAML config file.")],
    token: Annotated[str, typer.Argument(metavar="TOKEN", show_default=False,
                                         help="The confirmation token `ask` printed.")],
    store: BesideStoreOpt = None,
    actor: ActorOpt = None,
    project: ProjectOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Confirm an accepted command: it runs once (a repeated confirmation shows the same
    receipt). Exit 0 when committed, 1 otherwise."""
    setup_logging()
    cfg = load_config(config)
    principal = principal_of(actor, project)

    async def work() -> Receipt:
        async with configured_bus(cfg, store) as configured:
            stored = configured.bus.receipts.get(token.partition(".")[0])
            if stored is None or stored.principal != principal:
                raise UsageFailure("no accepted command of yours has that token")
            return await configured.bus.submit(stored.command, stored.params,
                                               principal=principal, confirmation=token,
                                               binding=stored.binding)

    result = asyncio.run(work())
    print_receipt(result, as_json)
    _exit(result)


@commands_app.command("decline")
def decline(
    operation_id: Annotated[str, typer.Argument(metavar="OP_ID", show_default=False)],
    store: StoreOpt = None,
    config: ConfigOpt = None,
    actor: ActorOpt = None,
    project: ProjectOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Decline an accepted command: it never runs (its receipt becomes rejected)."""
    setup_logging()
    found = _on_stored_bus(store, config, lambda bus: bus.decline(
        operation_id, principal=principal_of(actor, project)))
    print_receipt(found, as_json)
    raise typer.Exit(EXIT_OK if found.state == "rejected" else EXIT_FAILED)
