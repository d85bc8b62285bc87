"""A private network namespace: only a loopback interface, invisible from the machine's network.

TensorFlow's gRPC server listens on every interface whatever host TF_CONFIG names, and
has no authentication. A process that moves itself into a new network namespace before
starting its workers gives them a network with nothing in it but ``lo``: they reach each
other on 127.0.0.1 and nothing outside the namespace can reach them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def _unshare(flags: int) -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        unshare = libc.unshare
    except (OSError, AttributeError) as error:  # not Linux: no namespaces at all
        raise OSError(errno.ENOSYS, "network namespaces need Linux") from error
    if unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def enter_private_network(*, user_namespace: bool = False) -> str:
    """Move this (single-threaded) process into a new network namespace with ``lo`` up.

    Tries a plain network namespace (needs CAP_SYS_ADMIN, e.g. root in a container),
    then a user namespace plus a network namespace (works for ordinary users where
    the kernel allows unprivileged user namespaces). Returns how it was made.

    Raises:
        OSError: If the kernel refuses both.
    """
    uid, gid = os.getuid(), os.getgid()
    try:
        if user_namespace:  # go straight to what an ordinary user gets
            raise OSError(1, "skipped: user namespace asked for")
        _unshare(CLONE_NEWNET)
        how = "network namespace"
    except OSError as first:
        try:
            _unshare(CLONE_NEWUSER | CLONE_NEWNET)
        except OSError as second:
            raise OSError(
                second.errno,
                f"cannot create a network namespace ({first.strerror}) nor a user+network "
                f"namespace ({second.strerror})",
            ) from second
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        how = "user and network namespace"
    _bring_up_loopback()
    return how


def _bring_up_loopback() -> None:
    import fcntl  # Linux only, like the namespace itself

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))
