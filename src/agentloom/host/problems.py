"""The host's one error shape: RFC 9457 problem details (``application/problem+json``).

::

    {"type": "https://agentloom.dev/problems/run-not-found", "title": "Not Found",
     "status": 404, "detail": "no run 'r1'", "code": "RUN_NOT_FOUND"}

``code`` is the CLI's error code for the same failure (docs/cli.md). ``from_error`` maps an
``AgentLoomError`` to its HTTP status; anything unexpected is a 500 problem that says nothing
about the internals (the exception is logged).

Owns: ``Problem``, the status of each error code, the response. Does not own which requests
fail (the routes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from starlette.responses import JSONResponse

from agentloom.errors import AgentLoomError, ConfigError, StoreError, redact_secrets

__all__ = ["MEDIA_TYPE", "Problem", "from_error", "not_found_run", "problem_response"]

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "https://agentloom.dev/problems/"

STATUS_OF_CODE: dict[str, int] = {
    "UNAUTHENTICATED": 401,
    "INVALID_REQUEST": 400,
    "INVALID_CURSOR": 400,
    "INVALID_PRIORITY": 400,
    "INVALID_PATH": 400,
    "PATH_ESCAPE": 404,
    "PATH_TOO_LONG": 400,
    "NAME_TOO_LONG": 400,
    "NOT_FOUND": 404,
    "RUN_NOT_FOUND": 404,
    "APPROVAL_NOT_FOUND": 404,
    "OPERATION_NOT_FOUND": 404,  # a fork point the run does not have
    "COMMAND_RECEIPT_NOT_FOUND": 404,
    "FILE_NOT_FOUND": 404,
    "WORKSPACE_UNAVAILABLE": 404,
    "NOT_A_FILE": 404,
    "FILE_TOO_LARGE": 413,
    "BODY_TOO_LARGE": 413,
    "METHOD_NOT_ALLOWED": 405,
    "STORE_UNAVAILABLE": 503,
    "INTERNAL_ERROR": 500,
}
CONFLICT = 409  # a known AgentLoom error the request cannot go past in the run's state


class Problem(AgentLoomError):
    """A request that failed, as the problem-details body it is answered with."""

    default_code = "REQUEST_FAILED"

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(redact_secrets(detail), code=code)
        self.status = status
        self.detail = redact_secrets(detail)

    def to_dict(self) -> dict[str, Any]:
        return {"type": TYPE_BASE + self.code.lower().replace("_", "-"),
                "title": HTTPStatus(self.status).phrase, "status": self.status,
                "detail": self.detail, "code": self.code}


def problem(code: str, detail: str) -> Problem:
    """A ``Problem`` with the status of ``code`` (``STATUS_OF_CODE``; 409 otherwise)."""
    return Problem(STATUS_OF_CODE.get(code, CONFLICT), code, detail)


def not_found_run(run_id: str) -> Problem:
    """The one answer for a run that does not exist *or* belongs to another principal: the
    same body either way, so a caller learns nothing about other owners' runs."""
    return Problem(404, "RUN_NOT_FOUND", f"no run {run_id!r}")


def from_error(exc: Exception) -> Problem:
    """The problem for an exception a route let through: an ``AgentLoomError`` keeps its code
    (``ConfigError``: 400); anything else — and a commit that failed (``STORE_FAILED``: its
    message names the store) — is a bare 500, logged with its traceback."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, AgentLoomError) and exc.code != StoreError.default_code:
        status = 400 if isinstance(exc, ConfigError) else STATUS_OF_CODE.get(exc.code, CONFLICT)
        return Problem(status, exc.code, exc.error.message)
    log.error("the host failed on a request", exc_info=exc)
    return Problem(500, "INTERNAL_ERROR", "the server failed on this request; it was logged")


def problem_response(p: Problem, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(p.to_dict(), status_code=p.status, media_type=MEDIA_TYPE,
                        headers=headers)
