"""003 F15: output is drained while the command runs, into bounded head + tail buffers,
with the full bytes in a spool file and a SHA-256 over everything."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import tracemalloc
from pathlib import Path

import pytest
from tests.sandbox.conftest import require_bwrap, run_command, scope_for

from agentloom.sandbox import BubblewrapGateway, CapturedStream, EnvironmentPolicy, ExecCommand, StreamCapture

MIB = 1 << 20


def capture_bytes(tmp_path: Path, data_cmd: list[str], **kw: int) -> CapturedStream:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    proc = subprocess.Popen(data_cmd, stdout=write_end, stdin=subprocess.DEVNULL)
    os.close(write_end)
    capture = StreamCapture(
        read_end,
        spool_path=tmp_path / "spool",
        max_preview_bytes=kw.get("preview", 8192),
        max_spool_bytes=kw.get("spool", 1 << 40),
    )
    capture.run()
    proc.wait()
    return capture.result()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, str]:
    """64 MiB of non-repeating bytes and their SHA-256 (the reference)."""
    path = tmp_path_factory.mktemp("big") / "big.bin"
    data = hashlib.shake_256(b"agentloom-f15").digest(64 * MIB)
    path.write_bytes(data)
    return path, data[:8192] + data[-8192:], hashlib.sha256(data).hexdigest()


def test_f15_output_memory_is_bounded(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        result = capture_bytes(tmp_path, ["head", "-c", str(64 * MIB), "/dev/zero"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.total_bytes == 64 * MIB
    assert peak < 8 * MIB  # read buffers (<= 4 x 1 MiB) and the preview, never the output


async def test_f15_64_mib_command_gives_bounded_preview_exact_total_and_spool_hash(
    tmp_path: Path, work_dir: Path, big_file: tuple[Path, bytes, str]
) -> None:
    require_bwrap()
    source, ends, reference = big_file
    try:
        os.link(source, work_dir / "big.bin")
    except OSError:  # another filesystem
        shutil.copyfile(source, work_dir / "big.bin")
    gateway = BubblewrapGateway(EnvironmentPolicy(), output_dir=tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    tracemalloc.start()
    try:
        result = await run_command(gateway, handle, ExecCommand(argv=("cat", "/work/big.bin")))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = result.stdout
    assert result.exit_code == 0
    assert out.total_bytes == 64 * MIB and out.truncated
    assert len(out.head) + len(out.tail) <= EnvironmentPolicy().max_preview_bytes
    assert out.head == ends[: len(out.head)] and out.tail == ends[len(ends) - len(out.tail) :]
    assert out.sha256 == reference
    assert out.spool_path is not None and out.spool_bytes == 64 * MIB
    assert sha256_file(out.spool_path) == reference
    assert peak < 16 * MIB


def test_small_output_is_whole_in_the_preview_without_a_spool(tmp_path: Path) -> None:
    result = capture_bytes(tmp_path, ["printf", "hello"], preview=64)
    assert result.head + result.tail == b"hello"
    assert not result.truncated and result.spool_path is None
    assert result.total_bytes == 5 and result.sha256 == hashlib.sha256(b"hello").hexdigest()
    assert not (tmp_path / "spool").exists()


@pytest.mark.parametrize("size", [0, 1, 63, 64])
def test_output_up_to_the_preview_size_is_not_truncated(tmp_path: Path, size: int) -> None:
    result = capture_bytes(tmp_path, ["head", "-c", str(size), "/dev/urandom"], preview=64)
    assert not result.truncated and result.spool_path is None
    assert len(result.head) + len(result.tail) == size == result.total_bytes


@pytest.mark.parametrize("size", [65, 4096, 3 * MIB + 7])
def test_output_past_the_preview_is_spooled_whole(tmp_path: Path, size: int) -> None:
    data_file = tmp_path / "data"
    data = os.urandom(size)
    data_file.write_bytes(data)
    result = capture_bytes(tmp_path, ["cat", str(data_file)], preview=64)
    assert result.truncated and result.total_bytes == size
    assert result.head == data[:32] and result.tail == data[-32:]
    assert result.spool_path is not None and result.spool_path.read_bytes() == data
    assert result.sha256 == hashlib.sha256(data).hexdigest()


def test_the_spool_stops_at_its_cap_while_counting_and_hashing_go_on(tmp_path: Path) -> None:
    result = capture_bytes(tmp_path, ["head", "-c", str(5 * MIB), "/dev/zero"], preview=64, spool=MIB)
    assert result.total_bytes == 5 * MIB and result.spool_bytes == MIB
    assert result.spool_path is not None and result.spool_path.stat().st_size == MIB
    assert result.sha256 == hashlib.sha256(bytes(5 * MIB)).hexdigest()


def test_stop_ends_a_capture_whose_writer_never_closes(tmp_path: Path) -> None:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    os.write(write_end, b"partial")
    capture = StreamCapture(read_end, spool_path=tmp_path / "s", max_preview_bytes=64, max_spool_bytes=MIB)
    thread = threading.Thread(target=capture.run)
    thread.start()
    capture.stop()
    assert capture.wait(10)
    thread.join()
    os.close(write_end)
    assert capture.result().total_bytes in (0, 7)


async def test_stdout_and_stderr_are_captured_apart_without_deadlock(tmp_path: Path, work_dir: Path) -> None:
    require_bwrap()
    gateway = BubblewrapGateway(EnvironmentPolicy(allow_shell=True), output_dir=tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    script = "head -c 3000000 /dev/zero >&2; head -c 2000000 /dev/zero; echo done >&2"
    result = await run_command(gateway, handle, ExecCommand(shell_script=script))
    assert result.stdout.total_bytes == 2_000_000
    assert result.stderr.total_bytes == 3_000_005 and result.stderr.tail.endswith(b"done\n")
