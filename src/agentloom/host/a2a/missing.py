"""The A2A paths of a host whose ``a2a`` extra is not installed: the card and every ``/a2a``
request are answered ``501`` with a problem naming the extra (``EXTRA_MISSING``), so an A2A
client is told what to install instead of being told the path does not exist.

Owns: those answers. Imports no A2A SDK module (that is the point). Does not own the real
routes (``host.a2a.routes``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from agentloom.extras import missing
from agentloom.host.problems import Problem, problem_response

__all__ = ["FEATURE", "missing_a2a_routes"]

FEATURE = "serving agents over A2A"
NOT_IMPLEMENTED = 501


async def _needs_extra(request: Request) -> Response:
    error = missing("a2a", FEATURE)
    return problem_response(Problem(NOT_IMPLEMENTED, error.code, error.error.message))


def missing_a2a_routes() -> list[BaseRoute]:
    """The card path and everything under ``/a2a``, each answered with the problem."""
    return [Route("/.well-known/agent-card.json", _needs_extra, methods=["GET"]),
            Mount("/a2a", routes=[Route("/{rest:path}", _needs_extra)])]
