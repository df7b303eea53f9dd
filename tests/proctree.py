"""What a process tree holds, read from /proc (Linux): its processes, the TCP/UDP sockets they listen on, and
whether an address is loopback — for tests that check what a run leaves open or running."""

from __future__ import annotations

import ipaddress
import os


def _stat(pid: int | str) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    return int(fields[1]), fields[0]


def tree(root: int) -> list[int]:
    """``root`` and every live process under it."""
    parents = {int(n): s[0] for n in os.listdir("/proc") if n.isdigit() and (s := _stat(n)) is not None and s[1] != "Z"}
    out, todo = [root], [root]
    while todo:
        pid = todo.pop()
        kids = [c for c, p in parents.items() if p == pid]
        out += kids
        todo += kids
    return out


def _address(hex_ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_ip)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))  # /proc writes each 32-bit word in host order
    address = ipaddress.IPv6Address(words)
    return address.ipv4_mapped or address


def _listening() -> dict[int, tuple[str, str, int]]:
    """socket inode → (protocol, address, port) of every listening TCP socket and bound UDP socket."""
    found = {}
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{name}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], int(fields[9])
            if state != ("0A" if name.startswith("tcp") else "07"):
                continue
            ip, port = local.split(":")
            found[inode] = (name, str(_address(ip)), int(port, 16))
    return found


def listening(root: int) -> list[tuple[int, str, str, int]]:
    """(pid, protocol, address, port) of every socket the processes of ``root``'s tree listen on."""
    table = _listening()
    out = []
    for pid in tree(root):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and int(target[8:-1]) in table:
                out.append((pid, *table[int(target[8:-1])]))
    return sorted(set(out))


def loopback(address: str) -> bool:
    return ipaddress.ip_address(address).is_loopback
