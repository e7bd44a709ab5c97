"""Helpers for the Skills tests: skill folders, git repositories built with dulwich and
served over smart HTTP on 127.0.0.1 (the edge of the system: a real git server)."""

from __future__ import annotations

import stat
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from dulwich.index import commit_tree
from dulwich.objects import Blob, Commit
from dulwich.repo import Repo
from dulwich.server import DictBackend
from dulwich.web import WSGIRequestHandlerLogger, WSGIServerLogger, make_server, make_wsgi_chain

REGULAR = stat.S_IFREG | 0o644
EXECUTABLE = stat.S_IFREG | 0o755
SYMLINK = stat.S_IFLNK
GITLINK = 0o160000


def skill_md(name: str, description: str = "Does a thing. Use when asked.", *,
             extra: str = "", body: str = "# Steps\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def write_skill(folder: Path, name: str, files: Mapping[str, str] | None = None, **kw: str) -> Path:
    skill = folder / name
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(skill_md(name, **kw), encoding="utf-8")
    for rel, text in (files or {}).items():
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text(text, encoding="utf-8")
    return skill


def commit_files(repo: Repo, entries: Mapping[str, tuple[int, bytes]], *,
                 message: str = "skills") -> str:
    """Commit a tree of exactly ``entries`` (path -> (git mode, bytes or a gitlink's sha))
    on ``refs/heads/main``, built object by object (modes a checkout could not make too)."""
    blobs = []
    for path, (mode, data) in entries.items():
        if mode == GITLINK:
            blobs.append((path.encode(), data, mode))
            continue
        blob = Blob.from_string(data)
        repo.object_store.add_object(blob)
        blobs.append((path.encode(), blob.id, mode))
    commit = Commit()
    commit.tree = commit_tree(repo.object_store, blobs)
    head = repo.refs.as_dict().get(b"refs/heads/main")
    commit.parents = [head] if head else []
    commit.author = commit.committer = b"Test <test@example.org>"
    commit.author_time = commit.commit_time = int(time.time())
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = message.encode()
    repo.object_store.add_object(commit)
    repo.refs[b"refs/heads/main"] = commit.id
    repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    return commit.id.decode()


def skill_entries(name: str, files: Mapping[str, str] | None = None,
                  prefix: str = "", **kw: str) -> dict[str, tuple[int, bytes]]:
    out = {f"{prefix}{name}/SKILL.md": (REGULAR, skill_md(name, **kw).encode())}
    for rel, text in (files or {}).items():
        out[f"{prefix}{name}/{rel}"] = (REGULAR, text.encode())
    return out


@contextmanager
def git_server(repo: Repo) -> Iterator[str]:
    """Serve ``repo`` over git smart HTTP on 127.0.0.1; yields its URL."""
    server = make_server("127.0.0.1", 0, make_wsgi_chain(DictBackend({"/": repo})),
                         handler_class=WSGIRequestHandlerLogger, server_class=WSGIServerLogger)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
