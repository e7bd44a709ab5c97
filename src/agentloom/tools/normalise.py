"""Exception normalisation: what a tool raised, as one ``OperationError`` (000 §8, §3.3).

A tool's exception never becomes a success. It is mapped to the spec's closed
category vocabulary and an ``external_outcome`` by this rule:

* ``not_started`` — the exception proves the failing action never reached the
  other side (the connection was refused, the name did not resolve, the URL was
  unusable);
* ``known`` — the other side (the OS or a remote server) gave a definite refusal,
  so the failing action had no effect (permission denied, no such file, an HTTP
  4xx answer);
* ``unknown`` — everything else: a connection that broke mid-call, a timeout, a
  protocol error, a 5xx answer, or an exception from the tool's own code that does
  not prove anything. ``result_from_exception`` turns these into ``unknown`` results.

The outcome describes the action that raised. Effects a tool caused *before* that
action are invisible here; a tool that does several writes should catch and return
``ToolResult.unknown(...)`` itself.

The class hierarchy is walked most specific first; the first row that matches wins.
Third-party classes are matched by *name* (httpx, requests and friends are never
imported)::

    exception                              category     external_outcome  code
    ConnectionRefusedError                 transport    not_started       CONNECTION_REFUSED
    socket.gaierror                        transport    not_started       DNS_LOOKUP_FAILED
    OSError ENETUNREACH/EHOSTUNREACH/...   transport    not_started       NETWORK_UNREACHABLE
    ConnectionResetError                   transport    unknown           CONNECTION_RESET
    ConnectionAbortedError                 transport    unknown           CONNECTION_ABORTED
    BrokenPipeError                        transport    unknown           BROKEN_PIPE
    other ConnectionError                  transport    unknown           CONNECTION_FAILED
    TimeoutError (= asyncio.TimeoutError)  timeout      unknown           TIMEOUT
    PermissionError                        permission   known             PERMISSION_DENIED
    FileNotFoundError                      not_found    known             NOT_FOUND
    FileExistsError                        conflict     known             ALREADY_EXISTS
    ValueError (a rejected value)          business     unknown           TOOL_VALUE_ERROR
    urllib.error.HTTPError                 by status, see below
    urllib.error.URLError                  its ``reason`` if that is an exception, else
                                           transport / unknown / URL_ERROR
    AgentLoomError                         the OperationError it carries
    ExceptionGroup of one                  its only member
    *ConnectError                          transport    not_started       CONNECT_FAILED
    *ConnectTimeout                        transport    not_started       CONNECT_TIMEOUT
    *PoolTimeout                           timeout      not_started       POOL_TIMEOUT
    *ReadTimeout                           timeout      unknown           READ_TIMEOUT
    *WriteTimeout                          timeout      unknown           WRITE_TIMEOUT
    *TimeoutException / *Timeout           timeout      unknown           TIMEOUT
    *ReadError / *WriteError               transport    unknown           READ_FAILED / WRITE_FAILED
    *NetworkError / *TransportError        transport    unknown           NETWORK_ERROR
    *RemoteProtocolError                   protocol     unknown           REMOTE_PROTOCOL_ERROR
    *LocalProtocolError / *ProtocolError   protocol     unknown           PROTOCOL_ERROR
    *UnsupportedProtocol / *InvalidURL     validation   not_started       INVALID_URL
    *HTTPStatusError                       by status, see below
    anything else                          unknown      unknown           TOOL_EXCEPTION

    HTTP status   400 422 → validation, 401 403 → permission, 404 410 → not_found,
                  409 412 → conflict, 429 → rate_limit, other 4xx → business (all known);
                  502 503 504 → transport, other 5xx and the rest → unknown (all unknown).
                  The code is ``HTTP_<status>``.

(``*`` = a class whose name is exactly that, e.g. ``httpx.ConnectError``.)
A connect timeout is ``transport`` because 000 §3.3 lists it with connection
resets as a retryable connection fault. Other ``ValueError`` subclasses
(``UnicodeError``, ``json.JSONDecodeError``) count as ``ValueError``;
``TypeError``, ``KeyError`` and the like are bugs and fall to ``TOOL_EXCEPTION``.

``asyncio.CancelledError``, ``KeyboardInterrupt`` and ``SystemExit`` are control
flow, not errors: ``error_from_exception`` re-raises them.

The message is ``"<ClassName>: <str(exc)>"``, scrubbed of secrets and bounded in
length.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import urllib.error
from dataclasses import dataclass
from typing import Any

from agentloom.errors import (
    AgentLoomError,
    ErrorCategory,
    ErrorPhase,
    ExternalOutcome,
    OperationError,
    redact_secrets,
)
from agentloom.results import ToolResult

__all__ = ["error_from_exception", "result_from_exception"]

MAX_MESSAGE_CHARS = 2000


@dataclass(frozen=True, slots=True)
class _Rule:
    category: ErrorCategory
    outcome: ExternalOutcome
    code: str


_CLASS_RULES: dict[type[BaseException], _Rule] = {
    ConnectionRefusedError: _Rule("transport", "not_started", "CONNECTION_REFUSED"),
    socket.gaierror: _Rule("transport", "not_started", "DNS_LOOKUP_FAILED"),
    ConnectionResetError: _Rule("transport", "unknown", "CONNECTION_RESET"),
    ConnectionAbortedError: _Rule("transport", "unknown", "CONNECTION_ABORTED"),
    BrokenPipeError: _Rule("transport", "unknown", "BROKEN_PIPE"),
    ConnectionError: _Rule("transport", "unknown", "CONNECTION_FAILED"),
    TimeoutError: _Rule("timeout", "unknown", "TIMEOUT"),
    PermissionError: _Rule("permission", "known", "PERMISSION_DENIED"),
    FileNotFoundError: _Rule("not_found", "known", "NOT_FOUND"),
    FileExistsError: _Rule("conflict", "known", "ALREADY_EXISTS"),
    ValueError: _Rule("business", "unknown", "TOOL_VALUE_ERROR"),
    urllib.error.URLError: _Rule("transport", "unknown", "URL_ERROR"),
}

# Matched against ``cls.__name__`` for classes outside ``builtins``.
_NAMED_RULES: dict[str, _Rule] = {
    "ConnectError": _Rule("transport", "not_started", "CONNECT_FAILED"),
    "ConnectTimeout": _Rule("transport", "not_started", "CONNECT_TIMEOUT"),
    "PoolTimeout": _Rule("timeout", "not_started", "POOL_TIMEOUT"),
    "ReadTimeout": _Rule("timeout", "unknown", "READ_TIMEOUT"),
    "WriteTimeout": _Rule("timeout", "unknown", "WRITE_TIMEOUT"),
    "TimeoutException": _Rule("timeout", "unknown", "TIMEOUT"),
    "Timeout": _Rule("timeout", "unknown", "TIMEOUT"),
    "ReadError": _Rule("transport", "unknown", "READ_FAILED"),
    "WriteError": _Rule("transport", "unknown", "WRITE_FAILED"),
    "NetworkError": _Rule("transport", "unknown", "NETWORK_ERROR"),
    "TransportError": _Rule("transport", "unknown", "NETWORK_ERROR"),
    "RemoteProtocolError": _Rule("protocol", "unknown", "REMOTE_PROTOCOL_ERROR"),
    "LocalProtocolError": _Rule("protocol", "unknown", "PROTOCOL_ERROR"),
    "ProtocolError": _Rule("protocol", "unknown", "PROTOCOL_ERROR"),
    "UnsupportedProtocol": _Rule("validation", "not_started", "INVALID_URL"),
    "InvalidURL": _Rule("validation", "not_started", "INVALID_URL"),
}

# A plain OSError from connect() with one of these errnos never left the host.
_UNREACHABLE_ERRNOS = frozenset(
    {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN}
)

_STATUS_CATEGORIES: dict[int, ErrorCategory] = {
    400: "validation",
    422: "validation",
    401: "permission",
    403: "permission",
    404: "not_found",
    410: "not_found",
    409: "conflict",
    412: "conflict",
    429: "rate_limit",
    502: "transport",
    503: "transport",
    504: "transport",
}

_FALLBACK = _Rule("unknown", "unknown", "TOOL_EXCEPTION")


def error_from_exception(exc: BaseException, *, phase: ErrorPhase = "execute") -> OperationError:
    """Map an exception a tool raised to an ``OperationError`` (table in the module docstring).

    Raises:
        BaseException: ``exc`` itself when it is a control-flow signal
            (``asyncio.CancelledError``, ``KeyboardInterrupt``, ``SystemExit``).
    """
    if isinstance(exc, asyncio.CancelledError) or not isinstance(exc, Exception):
        raise exc
    if isinstance(exc, AgentLoomError):
        return exc.error
    if isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        return error_from_exception(exc.exceptions[0], phase=phase)
    if (
        isinstance(exc, urllib.error.URLError)
        and not isinstance(exc, urllib.error.HTTPError)
        and isinstance(exc.reason, Exception)
    ):
        return error_from_exception(exc.reason, phase=phase)
    rule, status = _classify(exc)
    details: dict[str, Any] = {"exception_type": _qualified_name(type(exc))}
    if status is not None:
        details["status_code"] = status
    return OperationError(
        code=rule.code,
        category=rule.category,
        message=_message(exc),
        phase=phase,
        external_outcome=rule.outcome,
        details=details,
    )


def result_from_exception(exc: BaseException, *, phase: ErrorPhase = "execute") -> ToolResult:
    """A ``ToolResult`` for ``exc``: ``unknown`` when the outcome is unknown, else ``failed``.

    Raises:
        BaseException: ``exc`` itself when it is a control-flow signal.
    """
    error = error_from_exception(exc, phase=phase)
    if error.external_outcome == "unknown":
        return ToolResult.unknown(error)
    return ToolResult(status="failed", error=error)


def _classify(exc: Exception) -> tuple[_Rule, int | None]:
    for cls in type(exc).__mro__:
        if cls is urllib.error.HTTPError or (
            cls.__name__ == "HTTPStatusError" and cls.__module__ != "builtins"
        ):
            status = _status_code(exc)
            if status is not None:
                return _status_rule(status), status
            continue
        if cls is OSError and isinstance(exc, OSError) and exc.errno in _UNREACHABLE_ERRNOS:
            return _Rule("transport", "not_started", "NETWORK_UNREACHABLE"), None
        rule = _CLASS_RULES.get(cls)
        if rule is None and cls.__module__ != "builtins":
            rule = _NAMED_RULES.get(cls.__name__)
        if rule is not None:
            return rule, None
    return _FALLBACK, None


def _status_code(exc: Exception) -> int | None:
    code = getattr(exc, "code", None)  # urllib.error.HTTPError
    if not isinstance(code, int):
        code = getattr(getattr(exc, "response", None), "status_code", None)  # httpx
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _status_rule(status: int) -> _Rule:
    code = f"HTTP_{status}"
    category = _STATUS_CATEGORIES.get(status)
    if category is None:
        category = "business" if 400 <= status < 500 else "unknown"
    outcome: ExternalOutcome = "known" if 400 <= status < 500 else "unknown"
    return _Rule(category, outcome, code)


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    # Scrub before cutting, so a cut cannot leave half a secret the patterns miss.
    message = redact_secrets(message)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 15] + " …[truncated]"
    return message


def _qualified_name(cls: type[BaseException]) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"
