"""A command's private view of the files, built by root in a mount namespace of its own.

Run in the command's process as root, just before it drops root and starts (``_reaper``,
``_stdio_shim``); never in the runtime. The standard library and ``_kernel`` only, so the
zygote and the stdio shim can load it without the package (``python -S``). Two uses::

    enter_root(static, dynamic)   Landlock where root may make a mount namespace: a new root
                                  on a tmpfs holding only the entries (the runtime read-only,
                                  a few /etc files, device nodes, a private /tmp, /work,
                                  /skills/..., ...), then pivot_root into it: the host's other
                                  files are not in the namespace at all
    Prebuilt(static) ... .enter(dynamic)
                                  the same, its static part (everything but the command's own
                                  folders) built ahead, in the zygote's spare command process
                                  while the previous command runs: a start pays only for
                                  /work and the read-only mounts
    stage(entries)                bubblewrap started by root: each bind at /tmp/<i> of a small
                                  tmpfs, where the sandbox uid that runs ``bwrap`` reaches it

An entry is one JSON object: ``{"at": path, "bind": source, "rw": bool, "idmap": [uid, gid]
| null, "dev": bool}``, ``{"at": path, "symlink": text}`` or ``{"at": path, "tmpfs": bytes}``.
Every bind is a detached copy of the source's mount tree (``open_tree``), made in the host's
namespace, given its attributes (read-only unless ``rw``, ``nosuid``, ``nodev`` unless
``dev``) and attached at its place. A bind with ``idmap`` is an **idmapped mount**: through it,
files of the on-disk owner ``idmap`` appear as the sandbox uid and gid's, and what the sandbox
creates there is stored as that owner's — so a folder root owns (a repository, a ``0700``
folder) is the sandbox's to use while nothing on disk changes, ever. Its user namespace (the
idmapping) comes from the caller (``userns``: the zygote keeps one per owner) or is made here.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from agentloom.sandbox import _kernel
except ImportError:  # inside the zygote or the stdio shim, without the package on the path
    import _kernel  # type: ignore[no-redef,import-not-found]

#: Where the new root (``enter_root``) or the staged binds (``stage``) are built: a tmpfs
#: mounted over it in the private namespace (every source is opened before, in the host's).
STAGE = "/tmp"
_ROOT_OPTIONS = b"mode=0755,size=1m"
_STAGE_OPTIONS = b"mode=0711,size=64k"
_FLAGS = _kernel.MS_NOSUID | _kernel.MS_NODEV
#: The most idmapped owners one command may have (each its own user namespace fd).
MAX_IDMAPS = 8

Entry = dict[str, Any]
Owner = tuple[int, int]


def idmap_owners(entries: Sequence[Entry]) -> list[Owner]:
    """The distinct on-disk owners ``entries`` bind idmapped, in order: the order in which a
    caller hands their user namespaces over (``userns``)."""
    owners: list[Owner] = []
    for entry in entries:
        idmap = entry.get("idmap")
        if idmap and (owner := (int(idmap[0]), int(idmap[1]))) not in owners:
            owners.append(owner)
    return owners


def enter_root(static: Sequence[Entry], dynamic: Sequence[Entry],
               identity: tuple[int, int] | None, userns: Mapping[Owner, int] | None = None) -> None:
    """Enter a private mount namespace whose root holds only ``static`` then ``dynamic`` (at
    their ``at`` paths, in order: a later entry may sit below an earlier tmpfs, never below a
    bind), then make that root read-only. ``identity`` is who ``idmap`` binds map their owner
    to; ``userns`` the user namespaces of those owners, when the caller has them."""
    entries = [*static, *dynamic]
    _kernel.unshare(_kernel.CLONE_NEWNS)
    _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
    trees = _clones(entries, identity, userns)
    _kernel.mount(b"tmpfs", STAGE, b"tmpfs", _FLAGS, _ROOT_OPTIONS)
    _build(entries, trees)
    _pivot()


class Prebuilt:
    """A view's root with its ``static`` entries, built in a private mount namespace before
    the command it is for is known (``_reaper``'s spare command). ``enter`` adds the
    command's own entries and enters it; ``abandon`` goes back to the host's namespace, as if
    nothing had been built (a command that wants another view, or none)."""

    def __init__(self, static: Sequence[Entry]) -> None:
        self.static = list(static)
        self._host = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _kernel.unshare(_kernel.CLONE_NEWNS)
            _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
            trees = _clones(static, None, None)
            _kernel.mount(b"tmpfs", STAGE, b"tmpfs", _FLAGS, _ROOT_OPTIONS)
            _build(static, trees)
            self._view = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            self.abandon()
            raise

    def enter(self, dynamic: Sequence[Entry], identity: tuple[int, int] | None,
              userns: Mapping[Owner, int] | None = None) -> None:
        """Copy ``dynamic``'s sources in the host's namespace (where they are), attach them,
        and enter the root."""
        _kernel.setns(self._host, _kernel.CLONE_NEWNS)
        trees = _clones(dynamic, identity, userns)
        _kernel.setns(self._view, _kernel.CLONE_NEWNS)
        self._close()
        _build(dynamic, trees)
        _pivot()

    def fds(self) -> tuple[int, int]:
        """The namespace fds it holds (kept open across the command's fd clean-up)."""
        return self._host, self._view

    def abandon(self) -> None:
        """Back to the host's mount namespace; what was built goes with the last fd."""
        with contextlib.suppress(OSError):
            _kernel.setns(self._host, _kernel.CLONE_NEWNS)
        self._close()

    def _close(self) -> None:
        for fd in (getattr(self, "_host", -1), getattr(self, "_view", -1)):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._host = self._view = -1


def stage(entries: Sequence[Entry], identity: tuple[int, int] | None,
          userns: Mapping[Owner, int] | None = None) -> list[str]:
    """Enter a private mount namespace and attach each bind of ``entries`` at
    ``staged_path(i)`` of a small ``0711`` tmpfs on ``STAGE``; return those paths, in order.
    Only this process and its children see them."""
    _kernel.unshare(_kernel.CLONE_NEWNS)
    _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
    trees = _clones(entries, identity, userns)
    _kernel.mount(b"tmpfs", STAGE, b"tmpfs", _FLAGS, _STAGE_OPTIONS)
    staged = []
    try:
        for i, tree in enumerate(trees):
            path = staged_path(i)
            _attach(tree, path, mode=0o711)
            staged.append(path)
    finally:
        _close_all(trees)
    return staged


def staged_path(index: int) -> str:
    """Where ``stage`` attaches its ``index``-th bind."""
    return f"{STAGE}/{index}"


def _clones(entries: Sequence[Entry], identity: tuple[int, int] | None,
            userns: Mapping[Owner, int] | None) -> list[int]:
    """A detached, attributed copy of each bind's source (``-1`` for the other entries)."""
    made: dict[Owner, int] = {}
    trees: list[int] = []
    try:
        for entry in entries:
            if "bind" not in entry:
                trees.append(-1)
                continue
            idmap = entry.get("idmap")
            source = os.open(entry["bind"], os.O_PATH | os.O_CLOEXEC)
            try:
                # An idmapped copy is of the one mount only: every mount below would need a
                # filesystem that supports idmappings too.
                tree = _kernel.open_tree(source, _kernel.OPEN_TREE_CLONE
                                         | (0 if idmap else _kernel.AT_RECURSIVE))
            finally:
                os.close(source)
            trees.append(tree)
            attrs = _kernel.MOUNT_ATTR_NOSUID
            if not entry.get("rw"):
                attrs |= _kernel.MOUNT_ATTR_RDONLY
            if not entry.get("dev"):
                attrs |= _kernel.MOUNT_ATTR_NODEV
            fd = 0
            if idmap:
                if identity is None:
                    raise OSError(22, "an idmapped bind needs the sandbox identity")
                owner = (int(idmap[0]), int(idmap[1]))
                fd = (userns or {}).get(owner) or made.get(owner) or -1
                if fd < 0:
                    fd = made[owner] = make_userns(owner, identity)
                attrs |= _kernel.MOUNT_ATTR_IDMAP
            _kernel.mount_setattr(tree, attrs, userns_fd=fd, recursive=not idmap)
    except BaseException:
        _close_all(trees)
        raise
    finally:
        _close_all(list(made.values()))
    return trees


def _build(entries: Sequence[Entry], trees: list[int]) -> None:
    """Make each entry at ``STAGE`` + its path (the tmpfs on ``STAGE`` is the new root)."""
    try:
        for entry, tree in zip(entries, trees, strict=True):
            path = STAGE + entry["at"]
            _parents(path)
            if tree >= 0:
                _attach(tree, path)
            elif "symlink" in entry:
                os.symlink(entry["symlink"], path)
            else:
                os.mkdir(path, 0o755)
                _kernel.mount(b"tmpfs", path, b"tmpfs", _FLAGS,
                              f"mode=1777,size={int(entry['tmpfs'])}".encode())
    finally:
        _close_all(trees)


def _pivot() -> None:
    """Make the tmpfs on ``STAGE`` the root, the old one gone from the namespace, and the
    new root read-only."""
    os.chdir(STAGE)
    _kernel.pivot_root(".", ".")  # the old root now lies on top of the new one: detach it
    _kernel.umount2(".", _kernel.MNT_DETACH)
    os.chdir("/")
    root = os.open("/", os.O_PATH | os.O_CLOEXEC)
    try:
        _kernel.mount_setattr(root, _kernel.MOUNT_ATTR_RDONLY | _kernel.MOUNT_ATTR_NOSUID
                              | _kernel.MOUNT_ATTR_NODEV)
    finally:
        os.close(root)


def make_userns(owner: Owner, identity: tuple[int, int]) -> int:
    """A user namespace whose one mapping is ``owner`` (inside) to ``identity`` (outside):
    the idmapping that shows ``owner``'s files as ``identity``'s. Made by a short-lived child
    (a process cannot leave its own user namespace), which exits once its namespace is held;
    the zygote keeps one per owner across commands."""
    ready_r, ready_w = os.pipe2(os.O_CLOEXEC)
    done_r, done_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(ready_r)
            os.close(done_w)  # else the read below never sees the parent's end of file
            _kernel.unshare(_kernel.CLONE_NEWUSER)
            os.write(ready_w, b"r")
            os.read(done_r, 1)
            status = 0
        finally:
            os._exit(status)
    os.close(ready_w)
    os.close(done_r)
    try:
        if os.read(ready_r, 1) != b"r":
            raise OSError(1, "could not make a user namespace for an idmapped mount")
        for name, inside, outside in (("uid_map", owner[0], identity[0]),
                                      ("gid_map", owner[1], identity[1])):
            fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, f"{inside} {outside} 1\n".encode())
            finally:
                os.close(fd)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(done_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def _attach(tree: int, path: str, *, mode: int = 0o755) -> None:
    """Make a mount point at ``path`` of the tree's kind (folder or file) and attach it."""
    if stat.S_ISDIR(os.fstat(tree).st_mode):
        os.mkdir(path, mode)
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    _kernel.move_mount(tree, path)


def _parents(path: str) -> None:
    """Create the folders above ``path`` inside the new root's tmpfs (``0755``)."""
    missing = []
    parent = os.path.dirname(path)
    while not os.path.isdir(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for folder in reversed(missing):
        os.mkdir(folder, 0o755)


def _close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
