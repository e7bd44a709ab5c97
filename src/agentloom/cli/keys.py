"""``agentloom keys create|list|revoke``: the host's API keys (issue 18; ``host.keys``).
docs/cli.md is the reference.

``create`` prints the key once — only its digest is stored, so a lost key is revoked and made
again, never shown again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, TypeVar

import typer

from agentloom.cli.errors import EXIT_OK
from agentloom.cli.options import ConfigOpt, JsonOpt, StoreOpt
from agentloom.cli.output import print_json, say, setup_logging, stderr_console, stdout_console
from agentloom.cli.stores import resolve_store_url
from agentloom.host.keys import create_key, list_keys, revoke_key
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store import Store, WriteSet, open_store

__all__ = ["keys_app"]

keys_app = typer.Typer(no_args_is_help=True, help="API keys of the HTTP host (agentloom serve).")

_T = TypeVar("_T")


def _with_store(url: str, work: Callable[[Store, Callable[[WriteSet], Awaitable[None]]],
                                         Coroutine[Any, Any, _T]]) -> _T:
    """Run ``work`` on the store at ``url`` (created and migrated when it does not exist: a
    host's first key may come before its first run)."""
    store = open_store(url)
    coordinator = CommitCoordinator(store)
    try:
        return asyncio.run(work(store, coordinator.commit))
    finally:
        coordinator.close()
        store.close()


@keys_app.command("create")
def keys_create(
    actor: Annotated[str, typer.Option("--actor", metavar="A", help="Who the key acts as.")],
    project: Annotated[str, typer.Option("--project", metavar="P", help="The project it "
                                         "acts in: it sees and controls only its own runs.")],
    store: StoreOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make an API key for ACTOR in PROJECT and print it — once: only its digest is stored.

    Requests send it as `Authorization: Bearer KEY`. --json: {"key", "key_id", "actor",
    "project", "created_at"}.
    """
    setup_logging()
    url = resolve_store_url(store, config)
    record, key = _with_store(url, lambda s, commit: create_key(s, commit, actor=actor,
                                                                project=project))
    if as_json:
        print_json({"key": key, **{k: v for k, v in record.to_dict().items()
                                   if k in ("key_id", "actor", "project", "created_at")}})
    else:
        say(stdout_console(), key)
        say(stderr_console(), f"key {record.key_id} for actor {actor} in project {project}: "
            "store it now, it is not shown again")
    raise typer.Exit(EXIT_OK)


@keys_app.command("list")
def keys_list(
    store: StoreOpt = None,
    config: ConfigOpt = None,
    revoked: Annotated[bool, typer.Option("--revoked", help="Also the revoked keys.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The store's API keys (never the keys themselves): id, actor, project, when made and
    revoked."""
    setup_logging()
    url = resolve_store_url(store, config)

    async def read(s: Store, commit: Callable[[WriteSet], Awaitable[None]]) -> list[dict[str, object]]:
        return [k.to_dict() for k in list_keys(s, revoked=revoked)]

    shown = _with_store(url, read)
    if as_json:
        print_json(shown)
    elif not shown:
        say(stdout_console(), "no API key (agentloom keys create --actor A --project P)")
    else:
        for k in shown:
            say(stdout_console(), f"{k['key_id']}  {k['actor']}  {k['project']}",
                "  revoked" if k["revoked"] else "")
    raise typer.Exit(EXIT_OK)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (keys list).",
                                          show_default=False)],
    store: StoreOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke an API key: every later request with it is refused. Revoking it again is a no-op."""
    setup_logging()
    url = resolve_store_url(store, config)
    record = _with_store(url, lambda s, commit: revoke_key(s, commit, key_id))
    if as_json:
        print_json(record.to_dict())
    else:
        say(stdout_console(), f"key {record.key_id} ({record.actor} in {record.project}) revoked")
    raise typer.Exit(EXIT_OK)
