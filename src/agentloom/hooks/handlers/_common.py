"""What the handler kinds' runners share: the spec's handler as its kind's class, ``${VAR}``
expansion with redaction, the event as JSON, reading a decision from bytes, and the runner
errors.

A secret reaches a hook only at run time: ``${VAR}`` is read from the runtime's environment
when the hook runs, and every value read that way is scrubbed (``Secrets.scrub``) from
anything the runner says — diagnostics, deny reasons — before the manager records it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from agentloom.errors import AgentLoomError, ErrorCategory, redact_secrets
from agentloom.hooks.decision import InvalidDecision
from agentloom.hooks.event import HookEvent
from agentloom.hooks.spec import HookHandler, HookSpec

H = TypeVar("H", bound=HookHandler)

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
REDACTED = "[redacted]"
#: Characters of a hook's own text (stderr, a body) kept in a diagnostic or reason.
TEXT_LIMIT = 2000


class HookRunFailed(AgentLoomError):
    """An out-of-process hook ran and failed: a command that exited other than 0 or 2, an
    HTTP answer that is not 2xx, a refused address, a missing ``${VAR}``. A hook failure:
    fail-open for that hook, or its ``on_failure``."""

    default_code = "HOOK_FAILED"
    default_category: ErrorCategory = "validation"


class HookStartFailed(HookRunFailed):
    """The runtime could not start a command hook — its sandbox refused, its folder or its
    program could not be reached — so the hook's own code never ran. A runtime execution
    failure, not the hook's (000 §5.2, the outcome table's last row): fail-open never passes
    over it; the call is denied with this reason, whatever the hook's ``on_failure``."""

    default_code = "HOOK_NOT_STARTED"
    default_category: ErrorCategory = "permission"


def handler_of(spec: HookSpec, kind: type[H]) -> H:
    """``spec``'s handler, which a runner of ``kind``'s handlers was given.

    Raises:
        HookRunFailed: the handler is another kind's (a runner registered under the wrong kind).
    """
    if not isinstance(spec.handler, kind):
        raise HookRunFailed(f"hook {spec.hook_id!r}: its {spec.handler.kind!r} handler was given "
                            f"to the runner of {kind.__name__}s", code="HOOK_WRONG_RUNNER")
    return spec.handler


class Secrets:
    """The values ``${VAR}`` expanded to for one hook run, scrubbed from what it reports."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def expand(self, template: str, *, where: str) -> str:
        """``template`` with each ``${VAR}`` replaced by the runtime's ``VAR``.

        Raises:
            HookRunFailed: ``VAR`` is not set (the message names it, never a value).
        """

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            found = os.environ.get(name)
            if found is None:
                raise HookRunFailed(f"{where} uses ${{{name}}}, which is not set in the runtime's "
                                    "environment", code="HOOK_ENV_MISSING")
            if found:
                self._values.add(found)
            return found

        return _VAR.sub(value, template)

    def expand_all(self, pairs: tuple[tuple[str, str], ...], *, what: str) -> dict[str, str]:
        return {name: self.expand(v, where=f"{what} {name}") for name, v in pairs}

    def scrub(self, text: str) -> str:
        """``text`` without any expanded value (longest first) and without what
        ``redact_secrets`` recognises."""
        for secret in sorted(self._values, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return redact_secrets(text)


def event_json(event: HookEvent) -> bytes:
    """The event as the JSON object a command reads on stdin or an HTTP hook receives."""
    return json.dumps(_thaw(dict(event)), ensure_ascii=False, separators=(",", ":"),
                      default=str).encode()


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


def decision_of(data: bytes, *, source: str, secrets: Secrets) -> Any:
    """The decision a hook wrote as JSON: empty (or only white space) is an ``allow`` with
    nothing changed; anything else must be a JSON value, validated by the manager.

    Raises:
        InvalidDecision: not UTF-8 JSON (the hook's status is then ``invalid``).
    """
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        return {"decision": "allow"}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidDecision(f"{source} is not JSON ({exc.msg} at position {exc.pos}): "
                              f"{excerpt(text, secrets)!r}") from None


def excerpt(text: str, secrets: Secrets, limit: int = TEXT_LIMIT) -> str:
    """``text`` scrubbed and cut to ``limit`` characters (its last ones: errors come last)."""
    text = secrets.scrub(text.strip())
    return text if len(text) <= limit else "…" + text[-(limit - 1):]
