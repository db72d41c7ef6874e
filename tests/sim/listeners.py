"""Which TCP ports the sim's processes listen on, and on which addresses, read from ``/proc``.

A socket a process holds appears in ``/proc/<pid>/fd`` as ``socket:[<inode>]``; the listening ones
are the rows of ``/proc/<pid>/net/tcp`` and ``tcp6`` (the tables of that process's network
namespace) whose ``st`` is ``0A`` (TCP_LISTEN) and whose ``inode`` is one of them. Addresses there
are hex, each 32-bit word in host (little-endian) byte order (Linux ``Documentation/networking/proc_net_tcp.rst``).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

TCP_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    pid: int
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    port: int


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    words = [bytes.fromhex(hex_address[i : i + 8])[::-1] for i in range(0, len(hex_address), 8)]
    packed = b"".join(words)
    return ipaddress.IPv4Address(packed) if len(packed) == 4 else ipaddress.IPv6Address(packed)


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listeners(pid: int) -> list[Listener]:
    """The TCP sockets ``pid`` listens on, in its own network namespace."""
    inodes = socket_inodes(pid)
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == TCP_LISTEN and inode in inodes:
                address, port = local.split(":")
                found.append(Listener(pid, _address(address), int(port, 16)))
    return found


def network_namespace(pid: int | str) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def interfaces(pid: int) -> list[str]:
    """The network interfaces of ``pid``'s namespace (``/proc/<pid>/net/dev``)."""
    lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    return sorted(line.split(":")[0].strip() for line in lines)


def process_group(leader: int) -> list[int]:
    """``leader`` and every process in its process group (the sim starts each in its own session)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[2]) == leader:
            members.append(int(entry.name))
    return sorted(set(members) | {leader})
