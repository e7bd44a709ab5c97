"""Where a stdio server's program lives: ``command`` resolved on ``PATH`` and what it runs
from (``stdio``'s installation mounts). See ``docs/sandbox.md``, "Sandboxed stdio servers".

A venv (the folder with ``pyvenv.cfg``) and its base interpreter's prefix; a script under
``node_modules`` → the outermost ``node_modules`` tree; the interpreter of a ``#!`` line
(``env NAME`` resolved on the search path); a ``<prefix>/bin/tool`` → ``<prefix>`` unless
that is a top-level folder (then the file alone). Nothing the runtime mounts anyway.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentloom.sandbox._layout import RUNTIME_PATHS
from agentloom.sandbox.errors import COMMAND_INVALID, SandboxError


@dataclass(frozen=True, slots=True, kw_only=True)
class Installation:
    """What running ``executable`` needs: ``roots`` mounted read-only at their own paths
    (outermost only, nothing the runtime mounts anyway) and ``path_dirs`` put on ``PATH``."""

    executable: Path
    roots: tuple[Path, ...]
    path_dirs: tuple[str, ...]


def resolve_installation(command: str, *, search_path: str | None = None) -> Installation:
    """Find ``command`` (on ``search_path``, default ``PATH``) and what it runs from.

    Raises:
        SandboxError: ``COMMAND_INVALID`` when it is not found or not executable.
    """
    found = command if "/" in command else shutil.which(command, path=search_path)
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise SandboxError(COMMAND_INVALID, f"stdio server command {command!r} was not found on PATH")
    found_path = Path(os.path.abspath(found))
    executable = Path(os.path.realpath(found_path))
    roots: list[Path] = []
    path_dirs: list[str] = []
    _program_roots(found_path, roots)
    interpreter = _shebang(executable, search_path)
    if interpreter is not None:
        _program_roots(interpreter, roots)
        path_dirs.append(str(interpreter.parent))
    kept = _outermost(roots)
    if _covered(found_path, [*kept, *_system_roots()]):
        executable = found_path  # e.g. a venv's bin/python: run by its own name, in its venv
    return Installation(executable=executable, roots=kept, path_dirs=tuple(path_dirs))


def _program_roots(program: Path, roots: list[Path]) -> None:
    real = Path(os.path.realpath(program))
    for candidate in (program, real):
        venv = next((p for p in candidate.parents if (p / "pyvenv.cfg").is_file()), None)
        if venv is not None:
            roots.append(Path(os.path.realpath(venv)))
            home = _venv_home(venv)
            if home is not None:
                roots.append(_prefix(Path(os.path.realpath(home)) / "python"))
            python = venv / "bin" / "python"
            if python.exists():
                roots.append(_prefix(Path(os.path.realpath(python))))
            return
    modules = [p for p in real.parents if p.name == "node_modules"]
    roots.append(modules[-1] if modules else _prefix(real))


def _prefix(real: Path) -> Path:
    """``<prefix>`` for ``<prefix>/bin/tool`` (its libraries live beside), unless that is a
    top-level folder (``/root``, ``/opt``); the file itself otherwise."""
    if real.parent.name == "bin" and len(real.parent.parent.parts) >= 3:
        return real.parent.parent
    return real


def _venv_home(venv: Path) -> str | None:
    with contextlib.suppress(OSError):
        for line in (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                return value.strip()
    return None


def _shebang(executable: Path, search_path: str | None) -> Path | None:
    """The interpreter a ``#!`` line names (``env NAME`` resolved on the search path)."""
    try:
        with open(executable, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if posixpath.basename(words[0]) == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(names[0], path=search_path) if names else None
        return Path(os.path.abspath(found)) if found else None
    return Path(words[0])


def _covered(path: Path, roots: list[Path] | tuple[Path, ...]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _system_roots() -> list[Path]:
    return [Path(os.path.realpath(p)) for p in RUNTIME_PATHS if os.path.isdir(p)]


def _outermost(roots: list[Path]) -> tuple[Path, ...]:
    system = _system_roots()
    kept: list[Path] = []
    for root in sorted(set(roots), key=lambda p: len(p.parts)):
        if not _covered(root, system) and not _covered(root, kept):
            kept.append(root)
    return tuple(kept)
