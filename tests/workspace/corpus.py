"""The path-escape corpus: ≥ 1,000 payloads generated in code (reliability note §3, §7 G1).

Families:

* traversal spellings × separators × depths, aimed at the sentinel beside the root
  (``..``, ``%2e%2e``, overlong UTF-8 ``%c0%ae``, ``%u`` forms, full-width and leader dots,
  ``....//``…) — each raw, URL-decoded once and twice. To the kernel a percent or Unicode
  form is just an odd name; it is in the corpus because a decoding layer could turn it into
  ``..`` and because the unconfined control must show which ones really escape;
* absolute paths: the sentinel's host path, ``/work/../..``, ``//``, ``/proc/self/root``;
* NUL bytes, names over 255 bytes, paths over 4,096 bytes, lone surrogates;
* the planted traps of ``layout.py``: absolute and relative symlinks out, chains, loops,
  ``/proc/self/{root,cwd,fd}`` links, dangling links pointing out, hardlinks to outside files,
  each reached with suffixes (``/``, ``/.``, ``/canary.txt``, ``/sub/deep.txt``, ``/..``…).
"""

from __future__ import annotations

from urllib.parse import unquote

DOTS = (
    "..", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%252e%252e", "%c0%ae%c0%ae", "%e0%80%ae%e0%80%ae",
    "%uff0e%uff0e", "\uff0e\uff0e", "\u2024\u2024", "\u2025", "...", "....", ".. ", " ..", "..%00", ".%00.",
    "..;", "%%32%65%%32%65",
)  # fmt: skip
SEPS = (
    "/", "\\", "%2f", "%2F", "%5c", "%252f", "%c0%af", "%c1%9c", "//", "/./", "%u2215", "\u2215", "\uff0f",
)  # fmt: skip
TARGETS = ("outside/canary.txt", "outside/sub/deep.txt", "outside/new-file.txt", "outside")
LINKS = (
    "out_abs", "out_rel", "deep_rel", "chain1", "chain2", "chain3", "loop_a", "dangling_dir", "proc_fd",
    "inner/sub/up_abs", "inner/sub/up_rel",
)  # fmt: skip
FILE_LINKS = (
    "out_file_abs", "out_file_rel", "chain_file", "dangling_rel", "dangling_abs", "hard_canary",
    "hard_sentinel",
)  # fmt: skip
SUFFIXES = (
    "", "/", "/.", "/canary.txt", "/sentinel.txt", "/new-file.txt", "/sub", "/sub/deep.txt", "/..",
    "/../outside/canary.txt", "/./canary.txt", "//canary.txt",
)  # fmt: skip


def _prefix(depth: int) -> str:
    return "".join(f"d{i}/" for i in range(1, depth))


def traversal_payloads() -> list[str]:
    out: list[str] = []
    for dots in DOTS:
        for sep in SEPS:
            for depth, target in ((1, TARGETS[0]), (1, TARGETS[2]), (3, TARGETS[1]), (8, TARGETS[3])):
                raw = _prefix(depth) + (dots + sep) * depth + target.replace("/", sep)
                out.extend((raw, unquote(raw), unquote(unquote(raw))))
    return out


def absolute_payloads(base: str, root_depth: int) -> list[str]:
    outside = base + "/outside"
    rel_outside = outside.lstrip("/")
    out = [
        outside, outside + "/", outside + "/canary.txt", outside + "/sub/deep.txt", outside + "/new-file.txt",
        "/" + outside + "/canary.txt", outside + "/../outside/canary.txt", "/etc/passwd", "/etc/", "/",
        "//", "/proc/self/root" + outside + "/canary.txt", "/proc/self/cwd", "/proc/self/root",
        "/work/../outside/canary.txt", "/work/../outside", "/work/../outside/new-file.txt",
        "/work/./../outside/canary.txt", "/work//../outside/canary.txt", "/work/d1/../../outside/canary.txt",
        "/workspace/../outside/canary.txt", "/work/..", "/work/../..", "/work/../../..",
        "/work/../" + rel_outside, "~/../outside/canary.txt", "file://" + outside + "/canary.txt",
        "C:\\outside\\canary.txt", "\\\\?\\C:\\outside", "..\\outside\\canary.txt",
    ]  # fmt: skip
    for k in range(1, 6):
        out.append("/work/" + "../" * k + "outside/canary.txt")
        out.append("/work/" + "../" * (root_depth + k) + rel_outside + "/canary.txt")
    for k in range(root_depth, root_depth + 6):
        out.append("../" * k + rel_outside + "/canary.txt")
        out.append("../" * k + rel_outside)
        out.append("inner/" + "../" * (k + 1) + rel_outside + "/sub/deep.txt")
    out.append("proc_root" + outside + "/canary.txt")
    out.append("proc_root/" + rel_outside + "/new-file.txt")
    out.append("proc_root/proc/self/root" + outside + "/canary.txt")
    out.append("proc_cwd/../outside/canary.txt")
    return out


def structural_payloads() -> list[str]:
    out = [
        "inner/file.txt\x00../../outside/canary.txt", "../outside/canary.txt\x00", "\x00",
        "inner\x00/../../outside", "\x00/../outside/canary.txt", "%00../outside/canary.txt", "a" * 256,
        "a" * 255 + "/../../outside/canary.txt", "a/" * 2100, "../" * 1400 + "outside/canary.txt",
        "d1/" + "x" * 300, "x" * 4097, "\udcff../outside", "..\udcff/outside/canary.txt", "\ud800/../outside",
        "inner/..", "inner/../..", "inner/../../outside", "d1/d2/../../..",
        "d1/d2/../../../outside/canary.txt", ".", "./..", "./../outside/canary.txt", "..", "../",
        "../.", "../..", "inner/./../../outside/canary.txt", "inner//..//..//outside//canary.txt",
        "\u2024\u2024/outside/canary.txt", "\uff0e\uff0e\uff0foutside\uff0fcanary.txt", "..\u2215outside",
        "..\u200b/outside/canary.txt", "\u202e../outside/canary.txt", "....//....//outside/canary.txt",
        "..././..././outside/canary.txt", ".locks", ".locks/x", "inner/../.locks/x", ".agentloom-tmp-x",
        "loop_a/canary.txt", "chain1/../../outside/canary.txt", "inner_link", "inner_link/..", "",
    ]  # fmt: skip
    for link in LINKS:
        out.extend(link + suffix for suffix in SUFFIXES)
    for link in FILE_LINKS:
        out.extend((link, link + "/", link + "/.", link + "/x", "inner/../" + link))
    for k in range(1, 9):
        out.append(_prefix(k) + "../" * k + "outside/canary.txt")
        out.append(_prefix(k) + "../" * (k + 1) + "outside/canary.txt")
        out.append(_prefix(k) + "../" * k + "canary.txt")
    return out


def payloads(base: str, root_depth: int) -> list[str]:
    seen: dict[str, None] = {}
    for p in traversal_payloads() + absolute_payloads(base, root_depth) + structural_payloads():
        seen.setdefault(p, None)
    return list(seen)
