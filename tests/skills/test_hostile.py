"""Issue #16 acceptance 2, 000 §6.1 "上传暂存 → 校验路径／链接／大小": hostile sources — zip
slip, absolute paths, symlink and hardlink escapes, special files, a 1 GiB zip bomb, a git
repository whose hooks and scripts would write a canary, forbidden front-matter fields,
refused URLs. Each is refused with a precise error, nothing is stored, nothing is written
outside the staging folder (which is gone afterwards), and no canary appears."""

from __future__ import annotations

import io
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich.repo import Repo

from agentloom.skills import ImportLimits, SkillImportError, SourceSpec, import_skills, list_skills
from agentloom.skills._git import ALLOW_HTTP_LOOPBACK_ENV
from agentloom.store import Store, open_store

from .support import EXECUTABLE, commit_files, git_server, skill_entries, skill_md, write_skill

CANARY_SCRIPT = "#!/bin/sh\necho ran > {canary}\n"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()


def _refused(tmp_path: Path, store: Store, spec: SourceSpec, code: str, *words: str,
             limits: ImportLimits | None = None) -> str:
    """Import ``spec`` with staging below ``tmp_path/staging``; assert the refusal ``code``
    naming ``words``, that nothing was stored and that staging was emptied."""
    parent = tmp_path / "staging"
    parent.mkdir(exist_ok=True)
    with pytest.raises(SkillImportError) as caught:
        import_skills(spec, store, staging_parent=parent,
                      **({"limits": limits} if limits else {}))
    message = str(caught.value)
    assert caught.value.code == code, message
    for word in words:
        assert word in message, message
    assert list_skills(store) == [] and store.query("skill_versions") == []
    assert list(parent.iterdir()) == []
    return message


def _zip(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def _tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tf:  # type: ignore[call-overload]
        for m in members:
            if isinstance(m, tuple):
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tf.addfile(info, io.BytesIO(m[1]))
            else:
                tf.addfile(m)
    return path


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


SKILL = skill_md("pdf").encode()


def _nothing_named(root: Path, name: str) -> None:
    assert [p for p in root.rglob(name)] == []


def test_issue16_a2_zip_slip_is_refused(tmp_path: Path, store: Store) -> None:
    archive = _zip(tmp_path / "slip.zip", {"pdf/SKILL.md": SKILL, "pdf/../../evil.txt": b"pwned"})

    _refused(tmp_path, store, SourceSpec(path=archive), "SKILL_MEMBER_PATH", "pdf/../../evil.txt",
             "'..'")
    _nothing_named(tmp_path.parent, "evil.txt")


@pytest.mark.parametrize(("name", "words"), [
    ("/tmp/abs-evil.txt", ("'/tmp/abs-evil.txt'", "absolute")),
    ("C:/abs-evil.txt", ("'C:/abs-evil.txt'", "absolute")),
    ("pdf\\..\\evil.txt", ("evil.txt", "backslash"))])
def test_issue16_a2_absolute_and_backslash_member_paths_are_refused(
        tmp_path: Path, store: Store, name: str, words: tuple[str, ...]) -> None:
    archive = _zip(tmp_path / "abs.zip", {"pdf/SKILL.md": SKILL, name: b"pwned"})
    tar = _tar(tmp_path / "abs.tar", [("pdf/SKILL.md", SKILL), (name, b"pwned")])

    _refused(tmp_path, store, SourceSpec(path=archive), "SKILL_MEMBER_PATH", *words)
    _refused(tmp_path, store, SourceSpec(path=tar), "SKILL_MEMBER_PATH", *words)
    assert not Path("/tmp/abs-evil.txt").exists()


@pytest.mark.parametrize(("kind", "target", "words"), [
    (tarfile.SYMTYPE, "../../../../etc/passwd", ("symlink", "outside the archive")),
    (tarfile.SYMTYPE, "/etc/passwd", ("symlink", "outside the archive")),
    (tarfile.SYMTYPE, "../other/secret.txt", ("outside its skill folder",)),
    (tarfile.LNKTYPE, "../etc/passwd", ("hardlink", "outside the archive")),
    (tarfile.LNKTYPE, "other/secret.txt", ("outside its skill folder",)),
])
def test_issue16_a2_tar_symlink_and_hardlink_escapes_are_refused(
        tmp_path: Path, store: Store, kind: bytes, target: str, words: tuple[str, ...]) -> None:
    tar = _tar(tmp_path / "links.tar.gz", [
        ("pdf/SKILL.md", SKILL), ("other/SKILL.md", skill_md("other").encode()),
        ("other/secret.txt", b"the other skill's"), _link("pdf/escape", target, kind)],
        mode="w:gz")

    _refused(tmp_path, store, SourceSpec(path=tar), "SKILL_MEMBER_LINK", "pdf/escape", *words)


def test_issue16_a2_a_member_below_a_link_is_refused_never_written_through_it(
        tmp_path: Path, store: Store) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tar = _tar(tmp_path / "through.tar", [
        ("pdf/SKILL.md", SKILL), _link("pdf/dir", str(outside), tarfile.SYMTYPE)])
    _refused(tmp_path, store, SourceSpec(path=tar), "SKILL_MEMBER_LINK", "pdf/dir")
    tar = _tar(tmp_path / "through2.tar", [
        ("pdf/SKILL.md", SKILL), _link("pdf/dir", "scripts", tarfile.SYMTYPE),
        ("pdf/dir/evil.txt", b"pwned")])
    _refused(tmp_path, store, SourceSpec(path=tar), "SKILL_MEMBER_LINK", "pdf/dir/evil.txt",
             "not a folder")
    assert list(outside.iterdir()) == []


def test_issue16_a2_zip_symlink_escape_is_refused_and_an_inner_link_is_a_copy(
        tmp_path: Path, store: Store) -> None:
    bad = _zip(tmp_path / "bad.zip", {"pdf/SKILL.md": SKILL}, {"pdf/up": "../../../etc/passwd"})
    _refused(tmp_path, store, SourceSpec(path=bad), "SKILL_MEMBER_LINK", "pdf/up")

    good = _zip(tmp_path / "good.zip", {"pdf/SKILL.md": SKILL, "pdf/scripts/a.py": b"print(1)"},
                {"pdf/a.py": "scripts/a.py"})
    version = import_skills(SourceSpec(path=good), store).skills[0].version
    assert {f.path: f.size for f in version.files} == {"SKILL.md": len(SKILL), "a.py": 8,
                                                      "scripts/a.py": 8}


def test_issue16_a2_folder_symlinks_leaving_the_skill_and_special_files_are_refused(
        tmp_path: Path, store: Store) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "pdf")
    (tmp_path / "secret.txt").write_text("host secret", encoding="utf-8")
    os.symlink("../../secret.txt", skills / "pdf" / "leak.txt")
    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_MEMBER_LINK", "pdf/leak.txt")
    os.remove(skills / "pdf" / "leak.txt")
    os.symlink(str(tmp_path / "secret.txt"), skills / "pdf" / "leak.txt")
    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_MEMBER_LINK", "pdf/leak.txt",
             "absolute")
    os.remove(skills / "pdf" / "leak.txt")
    os.mkfifo(skills / "pdf" / "pipe")
    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_MEMBER_TYPE", "pdf/pipe", "FIFO")


def test_issue16_a2_tar_devices_and_fifos_are_refused(tmp_path: Path, store: Store) -> None:
    for kind in (tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE):
        info = tarfile.TarInfo("pdf/dev")
        info.type = kind
        tar = _tar(tmp_path / "dev.tar", [("pdf/SKILL.md", SKILL), info])
        _refused(tmp_path, store, SourceSpec(path=tar), "SKILL_MEMBER_TYPE", "pdf/dev")


def _zip_bomb(path: Path, gib: int = 1) -> Path:
    """A zip whose one member inflates to ``gib`` GiB of zeros, written in ~1 MB: one deflate
    block of 1 MiB of zeros repeated (valid deflate, honest sizes and CRC)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    raw = block * (1024 * gib) + packer.flush(zlib.Z_FINISH)
    crc = 0
    zeros = bytes(1 << 20)
    for _ in range(1024 * gib):
        crc = zlib.crc32(zeros, crc)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("bomb/SKILL.md", skill_md("bomb"))
        zf.writestr(zipfile.ZipInfo("bomb/zeros.bin"), raw)  # stored, patched to deflated
    data = bytearray(path.read_bytes())
    local = data.index(b"PK\x03\x04", data.index(b"bomb/zeros.bin") - 60)
    central = data.rindex(b"PK\x01\x02")
    for method in (local + 8, central + 10):  # method, then 2+2 bytes of time, then crc
        struct.pack_into("<H", data, method, zipfile.ZIP_DEFLATED)
        struct.pack_into("<III", data, method + 6, crc, len(raw), gib << 30)
    path.write_bytes(bytes(data))
    return path


def test_issue16_a2_a_1_gib_zip_bomb_is_refused_while_extracting_never_written_in_full(
        tmp_path: Path, store: Store) -> None:
    bomb = _zip_bomb(tmp_path / "bomb.zip")
    info = zipfile.ZipFile(bomb).getinfo("bomb/zeros.bin")
    assert info.file_size == 1 << 30 and bomb.stat().st_size < 2 << 20  # a real 1 GiB bomb

    _refused(tmp_path, store, SourceSpec(path=bomb), "SKILL_SIZE_LIMIT", "bomb/zeros.bin",
             "larger than 16777216 bytes; refused while reading it")  # the per-file limit first

    roomy = ImportLimits(max_file_bytes=2 << 30, max_total_bytes=2 << 30)  # the ratio alone
    message = _refused(tmp_path, store, SourceSpec(path=bomb), "SKILL_RATIO_LIMIT",
                       "bomb/zeros.bin", "expands more than 50 times", limits=roomy)
    out = int(message.split("refused at ")[1].split(" bytes")[0])
    assert out <= 50 * bomb.stat().st_size + (64 << 10)  # one read past the ratio, not 1 GiB


def test_issue16_a2_sizes_are_counted_not_declared(tmp_path: Path, store: Store) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "pdf", {"big.bin": "x" * 5000})
    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_SIZE_LIMIT", "pdf/big.bin",
             limits=ImportLimits(max_file_bytes=4096))
    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_SIZE_LIMIT", "more than 1 members",
             limits=ImportLimits(max_files=1))


@pytest.mark.parametrize(("field", "value"), [
    ("model", "claude-opus-4"), ("context", "fork"), ("agent", "Explore"), ("effort", "high")])
def test_issue16_a2_forbidden_front_matter_fields_are_refused_naming_the_field(
        tmp_path: Path, store: Store, field: str, value: str) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "fine")
    write_skill(skills, "pdf", extra=f"{field}: {value}\n")

    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_FIELD_REFUSED",
             f"pdf/SKILL.md: field {field!r} is refused")


def test_issue16_a2_unknown_fields_are_an_error_or_a_warning_with_allow_unknown(
        tmp_path: Path, store: Store) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "pdf", extra="colour: blue\n")
    _refused(tmp_path, store, SourceSpec(path=skills), "SKILL_FIELD_UNKNOWN", "'colour'",
             "--allow-unknown")

    version = import_skills(SourceSpec(path=skills), store, allow_unknown=True).skills[0].version
    assert version.warnings == ("unknown field 'colour' ignored",)
    assert "colour" not in version.metadata


@pytest.mark.usefixtures("loopback_http")
def test_issue16_a2_a_git_repo_whose_hooks_and_scripts_write_a_canary_never_runs_them(
        tmp_path: Path, store: Store) -> None:
    canary = tmp_path / "canary"
    script = CANARY_SCRIPT.format(canary=canary).encode()
    origin = tmp_path / "origin"
    repo = Repo.init(str(origin), mkdir=True)
    hooks = origin / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for hook in ("post-checkout", "post-merge", "post-rewrite", "reference-transaction",
                 "pre-receive", "post-upload-pack"):
        (hooks / hook).write_bytes(script)
        (hooks / hook).chmod(0o755)
    pinned = commit_files(repo, {
        **skill_entries("pdf"),
        "pdf/scripts/install.sh": (EXECUTABLE, script),
        "pdf/setup.py": (EXECUTABLE, b"import pathlib; pathlib.Path(%r).write_text('ran')\n"
                         % str(canary)),
        ".githooks/post-checkout": (EXECUTABLE, script),
        ".gitattributes": (0o100644, b"* filter=canary\n"),
        ".lfsconfig": (0o100644, b"[lfs]\n\turl = https://example.invalid\n"),
    })

    with git_server(repo) as url:
        report = import_skills(SourceSpec(git=url, commit=pinned), store)

    assert [s.version.name for s in report.skills] == ["pdf"]
    assert {f.path for f in report.skills[0].version.files} == {
        "SKILL.md", "scripts/install.sh", "setup.py"}
    assert not canary.exists()


@pytest.mark.parametrize(("url", "words"), [
    ("file:///tmp/repo", "'file://' is not allowed"),
    ("ext::sh -c touch% /tmp/x", "transport helpers"),
    ("git://example.org/skills.git", "'git://' is not allowed"),
    ("http://example.org/skills.git", "plain http://"),
    ("ssh://-oProxyCommand=touch%20x/skills", "not a host name"),
])
def test_issue16_a2_git_urls_outside_https_and_ssh_are_refused(
        tmp_path: Path, store: Store, url: str, words: str) -> None:
    _refused(tmp_path, store, SourceSpec(git=url, commit="a" * 40), "SKILL_SOURCE_INVALID", words)


def test_issue16_a2_plain_http_to_loopback_needs_the_explicit_switch(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_HTTP_LOOPBACK_ENV, raising=False)
    _refused(tmp_path, store, SourceSpec(git="http://127.0.0.1:9/x.git", commit="a" * 40),
             "SKILL_SOURCE_INVALID", ALLOW_HTTP_LOOPBACK_ENV)
    monkeypatch.setenv(ALLOW_HTTP_LOOPBACK_ENV, "1")
    _refused(tmp_path, store, SourceSpec(git="http://10.0.0.1/x.git", commit="a" * 40),
             "SKILL_SOURCE_INVALID", "loopback host only")


def test_issue16_a2_a_tar_gz_bomb_in_a_pax_header_is_refused_by_the_ratio_while_reading(
        tmp_path: Path, store: Store) -> None:
    """tarfile reads a PAX header whole on its declared size: the decompressed stream itself
    is bounded, so a 200 MiB header of a 200 KB .tar.gz is refused after ~10 MiB."""
    size = 200 << 20
    header = tarfile.TarInfo("pax")
    header.type = tarfile.XHDTYPE
    header.size = size
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    raw = (packer.compress(header.tobuf(tarfile.USTAR_FORMAT)) + packer.flush(zlib.Z_FULL_FLUSH)
           + block * (size >> 20) + packer.flush(zlib.Z_FINISH))
    bomb = tmp_path / "pax.tar.gz"
    bomb.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + raw
                     + struct.pack("<II", 0, (size + 512) & 0xFFFFFFFF))

    message = _refused(tmp_path, store, SourceSpec(path=bomb), "SKILL_RATIO_LIMIT",
                       "'pax.tar.gz'", "expands more than 50 times")
    out = int(message.split("refused at ")[1].split(" bytes")[0])
    assert out <= 50 * bomb.stat().st_size + (2 << 20)
