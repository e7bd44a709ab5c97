"""The zygote: a small, single-threaded process that forks the reapers of executions.

Forking the runtime itself for every command would copy the page tables of a large,
multi-threaded process twice per ``exec``; the zygote is started once (``python -S``, the
standard library and ``_kernel`` / ``_reaper`` only), so each fork is cheap and happens in a
process that has no other threads.

Protocol, on a ``SOCK_SEQPACKET`` socket pair whose other end only the runtime holds: a
request is one JSON message (see ``_reaper._command``) with four fds — the command's stdout
and stderr, the read end of its control pipe, the write end of its status pipe. The zygote
hands it to its ready spare reaper (``_reaper.run_spare``) — with the user namespaces of its
idmapped binds, made once and kept — and answers ``{"pid": N}`` with a pidfd of that reaper,
or ``{"error": "..."}``; then it forks the next spare, whose command builds the root of the
request's namespace view ahead (``_view.Prebuilt``): the next command of that gateway pays only
for its own folders. At the socket's
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
from typing import Any

try:
    from agentloom.sandbox import _reaper, _view
except ImportError:  # run as a script, without the package on the path
    import _reaper  # type: ignore[no-redef,import-not-found]
    import _view  # type: ignore[no-redef,import-not-found]

FDS_PER_REQUEST = 4


class Spare:
    """A forked spare reaper and the channel its request goes down; ``static``: the root of
    a namespace view its command builds ahead (``_view.Prebuilt``)."""

    def __init__(self, listener: socket.socket, static: list[dict[str, Any]] | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            listener.close()
            ours.close()
            _reaper.run_spare(theirs.detach(), static)
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
    #: The user namespaces of idmapped binds, one per (owner, sandbox identity), made once.
    userns: dict[tuple[int, int, int, int], int] = {}
    while True:
        if not poller.poll(1000):
            _reap_children()
            continue
        message, fds = _reaper.receive(sock, FDS_PER_REQUEST)
        if not message:
            return  # the runtime is gone (a waiting spare sees its channel close and exits)
        static = None
        try:
            if len(fds) != FDS_PER_REQUEST:
                raise ValueError(f"expected {FDS_PER_REQUEST} fds, got {len(fds)}")
            request = json.loads(message)
            view = request.get("view")
            static = view["static"] if view else None  # the next spare builds it ahead
            extra = _userns_fds(request, userns)
            taken = spare if spare is not None else Spare(sock)
            spare = None
            try:
                taken.hand_over(message, [*fds, *extra])
            except OSError:  # the spare died meanwhile: a fresh one
                taken.close()
                taken = Spare(sock)
                taken.hand_over(message, [*fds, *extra])
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
        spare = Spare(sock, static)  # the next one, after the answer
        _reap_children()


def _userns_fds(request: dict[str, Any], made: dict[tuple[int, int, int, int], int]) -> list[int]:
    """The user namespaces of the request's idmapped binds (``_view.idmap_owners``' order),
    made the first time an owner is seen and kept: a command need not make its own."""
    view, bwrap, identity = request.get("view"), request.get("bwrap"), request.get("identity")
    owners = _view.idmap_owners([*(view["dynamic"] if view else ()),
                                 *(bwrap["stage"] if bwrap else ())])
    if not owners or identity is None:
        return []
    fds = []
    for owner in owners[:_view.MAX_IDMAPS]:
        key = (*owner, int(identity[0]), int(identity[1]))
        if key not in made:
            made[key] = _view.make_userns(owner, (key[2], key[3]))
        fds.append(made[key])
    return fds


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
