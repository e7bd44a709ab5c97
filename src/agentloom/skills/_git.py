"""Staging one pinned commit of a git repository, fetched with dulwich, never checked out.

::

    URL policy ─► fetch the pack (bounded bytes) into a private bare repo ─► the commit's tree
    (or ``subdir``) written blob by blob through ``Staging``

Only ``https://`` and ``ssh://`` (or ``user@host:path``) URLs are accepted: ``file://``,
local paths, ``git://`` and ``ext::`` / other transport helpers are refused, and so is a host
that starts with ``-`` (an ssh option). Plain ``http://`` is accepted only for a loopback
host and only when ``AGENTLOOM_SKILLS_ALLOW_HTTP_LOOPBACK=1`` (tests, local development).

Nothing of the repository runs: there is no checkout (so no checkout hook), no git config
of the user is read (no ``insteadOf`` rewrite), submodules are not fetched — a submodule
entry in the tree is skipped and reported — and no install script is looked at.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentloom.skills._staging import Staging, link_target, member_path
from agentloom.skills.errors import (
    COMMIT_INVALID,
    MEMBER_LINK,
    MEMBER_TYPE,
    SIZE_LIMIT,
    SOURCE_INVALID,
    SOURCE_UNREACHABLE,
    SkillImportError,
)

__all__ = ["ALLOW_HTTP_LOOPBACK_ENV", "check_git_url", "is_git_url", "stage_git"]

ALLOW_HTTP_LOOPBACK_ENV = "AGENTLOOM_SKILLS_ALLOW_HTTP_LOOPBACK"
COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SCP = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9][A-Za-z0-9.-]*:(?!/)[^\0]+$")
_GITLINK = 0o160000
_PACK_FACTOR = 4  # the pack may hold history: bytes fetched ≤ this × max_total_bytes


def is_git_url(source: str) -> bool:
    """Whether ``source`` is meant as a git URL (checked by ``check_git_url``)."""
    return "://" in source or source.startswith("ext::") or bool(_SCP.match(source))


def check_git_url(url: str) -> None:
    """Refuse a URL outside the policy of this module's docstring.

    Raises:
        SkillImportError: ``SKILL_SOURCE_INVALID`` naming what is not allowed.
    """
    if "::" in url.split("/", 1)[0] and not url.startswith(("https://", "ssh://", "http://")):
        raise SkillImportError(SOURCE_INVALID, f"git transport helpers ({url.split('::')[0]}::) "
                               "are not allowed; use an https:// or ssh:// URL")
    if _SCP.match(url):
        host = url.split("@", 1)[1].split(":", 1)[0]
        _check_host(host)
        return
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if scheme == "https" or scheme == "ssh":
        _check_host(host)
        return
    if scheme == "http":
        if os.environ.get(ALLOW_HTTP_LOOPBACK_ENV) == "1" and _loopback(host):
            return
        raise SkillImportError(SOURCE_INVALID, "plain http:// git URLs are refused (use "
                               f"https://); {ALLOW_HTTP_LOOPBACK_ENV}=1 allows them for a "
                               "loopback host only")
    raise SkillImportError(SOURCE_INVALID, f"git URL scheme {scheme + '://' if scheme else url!r} "
                           "is not allowed; only https:// and ssh:// (file://, local paths, "
                           "git:// and transport helpers are refused)")


def _check_host(host: str) -> None:
    if not host or host.startswith("-"):
        raise SkillImportError(SOURCE_INVALID, f"git URL host {host!r} is not a host name")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stage_git(url: str, commit: str, subdir: str | None, staged: Staging) -> None:
    """Fetch ``commit`` of ``url`` and stage its tree (below ``subdir`` when given).

    Raises:
        SkillImportError: a refused URL, a commit that is not 40 hex or not in the
            repository, an unreachable server, a too large fetch, or a refused member.
    """
    check_git_url(url)
    if not COMMIT.match(commit):
        raise SkillImportError(COMMIT_INVALID, f"commit {commit!r} must be a full 40-hex commit "
                               "id (a branch, tag or short id is not a pin)")
    from dulwich.errors import GitProtocolError, HangupException
    from dulwich.objects import Commit, Tree
    from dulwich.repo import Repo

    bare = Path(tempfile.mkdtemp(prefix="agentloom-skill-git-", dir=staged.root.parent))
    try:
        repo = Repo.init_bare(str(bare))
        try:
            _fetch(repo, url, commit, staged)
        except (GitProtocolError, HangupException, OSError) as exc:
            raise SkillImportError(SOURCE_UNREACHABLE, f"cannot fetch {url}: {exc}") from None
        want: Any = commit.encode()
        store: Any = repo.object_store
        if want not in store:
            raise SkillImportError(COMMIT_INVALID, f"commit {commit} is not reachable from any "
                                   f"branch or tag of {url}")
        obj = store[want]
        if not isinstance(obj, Commit):
            raise SkillImportError(COMMIT_INVALID, f"{commit} is not a commit")
        tree = store[obj.tree]
        if subdir:
            clean = member_path(subdir, staged.limits)
            try:
                _mode, sha = tree.lookup_path(store.__getitem__, clean.encode())
            except KeyError:
                raise SkillImportError(SOURCE_INVALID, f"subdir {subdir!r} does not exist in "
                                       f"commit {commit}") from None
            tree = store[sha]
            if not isinstance(tree, Tree):
                raise SkillImportError(SOURCE_INVALID, f"subdir {subdir!r} is not a folder")
        assert isinstance(tree, Tree)
        _stage_tree(store, tree, "", staged)
        repo.close()
    finally:
        shutil.rmtree(bare, ignore_errors=True)


def _fetch(repo: Any, url: str, commit: str, staged: Staging) -> None:
    from dulwich.client import get_transport_and_path, get_transport_and_path_from_url

    if _SCP.match(url):
        client, path = get_transport_and_path(url, config=None, quiet=True)
    else:
        client, path = get_transport_and_path_from_url(url, config=None,
                                                       quiet=True)
    want = commit.encode()

    def determine_wants(refs: Mapping[Any, Any], depth: int | None = None) -> list[Any]:
        tips = {sha for name, sha in refs.items()
                if not name.endswith(b"^{}") and sha != b"0" * 40}
        return [want] if want in tips or want in refs.values() else sorted(tips)

    limit = _PACK_FACTOR * staged.limits.max_total_bytes
    received = 0
    pack, commit_pack, abort = repo.object_store.add_pack()

    def write(data: bytes) -> int:
        nonlocal received
        received += len(data)
        if received > limit:
            raise SkillImportError(SIZE_LIMIT, f"the repository sends more than {limit} bytes; "
                                   "refused while fetching")
        return int(pack.write(data) or len(data))

    try:
        client.fetch_pack(path, determine_wants, repo.get_graph_walker(), write)
    except BaseException:
        abort()
        raise
    commit_pack()


def _stage_tree(objects: Any, tree: Any, prefix: str, staged: Staging) -> None:
    from dulwich.objects import Blob, Tree

    for entry in tree.iteritems(name_order=True):
        try:
            name = entry.path.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillImportError(MEMBER_TYPE, f"a member of {prefix or 'the tree root'!r} has "
                                   "a name that is not UTF-8; refused") from None
        rel = member_path(prefix + name, staged.limits)
        mode = entry.mode
        if mode == _GITLINK:
            staged.skipped.append(f"{rel}: submodule at {entry.sha.decode()} not imported "
                                  "(import its repository as a source of its own)")
            continue
        obj = objects[entry.sha]
        if stat.S_ISDIR(mode) and isinstance(obj, Tree):
            staged.add_folder(rel)
            _stage_tree(objects, obj, rel + "/", staged)
        elif stat.S_ISLNK(mode) and isinstance(obj, Blob):
            target = link_target(rel, obj.data.decode("utf-8", "replace"), relative_to_link=True)
            if target is None:
                raise SkillImportError(MEMBER_LINK, f"symlink {rel!r} points outside the "
                                       "repository (or is absolute); refused")
            staged.add_link(rel, target)
        elif stat.S_ISREG(mode) and isinstance(obj, Blob):
            staged.add_file(rel, obj.chunked, executable=bool(mode & stat.S_IXUSR))
        else:
            raise SkillImportError(MEMBER_TYPE, f"member {rel!r} has git mode {mode:o}; refused")
