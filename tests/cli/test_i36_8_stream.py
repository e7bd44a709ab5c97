"""Issue 36, point 8 and acceptance 3: ``agentloom run --stream`` shows the model's text as it
arrives, and the run's record is the same as without ``--stream``.

The model is the scripted OpenAI-compatible server on 127.0.0.1, which sends the answer's text
in three SSE chunks with a pause (``Stall``) before each of the last two. The CLI runs in a real
subprocess whose stdout is read as it comes, each read timed: the first piece must be on the
terminal a pause before the last one (a CLI that printed only at the end of the turn would
print them at the same moment), and ``runs show --json`` of the streamed run equals that of a
run without ``--stream`` once ids and times are set aside.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing.openai_server import (
    Done,
    ScriptedOpenAIServer,
    Stall,
    Step,
    chat_finish,
    chat_role,
    chat_text,
    chat_usage,
)

from .support import SERVER_KEY_ENV, SUBPROCESS_TIMEOUT_S, Cli, agentloom, openai_project

PAUSE_S = 2.0  # the server's pause before each of the last two pieces
PIECES = ("First piece, ", "second piece, ", "last piece.")


def _turn() -> list[Step]:
    return [chat_role(), chat_text(PIECES[0]),
            Stall(PAUSE_S), chat_text(PIECES[1]), Stall(PAUSE_S), chat_text(PIECES[2]),
            chat_finish(), chat_usage(12, 6), Done()]


def _timed_run(args: list[str], cwd: Path) -> tuple[int, list[tuple[float, bytes]]]:
    """Run ``agentloom ARGS``; its stdout as (monotonic time, bytes) per read, and its exit."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    proc = subprocess.Popen([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    reads: list[tuple[float, bytes]] = []

    def read() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            reads.append((time.monotonic(), chunk))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code = proc.wait(timeout=SUBPROCESS_TIMEOUT_S)
    reader.join(timeout=10)
    return code, reads


def _first_seen(reads: list[tuple[float, bytes]], text: str) -> float:
    """When ``text`` was first on stdout (the time of the read that completed it)."""
    seen = b""
    for at, chunk in reads:
        seen += chunk
        if text.encode() in seen:
            return at
    raise AssertionError(f"{text!r} never printed; stdout: {seen.decode(errors='replace')!r}")


_VOLATILE = ("_id", "_at", "duration_s", "lease_owner")
_RESPONSE_ID = re.compile(r"chatcmpl-scripted-[0-9]+")  # the server numbers its turns


def _stable(value: Any, run_id: str) -> Any:
    """``runs show --json`` without what differs between two runs of the same script: ids,
    times, durations, the lease holder's process, the run's id inside keys and the provider's
    response id (the scripted server numbers its turns)."""
    if isinstance(value, dict):
        return {k: _stable(v, run_id) for k, v in value.items()
                if not k.endswith(_VOLATILE) and k not in ("id", "at", "hint", "next")}
    if isinstance(value, list):
        return [_stable(v, run_id) for v in value]
    if isinstance(value, str):
        return _RESPONSE_ID.sub("RESPONSE", value.replace(run_id, "RUN"))
    return value


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    with ScriptedOpenAIServer() as srv:
        yield srv


def test_i36_8_stream_prints_the_text_in_pieces_before_the_turn_ends_and_records_the_same(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.read",))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    server.script(_turn(), _turn())

    code, reads = _timed_run(["run", str(config), "say it", "--stream", "--store", store],
                             cwd=tmp_path)
    assert code == 0, b"".join(c for _, c in reads)
    plain = agentloom("run", str(config), "say it", "--store", store, "--json", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr

    first, second, last = (_first_seen(reads, piece) for piece in PIECES)
    # Each piece is on stdout while the server still pauses before the next one.
    assert second - first > PAUSE_S / 2 and last - second > PAUSE_S / 2, (first, second, last)
    stdout = b"".join(c for _, c in reads).decode()
    assert f"main: {''.join(PIECES)}\n" in stdout  # one block, the pieces in order
    assert len([at for at, _ in reads if at < last]) >= 2  # it came in more than one read

    plain_id = json.loads(plain.stdout)["run_id"]
    (streamed_id,) = [r["run_id"] for r in Cli(store).json("runs", "list", "--store", store)
                      if r["run_id"] != plain_id]
    shown = [Cli(store).json("runs", "show", run_id, "--store", store) for run_id in (streamed_id, plain_id)]
    assert shown[0]["output"] == "".join(PIECES)
    assert shown[0]["operations"], shown[0]
    assert _stable(shown[0], streamed_id) == _stable(shown[1], plain_id)


def test_i36_8_without_stream_the_answer_is_printed_only_once_at_the_end(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.read",))
    server.script(_turn())

    code, reads = _timed_run(["run", str(config), "say it", "--store",
                              f"sqlite:///{tmp_path / 'store.db'}"], cwd=tmp_path)

    assert code == 0
    stdout = b"".join(c for _, c in reads).decode()
    assert "main:" not in stdout and "(reasoning)" not in stdout
    assert stdout.count("".join(PIECES)) == 1
