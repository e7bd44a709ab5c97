"""The options several ``agentloom`` commands share, spelled once (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["BesideStoreOpt", "ConfigOpt", "JsonOpt", "RunIdArg", "StoreOpt"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON value on stdout, nothing else.")]
StoreOpt = Annotated[str | None, typer.Option(
    "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). Default: "
    "$AGENTLOOM_STORE, else the store of --config, else sqlite:///.agentloom/agentloom.db.")]
BesideStoreOpt = Annotated[str | None, typer.Option(
    "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). Default: "
    "$AGENTLOOM_STORE, else sqlite:///.agentloom/agentloom.db in the folder of CONFIG.")]
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", "-c", metavar="CONFIG", help="A config file; its store is used (see --store).")]
RunIdArg = Annotated[str, typer.Argument(metavar="RUN_ID", help="The run's id (see `runs list`).",
                                         show_default=False)]
