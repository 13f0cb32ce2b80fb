"""Loopback ports for the servers the tests start, and proof that a port answers for *our*
process.

Several pytest workers pick free ports at once: a port free when it was picked may be taken by
another worker's server before ours binds it. Then our server exits ("port already in use")
while the other one answers our health check, and a test would talk to another test's store.
:func:`owns_port` closes that gap: a server counts as started only once its own process holds
the listening socket (read from ``/proc``, Linux only, as the CI machine is)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

#: TCP state "LISTEN" in /proc/net/tcp.
_LISTEN = "0A"


def free_port() -> int:
    """A loopback port nobody listens on right now (not reserved: see :func:`owns_port`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def owns_port(pid: int, port: int) -> bool:
    """Whether process *pid* holds a socket listening on *port*."""
    inodes = _listening_inodes(port)
    if not inodes:
        return False
    wanted = {f"socket:[{inode}]" for inode in inodes}
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        fds = os.listdir(fd_dir)
    except OSError:  # the process has exited
        return False
    for fd in fds:
        try:
            if os.readlink(fd_dir / fd) in wanted:
                return True
        except OSError:  # closed while we looked
            continue
    return False
