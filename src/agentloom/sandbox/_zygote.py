"""The zygote: a small, single-threaded process that forks the reapers of executions.

Forking the runtime itself for every command would copy the page tables of a large,
multi-threaded process twice per ``exec``; the zygote is started once (``python -S``, the
standard library and ``_kernel`` / ``_reaper`` only), so each fork is cheap and happens in a
process that has no other threads.

Protocol, on a ``SOCK_SEQPACKET`` socket pair whose other end only the runtime holds: a
request is one JSON message (see ``_reaper._command``) with four fds — the command's stdout
and stderr, the read end of its control pipe, the write end of its status pipe. The zygote
hands it to its ready spare reaper (``_reaper.run_spare``) and answers ``{"pid": N}`` with a
pidfd of that reaper, or ``{"error": "..."}``; then it forks the next spare. At the socket's
end of file (the runtime closed it or died) the zygote exits; running reapers go on, and see
their control pipes close when the runtime is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys

try:
    from agentloom.sandbox import _reaper
except ImportError:  # run as a script, without the package on the path
    import _reaper  # type: ignore[no-redef,import-not-found]

FDS_PER_REQUEST = 4


class Spare:
    """A forked spare reaper and the channel its request goes down."""

    def __init__(self, listener: socket.socket) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            listener.close()
            ours.close()
            _reaper.run_spare(theirs.detach())
        theirs.close()
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)  # before any reaping: the pid cannot be reused yet
        self.channel = ours

    def hand_over(self, message: bytes, fds: list[int]) -> None:
        _reaper.send(self.channel, message, fds)
        self.channel.close()

    def close(self) -> None:
        self.channel.close()
        os.close(self.pidfd)


def serve(sock: socket.socket) -> None:
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    spare: Spare | None = Spare(sock)
    while True:
        if not poller.poll(1000):
            _reap_children()
            continue
        message, fds = _reaper.receive(sock, FDS_PER_REQUEST)
        if not message:
            return  # the runtime is gone (a waiting spare sees its channel close and exits)
        try:
            if len(fds) != FDS_PER_REQUEST:
                raise ValueError(f"expected {FDS_PER_REQUEST} fds, got {len(fds)}")
            taken = spare if spare is not None else Spare(sock)
            spare = None
            try:
                taken.hand_over(message, fds)
            except OSError:  # the spare died meanwhile: a fresh one
                taken.close()
                taken = Spare(sock)
                taken.hand_over(message, fds)
        except Exception as exc:  # a bad request is answered, never fatal
            sock.send(json.dumps({"error": repr(exc)}).encode())
            continue
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        try:
            _reaper.send(sock, json.dumps({"pid": taken.pid}).encode(), [taken.pidfd])
        finally:
            os.close(taken.pidfd)
        spare = Spare(sock)  # the next one, after the answer
        _reap_children()


def _reap_children() -> None:
    """Reap reapers that have exited (the runtime watches them through their pidfds)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runtime decides when commands stop
    serve(socket.socket(fileno=int(sys.argv[1])))


if __name__ == "__main__":
    main()
