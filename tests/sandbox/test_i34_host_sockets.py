"""Issue #34 (1): ``socketpair`` stays allowed in the sandbox (asyncio's event loop needs
one) and reaches nothing outside it. The escape probes (``test_probes.py``) try every way to
a host socket — ``socket()``, io_uring's ``IORING_OP_SOCKET``, a unix socket path the test
makes, the host's PostgreSQL socket; this file pins the one socket call that stays open.

A stream or seqpacket pair is connected from birth: ``connect`` and ``sendto`` with a host
path fail on it (``EISCONN``). A datagram pair is not bound that way — Linux lets one of its
sockets ``sendto`` or re-``connect`` any socket path it can see — so under Landlock, where a
command sees the host's paths, the seccomp filter refuses datagram pairs (``EACCES``). The
control sends the same datagram from an ordinary socket unconfined, which proves the host
listener would see a send.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.sandbox.conftest import run_command, scope_for, text

from agentloom.sandbox import BubblewrapGateway, ExecCommand, LandlockGateway

SCRIPT = r"""
import asyncio, socket, sys
stream = sys.argv[1]
dgram = sys.argv[2]
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
a.sendall(b"ping")
assert b.recv(4) == b"ping"
print("PAIR_OK")
async def main():
    reader, writer = await asyncio.open_connection(sock=a)
    b.sendall(b"hello\n")
    return await reader.readline()
assert asyncio.run(main()) == b"hello\n"
print("ASYNCIO_OK")
def attempt(name, how):
    try:
        how()
        print("REACHED", name)
    except OSError as exc:
        print("refused", name, exc.errno)
attempt("stream-connect", lambda: a.connect(stream))
attempt("stream-sendto", lambda: a.sendto(b"pwned", dgram))
for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    try:
        c, d = socket.socketpair(socket.AF_UNIX, kind)
    except OSError as exc:  # a datagram pair could sendto a path: refused under Landlock
        print("refused pair", kind, exc.errno)
        continue
    attempt(f"{kind}-connect", lambda: c.connect(stream))
    attempt(f"{kind}-sendto", lambda: c.sendto(b"pwned", dgram))
    attempt(f"{kind}-reconnect", lambda: (d.connect(dgram), d.send(b"pwned")))
"""


@pytest.fixture
def host_listeners() -> Iterator[tuple[socket.socket, socket.socket, Path]]:
    folder = Path(tempfile.mkdtemp(prefix="al-"))  # short: AF_UNIX paths stop at 108 bytes
    folder.chmod(0o755)
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.bind(str(folder / "stream"))
    stream.listen(8)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(str(folder / "dgram"))
    for sock in (stream, dgram):
        sock.setblocking(False)
    (folder / "stream").chmod(0o777)
    (folder / "dgram").chmod(0o777)
    try:
        yield stream, dgram, folder
    finally:
        stream.close()
        dgram.close()
        shutil.rmtree(folder, ignore_errors=True)


def _reached(stream: socket.socket, dgram: socket.socket) -> list[str]:
    reached = []
    try:
        stream.accept()[0].close()
        reached.append("stream")
    except BlockingIOError:
        pass
    try:
        dgram.recv(64)
        reached.append("dgram")
    except BlockingIOError:
        pass
    return reached


async def test_i34_socketpair_works_in_the_sandbox_and_reaches_nothing_outside(
    shell_gateway: BubblewrapGateway | LandlockGateway,
    work_dir: Path,
    host_listeners: tuple[socket.socket, socket.socket, Path],
) -> None:
    stream, dgram, folder = host_listeners
    (work_dir / "pair.py").write_text(SCRIPT)
    handle = await shell_gateway.ensure(scope_for(work_dir), None, 1)
    command = ExecCommand(argv=("/usr/bin/python3", "pair.py", str(folder / "stream"), str(folder / "dgram")))
    result = await run_command(shell_gateway, handle, command)
    out = text(result)
    assert "PAIR_OK" in out and "ASYNCIO_OK" in out, (out, result.stderr.head)
    assert _reached(stream, dgram) == [], out  # the judge: what the host's listeners got
    if isinstance(shell_gateway, LandlockGateway):  # the host's paths are in sight
        assert f"refused pair {socket.SOCK_DGRAM} 13" in out, out


def test_i34_the_host_listeners_would_see_an_unconfined_send(
    host_listeners: tuple[socket.socket, socket.socket, Path],
) -> None:
    stream, dgram, folder = host_listeners
    subprocess.run(
        ["/usr/bin/python3", "-c",
         "import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', sys.argv[1]); "
         "socket.socket(socket.AF_UNIX).connect(sys.argv[2])",
         str(folder / "dgram"), str(folder / "stream")],
        check=True,
    )
    assert sorted(_reached(stream, dgram)) == ["dgram", "stream"]
