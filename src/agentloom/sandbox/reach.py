"""Whether a sandboxed command can reach the folders it is given, and as whom it runs.

A runtime running as root runs every command as an unprivileged uid (``identity``). Where
root may make a mount namespace, the command's folders are bound into a view of their own
(``_view``): the folders above them do not matter, and a folder the sandbox uid could not
use as it is gets an **idmapped** bind (``idmap_owner``). Where it may not (a default
container: no ``CAP_SYS_ADMIN``, no user namespaces), the command runs at the host's paths,
so every folder above what it needs must be searchable by its uid (``blocking_folder``), and
a folder of the user's is worked in as its owner (``host_identity``). What cannot work is
refused before anything starts, naming the folder, the uid and the fixes
(``FOLDER_UNREACHABLE``). Nothing here ever changes an owner or a mode.

Where commands must use the host's paths, what AgentLoom itself makes for them (work folders,
skill copies, hook scratch folders, spools) must lie where the sandbox uid reaches it:
``workspace_root_for`` moves a workspace root that lies below a folder it cannot search (a
project under ``/root`` or in a ``mktemp -d`` folder) to a folder of the runtime's own under
``/var/tmp``, and leaves a symbolic link at the configured place.

Owns: those decisions and their messages, and the probe of whether this process may make a
mount namespace (``can_make_mount_namespace``). Does not own: building views (``_view``).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

from agentloom.folders import SEARCH_MODE, make_dirs
from agentloom.sandbox.errors import FOLDER_UNREACHABLE, SandboxError
from agentloom.sandbox.identity import SANDBOX_GID, SANDBOX_UID

log = logging.getLogger("agentloom.sandbox")

R, W, X = 4, 2, 1
#: Where a workspace root the sandbox uid cannot reach is moved (the first that exists).
SHARED_TEMP = ("/var/tmp", "/tmp")

#: What a default container user can do about a folder the sandbox uid cannot reach.
FIXES = (
    "make the folders searchable by others (chmod o+x) or move the project where they are; "
    "for a folder of yours, chown it to an ordinary user (commands then run as that user); "
    "give the container CAP_SYS_ADMIN (the sandbox then binds what it needs into a mount "
    "namespace of its own); install bubblewrap where user namespaces work; or write "
    "`sandbox: {backend: none}` in the config to run commands unconfined"
)
_NO_NAMESPACE = "Landlock without a mount namespace (root without CAP_SYS_ADMIN)"


def allows(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    """Whether ``uid`` / ``gid`` (no supplementary groups) has ``bits`` on the entry ``st``
    by its mode bits (root passes; ACLs are not read)."""
    if uid == 0:
        return True
    mode = st.st_mode
    if st.st_uid == uid:
        return (mode >> 6) & bits == bits
    if st.st_gid == gid:
        return (mode >> 3) & bits == bits
    return mode & bits == bits


def blocking_folder(path: Path, uid: int, gid: int, bits: int) -> Path | None:
    """The first folder on the way to ``path`` that ``uid`` cannot search, or ``path`` itself
    when it lacks ``bits``; ``None`` when ``uid`` reaches it."""
    path = Path(os.path.abspath(path))
    for folder in reversed(path.parents):
        if not allows(os.stat(folder), uid, gid, X):
            return folder
    return None if allows(os.stat(path), uid, gid, bits) else path


def idmap_owner(path: Path, identity: tuple[int, int] | None, *, writable: bool
                ) -> tuple[int, int] | None:
    """The on-disk ``(uid, gid)`` a bind of ``path`` maps to ``identity`` so that the sandbox
    can use the folder as its owner: when the sandbox uid is not its owner and needs to write
    it, or could not read it by its mode. ``None``: bound as it is."""
    if identity is None:
        return None
    st = os.stat(path)
    if st.st_uid == identity[0]:
        return None
    bits = R | W | X if writable else (R | X if stat.S_ISDIR(st.st_mode) else R)
    if not writable and allows(st, identity[0], identity[1], bits):
        return None
    return (st.st_uid, st.st_gid)


def host_identity(work_dir: Path, identity: tuple[int, int], *, managed: bool) -> tuple[int, int]:
    """Who a command runs as at the host's paths (no mount namespace), in ``work_dir``: the
    sandbox ``identity`` in a folder AgentLoom made, the owner in a folder of the user's
    (never root).

    Raises:
        SandboxError: ``FOLDER_UNREACHABLE`` — a folder of the user's that root owns.
    """
    work_dir = Path(os.path.abspath(work_dir))
    st = os.stat(work_dir)
    if managed or st.st_uid == identity[0]:
        return identity
    if st.st_uid == 0:
        raise SandboxError(FOLDER_UNREACHABLE, (
            f"{work_dir} belongs to root; under {_NO_NAMESPACE} a command runs as an "
            f"unprivileged uid ({identity[0]}) at the host's paths and could not write there or "
            "run git in it, and AgentLoom never changes the owner of a folder of yours. "
            f"Fixes: {FIXES}"), phase="ensure")
    return (st.st_uid, st.st_gid)


def check_reach(paths: list[tuple[Path, int]], identity: tuple[int, int]) -> None:
    """Refuse, naming the folder, when ``identity`` cannot reach one of ``paths`` (each with
    the rights it needs on itself) at the host's paths.

    Raises:
        SandboxError: ``FOLDER_UNREACHABLE``.
    """
    uid, gid = identity
    for given, bits in paths:
        path = Path(os.path.abspath(given))
        folder = blocking_folder(path, uid, gid, bits)
        if folder is None:
            continue
        what = "is not searchable" if folder != path else "is not open to it"
        raise SandboxError(FOLDER_UNREACHABLE, (
            f"under {_NO_NAMESPACE} a command runs as uid {uid} at the host's paths, and uid "
            f"{uid} cannot reach {path} ({folder} {what} by uid {uid}). Fixes: {FIXES}"),
            phase="ensure")


@functools.cache
def can_make_mount_namespace() -> bool:
    """Whether this process (root) may make a private mount namespace (``CAP_SYS_ADMIN``, no
    seccomp profile refusing it), probed once by a child interpreter."""
    if os.geteuid() != 0:
        return False
    probe = ("import ctypes,sys; libc=ctypes.CDLL(None,use_errno=True); "
             "sys.exit(0 if libc.unshare(0x20000)==0 else 1)")
    try:
        done = subprocess.run([sys.executable, "-S", "-E", "-c", probe], env={},
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def workspace_root_for(root: Path, *, confined: bool) -> Path:
    """The real folder of the workspace root ``root`` (commands ``confined``: a backend other
    than ``none``). As root, where no mount namespace can be made and the sandbox uid cannot
    search the folders above ``root``, a new root is made in ``/var/tmp/agentloom-<uid>/`` and
    ``root`` becomes a link to it, so every later process finds the same folder; an existing
    root (a folder with content already) is kept where it is."""
    root = Path(os.path.abspath(root))
    if os.path.islink(root):
        return Path(os.path.realpath(root))
    if root.exists() or not confined or os.geteuid() != 0:
        return root
    existing = next(p for p in root.parents if p.exists())
    if blocking_folder(existing, SANDBOX_UID, SANDBOX_GID, X) is None \
            or can_make_mount_namespace():
        return root
    target = _own_folder(root)
    if target is None:
        return root
    make_dirs(root.parent, SEARCH_MODE)
    try:
        os.symlink(target, root)
    except FileExistsError:  # made meanwhile by another process: use what it made
        return Path(os.path.realpath(root))
    log.warning("sandbox: %s lies below a folder uid %d cannot search and this runtime cannot "
                "make a mount namespace: the workspaces (work folders, skill copies, spools) "
                "are kept in %s instead (%s links to it)", root, SANDBOX_UID, target, root)
    return target


def _own_folder(root: Path) -> Path | None:
    """``<shared temp>/agentloom-<uid>/<digest of root>``, made ``0711``; ``None`` when the
    runtime's folder there is not its own (another user made it first)."""
    base_dir = next((Path(p) for p in SHARED_TEMP if os.path.isdir(p)), None)
    if base_dir is None:
        return None
    base = base_dir / f"agentloom-{os.geteuid()}"
    try:
        os.mkdir(base, SEARCH_MODE)
        os.chmod(base, SEARCH_MODE)
    except FileExistsError:
        pass
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        log.warning("sandbox: %s is not a folder of this user; the workspaces stay in place", base)
        return None
    target = base / hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    make_dirs(target, SEARCH_MODE)
    return target
