"""Model failures in the spec's vocabulary (000 §3.3, §4).

Every way one model Attempt can fail becomes an ``OperationError`` with a stable code,
category and ``external_outcome``; the exception that carries it out of an adapter is::

    AgentLoomError
    └── ModelAttemptError    one Attempt failed: ``.error`` (OperationError) and
                             ``.incomplete`` (the partial material, never a response)

Classification (only facts decide, never the wording of a message):

=================================================  ===========  ================
fact                                               category     external_outcome
=================================================  ===========  ================
connect refused / connect timeout / pool timeout   transport    not_started
reset or read error once the request was sent      transport    unknown
HTTP 502 / 503 / 504                               transport    unknown
stream ended without a terminal frame (cut)        transport    unknown
terminal frame whose finish reason maps to error   transport    unknown
HTTP 429 (``details["retry_after_s"]``)            rate_limit   known
HTTP 400 / 422                                     validation   known
HTTP 401 / 403                                     permission   known
HTTP 404                                           not_found    known
HTTP 409                                           conflict     known
any other HTTP status, an error frame in a stream  unknown      known
malformed JSON / frame in the stream               protocol     unknown
invalid response (a call without name, repeat id)  protocol     known
first-output / idle timeout, run deadline          timeout      unknown
run stopped                                        cancelled    unknown
=================================================  ===========  ================

A preset may override the category of an HTTP status (``Connection.status_category``);
the outcome is then ``unknown`` for ``transport`` and ``known`` otherwise.

Messages never hold the API key: the literal key is masked here and
``OperationError`` masks every credential-shaped string on construction.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx2
import openai

from agentloom.errors import AgentLoomError, ErrorCategory, ExternalOutcome, OperationError
from agentloom.models.calls import MODEL_RESPONSE_INVALID

if TYPE_CHECKING:
    from agentloom.models.aggregate import IncompleteAttempt
    from agentloom.models.ports import Connection

MODEL_CONNECT_FAILED = "MODEL_CONNECT_FAILED"
MODEL_CONNECTION_LOST = "MODEL_CONNECTION_LOST"
MODEL_GATEWAY_ERROR = "MODEL_GATEWAY_ERROR"
MODEL_STREAM_CUT = "MODEL_STREAM_CUT"
MODEL_FINISH_ERROR = "MODEL_FINISH_ERROR"
MODEL_RATE_LIMITED = "MODEL_RATE_LIMITED"
MODEL_REQUEST_INVALID = "MODEL_REQUEST_INVALID"
MODEL_PERMISSION_DENIED = "MODEL_PERMISSION_DENIED"
MODEL_NOT_FOUND = "MODEL_NOT_FOUND"
MODEL_CONFLICT = "MODEL_CONFLICT"
MODEL_PROVIDER_ERROR = "MODEL_PROVIDER_ERROR"
MODEL_STREAM_ERROR = "MODEL_STREAM_ERROR"
MODEL_PROTOCOL_ERROR = "MODEL_PROTOCOL_ERROR"
MODEL_FIRST_OUTPUT_TIMEOUT = "MODEL_FIRST_OUTPUT_TIMEOUT"
MODEL_STREAM_IDLE_TIMEOUT = "MODEL_STREAM_IDLE_TIMEOUT"
RUN_DEADLINE_EXCEEDED = "RUN_DEADLINE_EXCEEDED"
RUN_STOPPED = "RUN_STOPPED"
MODEL_ADAPTER_FAILED = "MODEL_ADAPTER_FAILED"

_STATUS: dict[int, tuple[str, ErrorCategory, ExternalOutcome]] = {
    400: (MODEL_REQUEST_INVALID, "validation", "known"),
    422: (MODEL_REQUEST_INVALID, "validation", "known"),
    401: (MODEL_PERMISSION_DENIED, "permission", "known"),
    403: (MODEL_PERMISSION_DENIED, "permission", "known"),
    404: (MODEL_NOT_FOUND, "not_found", "known"),
    409: (MODEL_CONFLICT, "conflict", "known"),
    429: (MODEL_RATE_LIMITED, "rate_limit", "known"),
    502: (MODEL_GATEWAY_ERROR, "transport", "unknown"),
    503: (MODEL_GATEWAY_ERROR, "transport", "unknown"),
    504: (MODEL_GATEWAY_ERROR, "transport", "unknown"),
}
_STATUS_CODE_BY_CATEGORY: dict[str, str] = {
    "validation": MODEL_REQUEST_INVALID,
    "permission": MODEL_PERMISSION_DENIED,
    "not_found": MODEL_NOT_FOUND,
    "conflict": MODEL_CONFLICT,
    "rate_limit": MODEL_RATE_LIMITED,
    "transport": MODEL_GATEWAY_ERROR,
}
_NOT_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error", "too_many_requests"})
_MESSAGE_LIMIT = 500
_SAID_LIMIT = 200  # of the provider's own words in a message, so what follows them fits


class ModelAttemptError(AgentLoomError):
    """One model Attempt failed. ``incomplete`` is what had arrived, kept for the record;
    it is never a response and never spliced with another Attempt."""

    default_code = MODEL_ADAPTER_FAILED

    def __init__(self, error: OperationError, *, incomplete: IncompleteAttempt | None = None) -> None:
        super().__init__(
            error.message, code=error.code, category=error.category, phase=error.phase,
            external_outcome=error.external_outcome,
        )
        self.error = error
        self.incomplete = incomplete

    def with_incomplete(self, incomplete: IncompleteAttempt) -> ModelAttemptError:
        return ModelAttemptError(self.error, incomplete=incomplete)


def failure(
    code: str,
    category: ErrorCategory,
    message: str,
    *,
    outcome: ExternalOutcome,
    provider_code: str | None = None,
    details: dict[str, Any] | None = None,
    secrets: Iterable[str] = (),
) -> ModelAttemptError:
    return ModelAttemptError(OperationError(
        code=code, category=category, message=scrub(message, secrets), external_outcome=outcome,
        provider_code=provider_code, details=details or {},
    ))


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask every literal secret (4+ characters) in ``text`` and cap its length."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).

    Returns ``None`` when absent or not a valid value; a date in the past is ``0.0``.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = -1.0
        if ms >= 0 and ms == ms and ms != float("inf"):
            return ms / 1000.0
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    if seconds != seconds or seconds in (float("inf"), float("-inf")) or seconds < 0:
        return None
    return seconds


def _provider_message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return exc.message


def _provider_code(exc: openai.APIError) -> str | None:
    if exc.code:
        return exc.code
    return exc.type or None


def classify_exception(
    exc: BaseException,
    *,
    sent: bool,
    provider: str = "model provider",
    secrets: Iterable[str] = (),
    status_category: Callable[[int], ErrorCategory | None] | None = None,
    connection: Connection | None = None,
) -> ModelAttemptError:
    """The ``ModelAttemptError`` for an exception raised by the SDK during one Attempt.

    ``sent``: the request may have reached the provider (any failure after the HTTP
    exchange began, or during the stream). ``status_category``: a preset's override of
    the category of an HTTP status. ``connection``: the messages of connection and HTTP
    failures name its config name and base URL, and a 401 / 403 its key's variable.
    """
    secrets = tuple(secrets)
    provider += _origin(connection)
    if isinstance(exc, ModelAttemptError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code, category, outcome = _STATUS.get(status, (MODEL_PROVIDER_ERROR, "unknown", "known"))
        override = status_category(status) if status_category is not None else None
        if override is not None and override != category:
            category, outcome = override, ("unknown" if override == "transport" else "known")
            code = _STATUS_CODE_BY_CATEGORY.get(override, MODEL_PROVIDER_ERROR)
        details: dict[str, Any] = {"status": status}
        if category == "rate_limit":
            retry_after = parse_retry_after(dict(exc.response.headers))
            if retry_after is not None:
                details["retry_after_s"] = retry_after
        said = _provider_message(exc)
        said = said if len(said) <= _SAID_LIMIT else said[:_SAID_LIMIT] + "…"  # keep the hint
        return failure(
            code, category, f"{provider} answered HTTP {status}: {said}"
            + (_key_hint(connection) if status in (401, 403) else ""),
            outcome=outcome, provider_code=_provider_code(exc), details=details, secrets=secrets,
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        if isinstance(cause, _NOT_SENT) or (not sent and cause is None):
            return failure(
                MODEL_CONNECT_FAILED, "transport",
                f"could not connect to the {provider}: {type(cause or exc).__name__}"
                + _url_hint(connection),
                outcome="not_started", secrets=secrets,
            )
        return failure(
            MODEL_CONNECTION_LOST, "transport",
            f"the connection to the {provider} was lost after the request was sent: "
            f"{type(cause or exc).__name__}: {cause or exc}",
            outcome="unknown", secrets=secrets,
        )
    if isinstance(exc, openai.APIError):
        # An error frame inside a stream: the provider answered, with an error.
        pcode = _provider_code(exc)
        stream_category: ErrorCategory = (
            "rate_limit" if (pcode or "").lower() in _RATE_LIMIT_CODES else "unknown"
        )
        return failure(
            MODEL_STREAM_ERROR, stream_category, f"the {provider} reported an error in the stream: "
            f"{_provider_message(exc)}", outcome="known", provider_code=pcode, secrets=secrets,
        )
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return failure(
            MODEL_PROTOCOL_ERROR, "protocol",
            f"the {provider} sent a frame that is not valid JSON: {exc}",
            outcome="unknown" if sent else "not_started", secrets=secrets,
        )
    if isinstance(exc, httpx2.TransportError):
        not_sent = isinstance(exc, _NOT_SENT)
        return failure(
            MODEL_CONNECT_FAILED if not_sent else MODEL_CONNECTION_LOST, "transport",
            f"transport failure talking to the {provider}: {type(exc).__name__}",
            outcome="not_started" if not_sent else "unknown", secrets=secrets,
        )
    return failure(
        MODEL_ADAPTER_FAILED, "unknown", f"the model adapter failed: {type(exc).__name__}: {exc}",
        outcome="unknown" if sent else "not_started", secrets=secrets,
    )


def _origin(connection: Connection | None) -> str:
    """`` (connection 'local', base URL http://host/v1)``: where the config defines it."""
    if connection is None:
        return ""
    named = f"connection {connection.config_name!r}, " if connection.config_name else ""
    return f" ({named}base URL {_bare_url(connection.base_url)})"


def _bare_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may hold credentials)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(unparsable)"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _url_hint(connection: Connection | None) -> str:
    if connection is None:
        return ""
    where = f"connections.{connection.config_name}.base_url" if connection.config_name else "base_url"
    return f"; check that the provider is up at that URL, or fix {where}"


def _key_hint(connection: Connection | None) -> str:
    if connection is None:
        return ""
    where = f" (connections.{connection.config_name}.api_key_env)" if connection.config_name else ""
    if not connection.api_key:  # a keyless connection (models.connect.key_rule): nothing was sent
        variable = f"export {connection.api_key_env!r}" if connection.api_key_env else "name one"
        return (f"; the connection sent no API key because none is required here; if the server "
                f"wants one, {variable}{where or ' with api_key_env'}")
    if connection.api_key_env is None:
        return "; check the connection's API key"
    return (f"; check the API key in the environment variable {connection.api_key_env!r}{where}: "
            "it may be wrong, expired or not allowed to use this model")


def protocol_error(message: str, *, outcome: ExternalOutcome = "unknown") -> ModelAttemptError:
    return failure(MODEL_PROTOCOL_ERROR, "protocol", message, outcome=outcome)


def invalid_response(message: str, *, details: dict[str, Any] | None = None) -> ModelAttemptError:
    """A complete response that fails validation: the model's output is known and unusable."""
    return failure(MODEL_RESPONSE_INVALID, "protocol", message, outcome="known", details=details)


def finish_error(reason: str) -> ModelAttemptError:
    return failure(
        MODEL_FINISH_ERROR, "transport",
        f"the provider ended the response with an error (finish reason {reason!r})",
        outcome="unknown", details={"finish_reason": reason},
    )


def stream_cut(message: str = "the stream ended before a complete terminal frame") -> ModelAttemptError:
    return failure(MODEL_STREAM_CUT, "transport", message, outcome="unknown")


def first_output_timeout(seconds: float) -> ModelAttemptError:
    return failure(
        MODEL_FIRST_OUTPUT_TIMEOUT, "timeout",
        f"no meaningful model output within {seconds:g} s of the request start",
        outcome="unknown", details={"timeout_s": seconds},
    )


def idle_timeout(seconds: float) -> ModelAttemptError:
    return failure(
        MODEL_STREAM_IDLE_TIMEOUT, "timeout",
        f"the model stream was idle for {seconds:g} s", outcome="unknown", details={"timeout_s": seconds},
    )


def deadline_exceeded(*, sent: bool = True) -> ModelAttemptError:
    if not sent:
        return failure(
            RUN_DEADLINE_EXCEEDED, "timeout", "the run deadline had passed before the model call",
            outcome="not_started",
        )
    return failure(
        RUN_DEADLINE_EXCEEDED, "timeout",
        "the run deadline passed while the model call was running", outcome="unknown",
    )


def stopped(reason: str | None, *, sent: bool) -> ModelAttemptError:
    return failure(
        RUN_STOPPED, "cancelled", f"the run was stopped ({reason or 'stopped'}) during the model call",
        outcome="unknown" if sent else "not_started",
    )
