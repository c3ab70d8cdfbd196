"""What a process tree listens on: the test of "nothing listens beyond loopback"."""

from __future__ import annotations

import ipaddress

import psutil


def listening(root_pid: int) -> list[tuple[str, int, str]]:
    """``(address, port, process)`` of every TCP/UDP socket that ``root_pid`` or any of its
    descendants listens on (UDP: every bound socket)."""
    root = psutil.Process(root_pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            name = _describe(proc)
            for conn in proc.net_connections(kind="inet"):
                udp = conn.type.name == "SOCK_DGRAM"
                if (conn.status == psutil.CONN_LISTEN or udp) and conn.laddr:
                    found.append((conn.laddr.ip, conn.laddr.port, f"{proc.pid} {name}"))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _describe(proc: psutil.Process) -> str:
    cmdline = proc.cmdline()
    main = next((a for a in cmdline if a.startswith("org.apache.")), "")  # a JVM's main class
    return f"{proc.pid} {proc.name()} {main}".strip()


def beyond_loopback(root_pid: int) -> list[tuple[str, int, str]]:
    """The sockets of ``listening`` bound to anything but 127.0.0.0/8 or ::1."""
    return [s for s in listening(root_pid) if not _loopback(s[0])]


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback
