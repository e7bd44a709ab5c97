"""The developer Tool SDK (000 §8) and exception normalisation (000 §3.3)."""

from __future__ import annotations

import asyncio
import errno
import socket
import time
import urllib.error
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pydantic import Field

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.errors import OperationError, RegistrationError
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import JsonBlock, TextBlock
from agentloom.tools import (
    StrictInput,
    Tool,
    ToolContext,
    ToolDescription,
    ToolHandler,
    ToolOutput,
    ToolResult,
    error_from_exception,
)
from agentloom.tools.normalise import result_from_exception

# --- fixtures -------------------------------------------------------------------------


class Address(StrictInput):
    city: str
    zip: str | None = None


class WriteReportInput(StrictInput):
    path: str
    markdown: str
    if_match: str | None = None
    address: Address | None = None
    tags: dict[str, int] = Field(default_factory=dict)
    title: str = "report"


Body = Callable[[WriteReportInput, ToolContext], Awaitable[ToolOutput]]


class ScriptedTool(Tool[WriteReportInput]):
    """A tool whose body is a test-supplied coroutine; counts its calls."""

    name = "write_report"
    description = "Write a report into the session workspace."
    input_type = WriteReportInput

    def __init__(self, body: Body) -> None:
        self.body = body
        self.calls: list[tuple[WriteReportInput, ToolContext]] = []

    async def execute(self, args: WriteReportInput, ctx: ToolContext) -> ToolOutput:
        self.calls.append((args, ctx))
        return await self.body(args, ctx)


def returning(value: ToolOutput) -> Body:
    async def body(args: WriteReportInput, ctx: ToolContext) -> ToolOutput:
        return value

    return body


def raising(exc: BaseException) -> Body:
    async def body(args: WriteReportInput, ctx: ToolContext) -> ToolOutput:
        raise exc

    return body


def attempt(**overrides: Any) -> AttemptContext:
    fields: dict[str, Any] = {
        "operation_id": "op-1",
        "attempt_no": 2,
        "run_id": "run-1",
        "role": None,
        "deadline": time.time() + 60,
    }
    fields.update(overrides)
    return AttemptContext(**fields)


def request(**arguments: Any) -> CapabilityRequest:
    args = {"path": "out.md", "markdown": "# hi"} | arguments
    return CapabilityRequest(
        operation_id="op-1",
        resource_version_id="rv-1",
        capability_key="write_report",
        arguments=args,
    )


async def run(body: Body, **arguments: Any) -> tuple[ToolResult, ScriptedTool]:
    tool = ScriptedTool(body)
    result = await asyncio.wait_for(
        ToolHandler(tool).invoke_once(request(**arguments), attempt()), timeout=10
    )
    return result, tool


def assert_not_success(result: ToolResult) -> OperationError:
    assert result.status != "succeeded"
    assert result.error is not None
    return result.error


# --- schema ---------------------------------------------------------------------------


def test_s8_strict_input_schema_forbids_additional_properties() -> None:
    schema = ScriptedTool.input_schema()

    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Address"]["additionalProperties"] is False


def test_s8_input_schema_keeps_refs_local_and_dict_fields_open() -> None:
    schema = ScriptedTool.input_schema()

    refs = [s["$ref"] for s in schema["properties"]["address"]["anyOf"] if "$ref" in s]
    assert refs == ["#/$defs/Address"]
    assert schema["properties"]["tags"]["additionalProperties"] == {"type": "integer"}


def test_s8_input_schema_drops_title_noise_but_keeps_a_field_called_title() -> None:
    schema = ScriptedTool.input_schema()

    assert "title" not in schema
    assert "title" not in schema["properties"]["path"]
    assert schema["properties"]["title"] == {"default": "report", "type": "string"}


def test_s8_describe_gives_name_description_and_schema() -> None:
    assert ScriptedTool.describe() == ToolDescription(
        name="write_report",
        description="Write a report into the session workspace.",
        input_schema=ScriptedTool.input_schema(),
    )


def test_s8_input_type_is_inferred_from_the_generic_parameter() -> None:
    class Echo(Tool[Address]):
        name = "echo"
        description = "Echo a city."

        async def execute(self, args: Address, ctx: ToolContext) -> ToolOutput:
            return args.city

    assert Echo.input_type is Address


def test_s8_an_incomplete_tool_is_refused_at_registration() -> None:
    class Nameless(Tool[Address]):
        description = "no name"

        async def execute(self, args: Address, ctx: ToolContext) -> ToolOutput:
            return None

    with pytest.raises(Exception, match="non-empty `name"):
        ToolHandler(Nameless())


def test_s8_tool_handler_is_a_capability_handler() -> None:
    handler: CapabilityHandler = ToolHandler(ScriptedTool(returning(None)))
    assert callable(handler.invoke_once)


# --- arguments ------------------------------------------------------------------------


async def test_s8_extra_argument_is_a_validation_failure_and_execute_never_runs() -> None:
    result, tool = await run(returning("ok"), unexpected=1)

    error = assert_not_success(result)
    assert result.status == "failed"
    assert (error.category, error.code, error.external_outcome) == (
        "validation",
        "INVALID_ARGUMENTS",
        "not_started",
    )
    assert "unexpected" in error.message
    assert tool.calls == []


async def test_s8_invalid_arguments_list_field_paths_without_values() -> None:
    secret = "sk-live-0123456789abcdef"
    result, tool = await run(
        returning("ok"), path=123, address={"city": secret, "zip": 5, "extra": "x"}
    )

    error = assert_not_success(result)
    assert set(error.details["fields"]) == {"path", "address.zip", "address.extra"}
    for field_path in error.details["fields"]:
        assert field_path in error.message
    assert secret not in error.message
    assert tool.calls == []


# --- outputs --------------------------------------------------------------------------


async def test_s8_returned_str_becomes_a_text_success() -> None:
    result, tool = await run(returning("saved"))

    assert result.status == "succeeded"
    assert result.content == (TextBlock("saved"),)
    assert len(tool.calls) == 1
    assert tool.calls[0][0] == WriteReportInput(path="out.md", markdown="# hi")


async def test_s8_returned_dict_and_list_become_json_successes() -> None:
    result, _ = await run(returning({"path": "out.md", "etag": "e1"}))
    assert result.content == (JsonBlock({"path": "out.md", "etag": "e1"}),)

    result, _ = await run(returning([1, 2]))
    assert result.content == (JsonBlock([1, 2]),)

    result, _ = await run(returning(None))
    assert (result.status, result.content) == ("succeeded", ())


async def test_s8_returned_tool_result_passes_through_unchanged() -> None:
    own = ToolResult.failure("quota exceeded", code="QUOTA")
    result, _ = await run(returning(own))

    assert result is own


async def test_s8_undeliverable_output_is_a_failure_with_a_known_outcome_not_success() -> None:
    # i36 (1): the tool ran and ended, so the outcome is known: failed, never unknown
    result, _ = await run(returning({"when": object()}))
    assert assert_not_success(result).code == "INVALID_TOOL_OUTPUT"
    assert result.status == "failed"
    assert assert_not_success(result).external_outcome == "known"

    result, _ = await run(returning(42))
    assert result.content == (JsonBlock({"result": 42}),)


# --- exceptions -----------------------------------------------------------------------


async def test_s8_network_error_is_never_a_success() -> None:
    result, _ = await run(raising(ConnectionResetError(104, "Connection reset by peer")))

    error = assert_not_success(result)
    assert result.status == "unknown"
    assert (error.category, error.external_outcome) == ("transport", "unknown")
    assert error.message.startswith("ConnectionResetError: ")


async def test_s8_connection_refused_is_failed_and_not_started() -> None:
    result, _ = await run(raising(ConnectionRefusedError(111, "Connection refused")))

    error = assert_not_success(result)
    assert result.status == "failed"
    assert (error.category, error.external_outcome) == ("transport", "not_started")


async def test_s8_timeout_is_category_timeout_with_unknown_outcome() -> None:
    result, _ = await run(raising(TimeoutError()))

    error = assert_not_success(result)
    assert (result.status, error.category, error.external_outcome) == (
        "unknown",
        "timeout",
        "unknown",
    )
    assert error.message == "TimeoutError"


async def test_s8_secret_in_exception_message_is_redacted() -> None:
    leak = "upstream said: Authorization: Bearer abcdefghijklmnop token=hunter2hunter2"
    result, _ = await run(raising(RuntimeError(leak)))

    error = assert_not_success(result)
    assert "abcdefghijklmnop" not in error.message
    assert "hunter2" not in error.message
    assert error.message.startswith("RuntimeError: upstream said")
    assert (error.category, error.code) == ("unknown", "TOOL_EXCEPTION")


async def test_s8_cancellation_propagates_and_is_not_a_result() -> None:
    with pytest.raises(asyncio.CancelledError):
        await run(raising(asyncio.CancelledError()))
    with pytest.raises(asyncio.CancelledError):
        error_from_exception(asyncio.CancelledError())
    with pytest.raises(KeyboardInterrupt):
        result_from_exception(KeyboardInterrupt())


# --- context --------------------------------------------------------------------------


async def test_s8_tool_context_exposes_the_attempt_facts() -> None:
    ctx_attempt = attempt(operation_id="op-7", attempt_no=3, deadline=time.time() + 30)
    tool = ScriptedTool(returning("ok"))

    await ToolHandler(tool).invoke_once(request(), ctx_attempt)
    ctx = tool.calls[0][1]

    assert (ctx.operation_id, ctx.attempt_no, ctx.run_id) == ("op-7", 3, "run-1")
    assert ctx.deadline == ctx_attempt.deadline
    assert 0 < ctx.remaining() <= 30
    assert ctx.cancelled is False
    ctx_attempt.cancel.set()
    assert ctx.cancelled is True


def test_s8_remaining_is_never_negative() -> None:
    ctx = ToolContext.from_attempt(attempt(deadline=time.time() - 5))
    assert ctx.remaining() == 0.0


# --- real sockets ---------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_s8_real_refused_connection_is_a_transport_failure() -> None:
    port = closed_port()

    async def body(args: WriteReportInput, ctx: ToolContext) -> ToolOutput:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()
        return "connected"

    result, _ = await run(body)

    error = assert_not_success(result)
    assert (result.status, error.category, error.external_outcome) == (
        "failed",
        "transport",
        "not_started",
    )
    assert error.code == "CONNECTION_REFUSED"


async def test_s8_real_connection_reset_mid_call_is_unknown() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)  # the request arrived: it may have taken effect
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        writer.transport.abort()  # linger 0: the peer sees RST, not FIN

    server = await asyncio.start_server(reset, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def body(args: WriteReportInput, ctx: ToolContext) -> ToolOutput:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"PING")
        await writer.drain()
        data = await reader.read(100)
        writer.close()
        return data.decode()

    async with server:
        result, _ = await run(body)

    error = assert_not_success(result)
    assert (result.status, error.category, error.external_outcome) == (
        "unknown",
        "transport",
        "unknown",
    )


# --- the normalisation table ----------------------------------------------------------


def named(name: str, base: type[Exception] = Exception) -> type[Exception]:
    """A third-party-looking exception class, as httpx would define it."""
    return type(name, (base,), {"__module__": "fakehttp"})


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def http_status_error(status: int) -> Exception:
    exc = named("HTTPStatusError")(f"Server error '{status}'")
    exc.response = _Response(status)  # type: ignore[attr-defined]
    return exc


def urllib_http_error(status: int) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("https://example.test", status, "nope", None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "category", "outcome", "code"),
    [
        (ConnectionRefusedError(), "transport", "not_started", "CONNECTION_REFUSED"),
        (
            socket.gaierror(-2, "Name or service not known"),
            "transport",
            "not_started",
            "DNS_LOOKUP_FAILED",
        ),
        (
            OSError(errno.ENETUNREACH, "Network is unreachable"),
            "transport",
            "not_started",
            "NETWORK_UNREACHABLE",
        ),
        (ConnectionResetError(), "transport", "unknown", "CONNECTION_RESET"),
        (ConnectionAbortedError(), "transport", "unknown", "CONNECTION_ABORTED"),
        (BrokenPipeError(), "transport", "unknown", "BROKEN_PIPE"),
        (ConnectionError(), "transport", "unknown", "CONNECTION_FAILED"),
        (TimeoutError(), "timeout", "unknown", "TIMEOUT"),
        (PermissionError(13, "Permission denied"), "permission", "known", "PERMISSION_DENIED"),
        (FileNotFoundError(2, "No such file"), "not_found", "known", "NOT_FOUND"),
        (FileExistsError(17, "File exists"), "conflict", "known", "ALREADY_EXISTS"),
        (ValueError("amount must be positive"), "business", "unknown", "TOOL_VALUE_ERROR"),
        (KeyError("missing"), "unknown", "unknown", "TOOL_EXCEPTION"),
        (OSError(errno.ENOSPC, "No space left"), "unknown", "unknown", "TOOL_EXCEPTION"),
        (named("ConnectError")("refused"), "transport", "not_started", "CONNECT_FAILED"),
        (named("ConnectTimeout")(), "transport", "not_started", "CONNECT_TIMEOUT"),
        (named("ReadTimeout")(), "timeout", "unknown", "READ_TIMEOUT"),
        (named("RemoteProtocolError")(), "protocol", "unknown", "REMOTE_PROTOCOL_ERROR"),
        (
            named("SubConnectError", named("ConnectError"))(),
            "transport",
            "not_started",
            "CONNECT_FAILED",
        ),
        (http_status_error(429), "rate_limit", "known", "HTTP_429"),
        (http_status_error(404), "not_found", "known", "HTTP_404"),
        (http_status_error(503), "transport", "unknown", "HTTP_503"),
        (http_status_error(500), "unknown", "unknown", "HTTP_500"),
        (urllib_http_error(403), "permission", "known", "HTTP_403"),
        (
            urllib.error.URLError(ConnectionRefusedError()),
            "transport",
            "not_started",
            "CONNECTION_REFUSED",
        ),
        (urllib.error.URLError("no host given"), "transport", "unknown", "URL_ERROR"),
        (
            ExceptionGroup("tg", [ConnectionResetError()]),
            "transport",
            "unknown",
            "CONNECTION_RESET",
        ),
        (ExceptionGroup("tg", [ValueError(), KeyError()]), "unknown", "unknown", "TOOL_EXCEPTION"),
    ],
)
def test_s3_3_exceptions_map_to_the_documented_category_and_outcome(
    exc: Exception, category: str, outcome: str, code: str
) -> None:
    error = error_from_exception(exc)

    assert (error.category, error.external_outcome, error.code) == (category, outcome, code)
    result = result_from_exception(exc)
    assert result.status == ("unknown" if outcome == "unknown" else "failed")


def test_s8_agentloom_error_keeps_its_own_operation_error() -> None:
    exc = RegistrationError("a second owner for 'x'")
    assert error_from_exception(exc) is exc.error


def test_s8_huge_exception_message_is_bounded() -> None:
    error = error_from_exception(RuntimeError("x" * 100_000))
    assert len(error.message) <= 2000
    assert error.message.endswith("[truncated]")
