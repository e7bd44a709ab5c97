"""The supervisor of one long-lived sandboxed server (``stdio``): run by whoever spawns the
server (the ``mcp`` stdio client) as ``python -E -s -S -B _stdio_shim.py SPEC``, with the
server's pipes on 0, 1 and 2. The standard library and ``_reaper`` / ``_kernel`` only.

::

    spawner ──pipes──► shim (child subreaper, stops with the spawner, registers <token>.pid)
                        ├─ bubblewrap: [root: private mount namespace, every bind source
                        │   opened as root and bound under a private /tmp] ─► bwrap ─► server
                        └─ landlock / none: fork ─► [root with a mount namespace: a root of its
                            own, ``_view``] rlimits, uid, no_new_privs, Landlock, seccomp
                            (``_reaper._confine``) ─► server

The shim never holds the server's pipes itself (0 and 1 point at ``/dev/null`` once the
server runs), so the spawner sees end of file when the server is gone. When the server
exits, on ``SIGTERM`` / ``SIGINT`` / ``SIGHUP`` (the spawner's shutdown, ``stop`` or a
revocation) and when the spawner dies (a parent-death ``SIGTERM``), it kills every descendant —
orphans re-parent to it, so a sandbox's init or a double fork cannot escape — reaps them
and, only once none is left, writes ``<token>.gone``: the proof ``StdioServers`` reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import sys
from typing import Any, NoReturn

try:
    from agentloom.sandbox import _kernel, _reaper, _view
except ImportError:  # run as a script, without the package on the path
    import _kernel  # type: ignore[no-redef,import-not-found]
    import _reaper  # type: ignore[no-redef,import-not-found]
    import _view  # type: ignore[no-redef,import-not-found]

SETUP_FAILED = 126


def _say(message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"agentloom-sandbox: {message}\n".encode(errors="replace"))


def _write(state: int, name: str, text: str, *, exclusive: bool = False) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(name, flags, 0o600, dir_fd=state)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _exists(state: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=state)
    except FileNotFoundError:
        return False
    return True


def _start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()[19].decode()


def _spawn_bwrap(spec: dict[str, Any], env: dict[str, str]) -> int:
    binds = spec["binds"]
    sources = [src for src, _, _, _ in binds]
    if spec["stage"]:  # root: bwrap runs as the sandbox uid, which may not reach the sources
        sources = _view.stage([{"at": target, "bind": src, "rw": rw, "idmap": idmap}
                               for src, target, rw, idmap in binds], spec["identity"])
    seccomp = os.memfd_create("agentloom-seccomp", 0)  # inherited by bwrap (--seccomp)
    os.write(seccomp, bytes.fromhex(spec["seccomp"]))
    os.lseek(seccomp, 0, os.SEEK_SET)
    argv = [spec["bwrap"], *spec["head"], "--seccomp", str(seccomp), *spec["runtime"]]
    for source, (_, target, writable, _) in zip(sources, binds, strict=True):
        argv += ["--bind" if writable else "--ro-bind", source, target]
    argv += [*spec["tail"], "--", *spec["argv"]]
    pid = os.fork()
    if pid == 0:
        try:
            for limit, value in spec["rlimits"]:
                resource.setrlimit(limit, (value, value))
            if spec["identity"] is not None:  # bwrap itself runs as the sandbox uid
                uid, gid = spec["identity"]
                os.setgroups([])
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
            os.execve(argv[0], argv, env)
        except BaseException as exc:
            _say(f"could not start bubblewrap: {exc}")
        os._exit(SETUP_FAILED)
    os.close(seccomp)
    return pid


def _spawn_confined(spec: dict[str, Any], env: dict[str, str]) -> int:
    shim = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            if spec["confine"] is not None:
                view = spec["confine"].get("view")
                if view is not None:  # root with a mount namespace: a root of its own
                    _view.enter_root(view["static"], view["dynamic"], spec["confine"]["identity"])
                _reaper._confine(shim, spec["confine"])
            else:
                os.chdir(spec["cwd"])
                _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
            os.execve(spec["argv"][0], spec["argv"], env)
        except BaseException as exc:  # never run unconfined
            _say(f"could not start the server: {exc}")
        os._exit(SETUP_FAILED)
    return pid


def main(spec_path: str) -> NoReturn:
    try:
        with open(spec_path, encoding="utf-8") as fh:
            spec = json.load(fh)
    except FileNotFoundError:
        _say("this launch no longer exists (stopped, revoked or used); ask the launcher again")
        os._exit(SETUP_FAILED)
    token = spec["token"]
    state = os.open(os.path.dirname(spec_path), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    signal.set_wakeup_fd(wake_w)  # a stop request that comes early is seen once it runs
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    # The spawner's death is a stop request too (not a SIGKILL: the tree must be killed).
    _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != spec["parent"]:
        os._exit(SETUP_FAILED)  # the spawner is already gone
    _kernel.prctl(_kernel.PR_SET_CHILD_SUBREAPER, 1)
    try:
        _write(state, f"{token}.pid", f"{os.getpid()} {_start_time(os.getpid())}", exclusive=True)
    except FileExistsError:
        _say("this launch was already started once; ask the launcher for a new one")
        os._exit(SETUP_FAILED)
    if _exists(state, f"{token}.stop"):  # revoked before it started: start nothing
        _write(state, f"{token}.gone", "")
        os._exit(0)
    env = {name: os.environ[name] for name in spec["env"] if name in os.environ}
    status = SETUP_FAILED
    try:
        child = _spawn_bwrap(spec, env) if spec["mode"] == "bubblewrap" else _spawn_confined(spec, env)
        null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
        os.dup2(null, 0)
        os.dup2(null, 1)  # the server holds the pipes, not us: its exit is their end of file
        os.close(null)
        pidfd = os.pidfd_open(child)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(wake_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if wake_r in ready:  # asked to stop
                status = 128 + signal.SIGTERM
                break
            if pidfd in ready:
                code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
                status = 128 - code if code < 0 else code
                break
    except BaseException as exc:
        _say(f"the server's supervisor failed: {exc!r}")
    if _reaper._kill_tree():  # every descendant is gone (re-parented orphans included)
        with contextlib.suppress(OSError):
            _write(state, f"{token}.gone", str(status))
        os._exit(status)
    os.kill(os.getpid(), signal.SIGKILL)  # not provably gone: no proof is written
    raise AssertionError("unreachable")


if __name__ == "__main__":
    main(sys.argv[1])
