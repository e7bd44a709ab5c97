"""Bounded output capture (003 F15): drain a pipe while the child is still writing.

``StreamCapture`` reads a pipe in large chunks into one reused buffer, keeps only a
bounded head and tail in memory, hashes every byte (SHA-256) and, once the output is
longer than the preview, streams all of it to a spool file. Memory stays flat whatever
the child writes; the child is never blocked by a full pipe for long, and never
blocked at all once the spool cap is reached (the bytes are still counted and hashed).

It does not own the pipe's writer, process lifetime or deadlines: the execution
supervisor decides when to ``stop`` a capture whose writers may never close.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import queue
import select
import threading
from pathlib import Path

from agentloom.sandbox.ports import CapturedStream

log = logging.getLogger("agentloom.sandbox")

#: Read size. A pipe holds 64 KiB by default; we enlarge ours to this so one read
#: moves up to 1 MiB (fewer syscalls, fewer GIL round trips).
CHUNK_BYTES = 1 << 20
#: Once a read returns this much, hashing moves to a second thread: SHA-256 is the
#: slowest step (~1.6 GiB/s with SHA-NI) and overlaps the spool write there.
OFFLOAD_BYTES = 256 << 10
#: Read buffers per stream while hashing is offloaded (memory: this x CHUNK_BYTES).
MAX_BUFFERS = 4


@functools.cache
def _pipe_max_size() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return 0


def enlarge_pipe(fd: int, size: int = CHUNK_BYTES) -> None:
    """Best effort: grow a pipe's kernel buffer (``F_SETPIPE_SZ``) up to ``size``."""
    size = min(size, _pipe_max_size())
    if size <= 0:
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (OSError, AttributeError):
        pass


class StreamCapture:
    """Drain one pipe into head + tail buffers, a SHA-256 and a lazily created spool.

    Call ``run`` in a dedicated thread; it returns at end of file or after ``stop``.
    ``result`` is valid once ``run`` has returned. The capture owns ``fd`` and
    closes it.
    """

    def __init__(
        self,
        fd: int,
        *,
        spool_path: Path,
        max_preview_bytes: int,
        max_spool_bytes: int,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> None:
        self._fd = fd
        self._spool_path = spool_path
        self._head_cap = max_preview_bytes // 2
        self._tail_cap = max_preview_bytes - self._head_cap
        self._max_spool = max_spool_bytes
        self._chunk = chunk_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self._hash = hashlib.sha256()
        self._total = 0
        self._spool_fd: int | None = None
        self._spool_bytes = 0
        self._spool_failed = False
        self._spool_created = False
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._stopping = False
        self._finished = threading.Event()
        self._buffers = 0
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[bytearray, int] | None] = queue.SimpleQueue()
        self._hasher: threading.Thread | None = None

    @property
    def total_bytes(self) -> int:
        """Bytes read so far (exact once ``run`` has returned)."""
        return self._total

    def stop(self) -> None:
        """Ask ``run`` to return once the pipe has no more buffered data."""
        self._stopping = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def wait(self, timeout: float | None) -> bool:
        """Block until ``run`` has returned; false if ``timeout`` passed first."""
        return self._finished.wait(timeout)

    def run(self) -> None:
        buf = self._take_buffer()
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            os.set_blocking(self._fd, False)
            while True:
                try:
                    n = os.readv(self._fd, [buf])
                except BlockingIOError:
                    if self._stopping:
                        break
                    poller.poll()
                    continue
                if n == 0:
                    break
                chunk = memoryview(buf)[:n]  # zero-copy
                self._consume(chunk)
                if self._hasher is None and n < OFFLOAD_BYTES:
                    self._hash.update(chunk)
                    if self._stopping:
                        break
                    continue
                if self._hasher is None:
                    self._hasher = threading.Thread(target=self._hash_loop, name="sandbox-hash", daemon=True)
                    self._hasher.start()
                self._full.put((buf, n))
                buf = self._take_buffer()
                if self._stopping:  # a writer outlived its execution: do not follow it forever
                    break
        except OSError as exc:  # a read error ends the capture; what was read is kept
            log.warning("sandbox output capture stopped: %s", exc)
        finally:
            if self._hasher is not None:
                self._full.put(None)
                self._hasher.join()
            self._close()
            self._finished.set()

    def _take_buffer(self) -> bytearray:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            if self._buffers < MAX_BUFFERS:
                self._buffers += 1
                return bytearray(self._chunk)
        return self._free.get()  # the hasher is behind: back-pressure, bounded memory

    def _hash_loop(self) -> None:
        while (item := self._full.get()) is not None:
            buf, n = item
            self._hash.update(memoryview(buf)[:n])
            self._free.put(buf)

    def result(self) -> CapturedStream:
        truncated = self._total > len(self._head) + len(self._tail)
        return CapturedStream(
            head=bytes(self._head),
            tail=bytes(self._tail),
            total_bytes=self._total,
            truncated=truncated,
            spool_path=self._spool_path if self._spool_created else None,
            sha256=self._hash.hexdigest(),
            spool_bytes=self._spool_bytes,
        )

    def _consume(self, chunk: memoryview) -> None:
        n = len(chunk)
        if (
            self._spool_fd is None
            and not self._spool_failed
            and self._max_spool > 0
            and self._total + n > self._head_cap + self._tail_cap
        ):
            # First overflow: until now head + tail held everything, so they seed the spool.
            self._open_spool()
        if self._spool_fd is not None:
            self._write_spool(chunk)
        self._total += n
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if len(chunk) >= self._tail_cap:
            self._tail[:] = chunk[len(chunk) - self._tail_cap :]
        elif chunk:
            self._tail += chunk
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]

    def _open_spool(self) -> None:
        try:
            self._spool_fd = os.open(
                self._spool_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            self._spool_failed = True
            log.warning("sandbox output spool %s could not be created: %s", self._spool_path, exc)
            return
        self._spool_created = True
        self._write_spool(memoryview(bytes(self._head)))
        self._write_spool(memoryview(bytes(self._tail)))

    def _write_spool(self, data: memoryview) -> None:
        assert self._spool_fd is not None
        room = self._max_spool - self._spool_bytes
        if room <= 0:
            return
        if len(data) > room:
            data = data[:room]
        try:
            while data:
                written = os.write(self._spool_fd, data)
                self._spool_bytes += written
                data = data[written:]
        except OSError as exc:  # disk full: keep draining, stop spooling
            log.warning(
                "sandbox output spool %s stopped at %d bytes: %s", self._spool_path, self._spool_bytes, exc
            )
            self._max_spool = self._spool_bytes

    def _close(self) -> None:
        for fd in (self._fd, self._wake_r, self._wake_w, self._spool_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._spool_fd = None
