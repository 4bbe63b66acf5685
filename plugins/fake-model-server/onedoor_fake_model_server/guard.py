"""Fail loudly on any network connection that is not to the loopback interface.

    with loopback_only() as attempts:
        ...                      # connecting elsewhere raises ConnectionRefusedError
    assert not attempts          # and is recorded, even if the caller swallowed the error

Use it as an autouse fixture so tests prove they make no outside traffic.
"""

from __future__ import annotations

import ipaddress
import socket
from contextlib import contextmanager
from typing import Any, Iterator

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):  # unix sockets, socketpairs
        return True
    host = str(address[0]).strip("[]")
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@contextmanager
def loopback_only() -> Iterator[list[str]]:
    attempts: list[str] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            attempts.append(repr(address))
            raise ConnectionRefusedError(f"test guard: connection to {address!r} refused (loopback only)")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            attempts.append(repr(address))
            raise ConnectionRefusedError(f"test guard: connection to {address!r} refused (loopback only)")
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_local((host if isinstance(host, str) else host.decode(), 0)):
            attempts.append(f"resolve {host!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"test guard: will not resolve {host!r} (loopback only)")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    try:
        yield attempts
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo  # type: ignore[assignment]
