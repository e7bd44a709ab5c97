"""A workspace root full of traps next to an outside sentinel tree, and how to check the latter.

``base/root`` is the workspace. ``base/outside`` is the sentinel: its files carry the canary
secret (which must never appear in any result) and one name no payload mentions (which must
never appear in any listing). ``snapshot`` records every outside entry's type, content hash,
size, mode, link count and mtime, so any write, create, delete, rename or chmod shows up.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

CANARY = "CANARY_" + uuid.uuid4().hex
"""The secret in the outside files; never part of a payload."""
HIDDEN_NAME = "zz-unreferenced-" + uuid.uuid4().hex + ".txt"
"""An outside file no payload names: seeing it in a result means a listing escaped."""
DEPTH = 8


@dataclass(frozen=True)
class Layout:
    base: Path
    root: Path
    outside: Path

    @property
    def canary_file(self) -> Path:
        return self.outside / "canary.txt"


def build_outside(outside: Path) -> None:
    if outside.exists():
        shutil.rmtree(outside)
    (outside / "sub").mkdir(parents=True)
    (outside / "canary.txt").write_text(CANARY + "\n")
    (outside / "sentinel.txt").write_text(CANARY + "\nsentinel\n")
    (outside / HIDDEN_NAME).write_text(CANARY + "\n")
    (outside / "sub" / "deep.txt").write_text(CANARY + "\n")
    (outside / "file.txt").write_text(CANARY + "\n")


def root_spec(layout: Layout) -> dict[str, tuple[str, str]]:
    """What the workspace root holds: ``rel -> (kind, content or link target)``, parents first."""
    out = str(layout.outside)
    spec: dict[str, tuple[str, str]] = {}
    for i in range(1, DEPTH + 1):
        spec["/".join(f"d{j}" for j in range(1, i + 1))] = ("dir", "")
    spec.update(
        {
            "inner": ("dir", ""),
            "inner/sub": ("dir", ""),
            "inner/file.txt": ("file", "inside text\n"),
            "inner/sub/up_abs": ("link", out),
            "inner/sub/up_rel": ("link", "../../../outside"),
            "decoy.txt": ("file", "decoy\n"),
            "canary.txt": ("file", "inside decoy\n"),
            "out_abs": ("link", out),
            "out_rel": ("link", "../outside"),
            "out_file_abs": ("link", out + "/canary.txt"),
            "out_file_rel": ("link", "../outside/canary.txt"),
            "deep_rel": ("link", "d1/d2/../../../outside"),
            "chain1": ("link", "chain2"),
            "chain2": ("link", "chain3"),
            "chain3": ("link", "../outside"),
            "chain_file": ("link", "chain1/canary.txt"),
            "loop_a": ("link", "loop_b"),
            "loop_b": ("link", "loop_a"),
            "proc_root": ("link", "/proc/self/root"),
            "proc_cwd": ("link", "/proc/self/cwd"),
            "proc_fd": ("link", "/proc/self/fd"),
            "dangling_rel": ("link", "../outside/created-by-dangling.txt"),
            "dangling_abs": ("link", out + "/created-by-dangling-abs.txt"),
            "dangling_dir": ("link", "../outside/newdir"),
            "inner_link": ("link", "inner/file.txt"),
            "hard_canary": ("hardlink", "canary.txt"),
            "hard_sentinel": ("hardlink", "sentinel.txt"),
        }
    )
    return spec


def _matches(path: Path, kind: str, value: str, layout: Layout) -> bool:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    if kind == "dir":
        return stat.S_ISDIR(st.st_mode)
    if kind == "link":
        return stat.S_ISLNK(st.st_mode) and os.readlink(path) == value
    if kind == "hardlink":
        return st.st_ino == (layout.outside / value).stat().st_ino
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def build_root(layout: Layout) -> None:
    """Make the root match ``root_spec`` again, touching only what differs (fast to repeat)."""
    root = layout.root
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        root.unlink()
    root.mkdir(exist_ok=True)
    spec = root_spec(layout)
    for rel, (kind, value) in spec.items():
        path = root / rel
        if _matches(path, kind, value, layout):
            continue
        if path.exists() or path.is_symlink():
            _remove(path)
        if kind == "dir":
            path.mkdir()
        elif kind == "file":
            path.write_text(value)
        elif kind == "link":
            os.symlink(value, path)
        else:
            os.link(layout.outside / value, path)
    _remove_extras(root, "", spec)


def _remove_extras(top: Path, rel: str, spec: dict[str, tuple[str, str]]) -> None:
    with os.scandir(top / rel if rel else top) as it:
        names = [e.name for e in it]
    for name in names:
        key = rel + name
        if key == ".locks":
            continue
        if key not in spec:
            _remove(top / key)
        elif spec[key][0] == "dir":
            _remove_extras(top, key + "/", spec)


def build_layout(base: Path) -> Layout:
    layout = Layout(base=base, root=base / "root", outside=base / "outside")
    build_outside(layout.outside)
    build_root(layout)
    return layout


Snapshot = dict[str, tuple[object, ...]]


def snapshot(top: Path, *, skip: frozenset[str] = frozenset(), content: bool = True) -> Snapshot:
    """Every entry under ``top`` (links not followed) with what a write would change.

    ``content=False`` records only names, types and link targets (a cheap shape check).
    """
    out: Snapshot = {}
    try:
        st = top.lstat()
    except FileNotFoundError:
        return {".": ("missing",)}
    out["."] = ("top", st.st_mode, st.st_mtime_ns) if content else ("top",)
    _scan(str(top), "", out, skip, content)
    return out


def _scan(path: str, rel: str, out: Snapshot, skip: frozenset[str], content: bool) -> None:
    with os.scandir(path) as it:
        entries = [e for e in it if not (rel == "" and e.name in skip)]
    for entry in entries:
        key = rel + entry.name
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", os.readlink(entry.path))
        elif stat.S_ISDIR(st.st_mode):
            out[key] = ("dir", st.st_mode, st.st_mtime_ns) if content else ("dir",)
            _scan(entry.path, key + "/", out, skip, content)
        elif stat.S_ISREG(st.st_mode) and content:
            with open(entry.path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            out[key] = ("file", digest, st.st_size, st.st_mode, st.st_nlink, st.st_mtime_ns)
        else:
            out[key] = ("other", stat.S_IFMT(st.st_mode), st.st_nlink)


def quick_state(layout: Layout) -> tuple[object, ...]:
    """A cheap fingerprint that changes whenever an entry is added, removed or written in the
    outside tree or added / removed anywhere in the root's own folders (their mtimes move)."""
    paths = [layout.outside, layout.root]
    paths += [layout.root / rel for rel, (kind, _) in root_spec(layout).items() if kind == "dir"]
    state: list[object] = []
    for dirpath, _, names in os.walk(layout.outside):
        paths += [Path(dirpath) / n for n in names]
    for path in paths:
        try:
            st = path.lstat()
            state.append((str(path), st.st_ino, st.st_mode, st.st_size, st.st_nlink, st.st_mtime_ns))
        except FileNotFoundError:
            state.append((str(path), None))
    return tuple(state)


def leaks(text: str) -> bool:
    """Whether a result or message shows outside content or an outside listing."""
    return CANARY in text or HIDDEN_NAME in text
