"""What a confined program sees of the host, once for every backend: the runtime read-only,
the ``/etc`` files programs read when they start, the device nodes, and — in a namespace view
— a private ``/tmp`` and ``/dev/shm``.

::

    RUNTIME_PATHS  /usr /bin /sbin /lib*            read + execute (a merged-/usr symlink stays one)
    etc_paths()    ld.so.cache, alternatives,       read
                   gitconfig, ssl/openssl.cnf       (start-up reads: without them git and Node
                   [+ resolver and TLS with egress]  fail under Landlock, where a file that
                                                     exists but is denied is an error)
    DEVICES        null zero full random urandom    read + write

bubblewrap turns this into flags (``bwrap_runtime_args``), Landlock in a mount namespace into a
root of its own (``static_entries``, ``bind_entries``) and Landlock at the host's paths into rules
(``system_rules``), so the three show programs the same files as far as each can.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from agentloom.sandbox import _kernel

#: The runtime programs need, read-only. A merged-/usr symlink is recreated as a symlink.
RUNTIME_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
RUNTIME_ETC = ("/etc/alternatives", "/etc/ld.so.cache")
#: Files programs read when they start, harmless to show: git's system config (a git that
#: may not read an existing /etc/gitconfig stops), OpenSSL's config (Node stops likewise).
STARTUP_ETC = ("/etc/gitconfig", "/etc/ssl/openssl.cnf")
#: Only with egress: name resolution and TLS roots.
EGRESS_ETC = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
#: Writable-by-owner proc files that bubblewrap 0.8 leaves writable (kernel sysctls!).
PROC_READONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/pressure", "/proc/mtrr")

READ = _kernel.FS_READ_FILE | _kernel.FS_READ_DIR
READ_EXEC = READ | _kernel.FS_EXECUTE
READ_WRITE_FILE = _kernel.FS_READ_FILE | _kernel.FS_WRITE_FILE

Bind = tuple[str, str, bool, "tuple[int, int] | None"]
"""A bind of a view: host source, target inside, writable, idmapped owner (``_view``)."""


def etc_paths(*, egress: bool) -> tuple[str, ...]:
    """The ``/etc`` entries shown read-only (those that exist)."""
    return RUNTIME_ETC + STARTUP_ETC + (EGRESS_ETC if egress else ())


def system_rules(*, egress: bool) -> list[tuple[str, int]]:
    """Landlock rules for the runtime, the ``/etc`` entries and the devices."""
    rules = [(path, READ_EXEC) for path in RUNTIME_PATHS if os.path.exists(path)]
    rules += [(path, READ) for path in etc_paths(egress=egress)]
    rules += [(path, READ_WRITE_FILE) for path in DEVICES]
    return rules


def bwrap_runtime_args(*, egress: bool) -> list[str]:
    """bubblewrap's flags for the runtime and the ``/etc`` entries."""
    args: list[str] = []
    for path in RUNTIME_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in etc_paths(egress=egress):
        args += ["--ro-bind-try", path, path]
    return args


def static_entries(*, egress: bool, tmp_size: int) -> list[dict[str, Any]]:
    """A namespace view's root without the command's own folders (``_view``): the runtime,
    the ``/etc`` entries and devices of the host, a private ``/tmp`` and ``/dev/shm`` of
    ``tmp_size`` bytes. The same for every command of a gateway, so it is built ahead."""
    entries: list[dict[str, Any]] = []
    for path in RUNTIME_PATHS:
        if os.path.islink(path):
            entries.append({"at": path, "symlink": os.readlink(path)})
        elif os.path.isdir(path):
            entries.append({"at": path, "bind": path})
    entries += [{"at": path, "bind": path} for path in etc_paths(egress=egress)
                if os.path.exists(path)]
    entries += [{"at": path, "bind": path, "rw": True, "dev": True} for path in DEVICES
                if os.path.exists(path)]
    entries += [{"at": "/tmp", "tmpfs": tmp_size}, {"at": "/dev/shm", "tmpfs": tmp_size}]
    return entries


def bind_entries(binds: Sequence[Bind]) -> list[dict[str, Any]]:
    """A command's own folders in a namespace view, in order (``_view`` entries)."""
    return [{"at": os.path.normpath(target), "bind": source, "rw": writable,
             "idmap": None if idmap is None else list(idmap)}
            for source, target, writable, idmap in binds]
