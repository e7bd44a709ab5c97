"""The io_uring socket attack of issue #34 (1), as Python source a probe runs.

``uring_socket(domain, type_)`` makes a socket with ``IORING_OP_SOCKET`` (Linux >= 5.19), so
no ``socket()`` system call is ever made and a seccomp rule on ``socket()`` never sees it; the
caller then ``connect``s or ``sendto``s with ordinary system calls. Unconfined it reaches any
unix socket path it may open and any loopback port; in the sandbox ``io_uring_setup`` is
refused (seccomp), so it prints ``refused setup <errno>`` and exits.
"""

from __future__ import annotations

URING_SOCKET = r"""
import ctypes, mmap, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def uring_socket(domain, type_):
    params = ctypes.create_string_buffer(120)
    ring = libc.syscall(425, 4, params)  # io_uring_setup
    if ring < 0:
        print("refused setup", ctypes.get_errno())
        sys.exit(0)
    p = params.raw
    sq_entries, cq_entries = struct.unpack_from("II", p, 0)
    _, sq_tail, sq_mask, _, _, _, sq_array = struct.unpack_from("7I", p, 40)
    cq_head, _, cq_mask, _, _, cq_cqes = struct.unpack_from("6I", p, 80)
    sq = mmap.mmap(ring, sq_array + sq_entries * 4, offset=0)
    cq = mmap.mmap(ring, cq_cqes + cq_entries * 16, offset=0x8000000)
    sqes = mmap.mmap(ring, sq_entries * 64, offset=0x10000000)
    # IORING_OP_SOCKET (45): fd = domain, off = type, len = protocol
    sqe = struct.pack("BBHiQQIIQHHiQQ", 45, 0, 0, domain, type_, 0, 0, 0, 1, 0, 0, 0, 0, 0)
    tail = struct.unpack_from("I", sq, sq_tail)[0]
    index = tail & struct.unpack_from("I", sq, sq_mask)[0]
    sqes[index * 64:(index + 1) * 64] = sqe
    struct.pack_into("I", sq, sq_array + index * 4, index)
    struct.pack_into("I", sq, sq_tail, tail + 1)
    if libc.syscall(426, ring, 1, 1, 1, None, 0) < 0:  # io_uring_enter, GETEVENTS
        print("refused enter", ctypes.get_errno())
        sys.exit(0)
    head = struct.unpack_from("I", cq, cq_head)[0]
    _, fd, _ = struct.unpack_from("QiI", cq, cq_cqes + (head & struct.unpack_from("I", cq, cq_mask)[0]) * 16)
    if fd < 0:
        print("refused socket op", -fd)
        sys.exit(0)
    import socket
    return socket.socket(domain, type_, fileno=fd)
"""
