"""A command's private view of the files, built by root in a mount namespace of its own.

Run in the command's process as root, just before it drops root and starts (``_reaper``,
``_stdio_shim``); never in the runtime. The standard library and ``_kernel`` only, so the
zygote and the stdio shim can load it without the package (``python -S``). Two uses::

    enter_root(entries)   Landlock where root may make a mount namespace: a new root on a
                          tmpfs holding only ``entries`` (the runtime read-only, a few /etc
                          files, device nodes, a private /tmp, /work, /skills/..., ...), then
                          pivot_root into it; the host's other files are not in the namespace
    stage(entries)        bubblewrap started by root: each bind at /tmp/<i> of a small tmpfs,
                          where the sandbox uid that runs ``bwrap`` reaches it by path

An entry is one JSON object: ``{"at": path, "bind": source, "rw": bool, "idmap": [uid, gid]
| null, "dev": bool}``, ``{"at": path, "symlink": text}`` or ``{"at": path, "tmpfs": bytes}``.
Every bind is a detached copy of the source's mount tree (``open_tree``) made before anything
hides the source, given its attributes (read-only unless ``rw``, ``nosuid``, ``nodev`` unless
``dev``) and attached at its place. A bind with ``idmap`` is an **idmapped mount**: through it,
files of the on-disk owner ``idmap`` appear as the sandbox uid and gid's, and what the sandbox
creates there is stored as that owner's — so a folder root owns (a repository, a ``0700``
folder) is the sandbox's to use while nothing on disk changes, ever.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Any

try:
    from agentloom.sandbox import _kernel
except ImportError:  # inside the zygote or the stdio shim, without the package on the path
    import _kernel  # type: ignore[no-redef,import-not-found]

#: Where the new root (``enter_root``) or the staged binds (``stage``) are built: a tmpfs
#: mounted over it in the private namespace (sources below it were opened first).
STAGE = "/tmp"
_ROOT_OPTIONS = b"mode=0755,size=1m"
_STAGE_OPTIONS = b"mode=0711,size=64k"


def enter_root(entries: list[dict[str, Any]], identity: tuple[int, int] | None) -> None:
    """Enter a private mount namespace whose root holds only ``entries`` (at their ``at``
    paths, in order: a later entry may sit below an earlier tmpfs, never below a bind), then
    make that root read-only. ``identity`` is who ``idmap`` binds map their owner to."""
    trees = _prepare(entries, identity)
    _kernel.mount(b"tmpfs", STAGE, b"tmpfs", _kernel.MS_NOSUID | _kernel.MS_NODEV, _ROOT_OPTIONS)
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
                _kernel.mount(b"tmpfs", path, b"tmpfs", _kernel.MS_NOSUID | _kernel.MS_NODEV,
                              f"mode=1777,size={int(entry['tmpfs'])}".encode())
    finally:
        for tree in trees:
            if tree >= 0:
                with contextlib.suppress(OSError):
                    os.close(tree)
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


def stage(entries: list[dict[str, Any]], identity: tuple[int, int] | None) -> list[str]:
    """Enter a private mount namespace and attach each bind of ``entries`` at
    ``staged_path(i)`` of a small ``0711`` tmpfs on ``STAGE``; return those paths, in order.
    Only this process and its children see them."""
    trees = _prepare(entries, identity)
    _kernel.mount(b"tmpfs", STAGE, b"tmpfs", _kernel.MS_NOSUID | _kernel.MS_NODEV, _STAGE_OPTIONS)
    staged = []
    try:
        for i, tree in enumerate(trees):
            path = staged_path(i)
            _attach(tree, path, mode=0o711)
            staged.append(path)
    finally:
        for tree in trees:
            with contextlib.suppress(OSError):
                os.close(tree)
    return staged


def staged_path(index: int) -> str:
    """Where ``stage`` attaches its ``index``-th bind."""
    return f"{STAGE}/{index}"


def _prepare(entries: list[dict[str, Any]], identity: tuple[int, int] | None) -> list[int]:
    """A private mount namespace, and a detached, attributed copy of each bind's source
    (``-1`` for the other entries)."""
    _kernel.unshare(_kernel.CLONE_NEWNS)
    _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
    namespaces: dict[tuple[int, int], int] = {}
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
            userns = 0
            if idmap:
                if identity is None:
                    raise OSError(22, "an idmapped bind needs the sandbox identity")
                owner = (int(idmap[0]), int(idmap[1]))
                if owner not in namespaces:
                    namespaces[owner] = _userns(owner, identity)
                userns = namespaces[owner]
                attrs |= _kernel.MOUNT_ATTR_IDMAP
            _kernel.mount_setattr(tree, attrs, userns_fd=userns, recursive=not idmap)
    except BaseException:
        for tree in trees:
            if tree >= 0:
                with contextlib.suppress(OSError):
                    os.close(tree)
        raise
    finally:
        for fd in namespaces.values():
            os.close(fd)
    return trees


def _userns(owner: tuple[int, int], identity: tuple[int, int]) -> int:
    """A user namespace whose one mapping is ``owner`` (inside) to ``identity`` (outside):
    the idmapping that shows ``owner``'s files as ``identity``'s. Made by a short-lived child
    (a process cannot leave its own user namespace), which exits once its namespace is held."""
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
