"""Optional parts of AgentLoom and the extra that installs each (issue 35, 5).

``pip install agentloom`` gives the core, the CLI, SQLite and the OpenAI-compatible gateway;
the rest comes with an extra::

    mcp        MCP servers (tools, resources, prompts, MCP hooks)       the ``mcp`` SDK
    a2a        calling and serving A2A agents                           ``a2a-sdk``
    serve      ``agentloom serve`` (the HTTP host and its page)         Starlette, uvicorn
    postgres   ``postgresql://`` stores                                 psycopg
    otel       OpenTelemetry traces                                     opentelemetry-*
    all        every one of them

A feature whose extra is missing refuses with ``MissingExtra`` — one line naming the feature
and the ``pip install`` that adds it — before anything of the run is created. Where each
feature checks (docs/install.md has the user's table)::

    mcp        assembly.mcp.mcp_catalog (a config's MCP servers and MCP hooks), the
               ``agentloom mcp`` commands, ``import agentloom.mcp``
    a2a        assembly.a2a.a2a_catalog (a config's A2A agents); without it ``agentloom
               serve`` answers its A2A paths with a problem naming the extra (host.app)
    serve      ``agentloom serve`` (cli.serve)
    postgres   a ``postgresql://`` store URL (store.url)
    otel       a runtime that traces (telemetry.switch)

``MissingExtra`` is an ``ImportError`` too, so code that guards an optional import with
``except ImportError`` keeps working.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from agentloom.errors import AgentLoomError

__all__ = ["EXTRAS", "MissingExtra", "has_extra", "missing", "require"]

EXTRAS: Mapping[str, tuple[str, ...]] = {
    "mcp": ("mcp",),
    "a2a": ("a2a",),
    "serve": ("starlette", "uvicorn"),
    "postgres": ("psycopg",),
    "otel": ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
}
"""Extra -> the top-level modules it installs (all must be importable)."""


class MissingExtra(AgentLoomError, ImportError):
    """A feature was used whose optional dependencies are not installed (``EXTRA_MISSING``);
    the message names the extra to install."""

    default_code = "EXTRA_MISSING"
    default_category = "validation"


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return False


def has_extra(extra: str) -> bool:
    """Whether every module of ``extra`` can be imported here."""
    return all(_found(m) for m in EXTRAS[extra])


def require(extra: str, feature: str) -> None:
    """Refuse ``feature`` with ``MissingExtra`` unless ``extra`` is installed.

    Raises:
        KeyError: ``extra`` is not one of ``EXTRAS`` (a programming error).
        MissingExtra: a module of the extra cannot be imported.
    """
    if not has_extra(extra):
        raise missing(extra, feature)


def missing(extra: str, feature: str) -> MissingExtra:
    """The ``MissingExtra`` that ``require`` raises, for code that answers it another way (the
    host's A2A paths answer it as a problem)."""
    return MissingExtra(f"{feature} needs the '{extra}' extra: pip install 'agentloom[{extra}]'")
