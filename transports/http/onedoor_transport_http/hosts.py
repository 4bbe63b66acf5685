"""Which ``Host`` and ``Origin`` headers the guard serves (DNS rebinding and cross-site pages).

``Host``: loopback names, the bound address, the ``allowed_hosts`` (``name``,
``name:port``, ``name:*``; ``*``: any). ``Origin``: the same origin, the same port under
another loopback name, the ``cors_origins`` (``scheme://name:*``: any port; ``*``: any).
A door may widen both for requests under its prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def is_loopback_name(name: str) -> bool:
    from . import is_loopback

    return is_loopback(name.rstrip("."))


def split_host(value: str) -> tuple[str, str | None]:
    """``Host``-style ``name[:port]`` (IPv6 in brackets) -> (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[: end + 1], (rest[1:] if rest.startswith(":") else None)
    if value.count(":") == 1:
        name, port = value.split(":")
        return name, port
    return value, None


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class HostRule:
    """One allowed ``Host``: a name and a port (None or ``*``: any port)."""

    name: str
    port: str | None

    @classmethod
    def parse(cls, pattern: str) -> "HostRule":
        name, port = split_host(pattern)
        return cls(name, port)

    def matches(self, name: str, port: str | None) -> bool:
        return self.name == name and (self.port in (None, "*") or self.port == port)


class HostPolicy:
    """Which ``Host`` headers are served: loopback names, the bound address, the listed ones."""

    def __init__(self, bound: str, extra: Iterable[str], *, any_host: bool = False) -> None:
        patterns = [p.strip() for p in extra if p and p.strip()]
        self.any = any_host or "*" in patterns
        self.rules = [HostRule.parse(p) for p in patterns if p != "*"]
        if bound and bound not in WILDCARD_BINDS:
            self.rules.append(HostRule(_bracket(bound).lower(), None))

    def allows(self, value: str) -> bool:
        if self.any:
            return True
        name, port = split_host(value)
        if is_loopback_name(name):
            return True
        return any(rule.matches(name, port) for rule in self.rules)

    def widened(self, extra: Iterable[str]) -> "HostPolicy":
        """This policy plus a door's own hosts (for requests under its prefix)."""
        extra = [p for p in extra if p]
        if not extra:
            return self
        wider = HostPolicy("", extra, any_host=self.any)
        wider.rules = self.rules + wider.rules
        return wider


class OriginPolicy:
    """Which browser ``Origin`` values may call: same origin, loopback twins, listed ones."""

    def __init__(self, listed: Iterable[str]) -> None:
        listed = [o.strip().lower().rstrip("/") for o in listed if o and o.strip()]
        self.any = "*" in listed
        self.exact = {o for o in listed if not o.endswith(":*")}
        self.any_port = [o[:-1] for o in listed if o.endswith(":*")]  # "http://name:" prefixes

    def widened(self, extra: Iterable[str]) -> "OriginPolicy":
        extra = [o for o in extra if o]
        if not extra:
            return self
        wider = OriginPolicy(extra)
        wider.any = wider.any or self.any
        wider.exact |= self.exact
        wider.any_port += self.any_port
        return wider

    def allows(self, origin: str, host: str) -> bool:
        origin = origin.strip().lower()
        if self.any or origin in self.exact:
            return True
        scheme, sep, netloc = origin.partition("://")
        if not sep or scheme not in ("http", "https") or "/" in netloc:
            return False  # "null" (sandboxed frames, file: pages) or not an origin at all
        for prefix in self.any_port:
            if origin.startswith(prefix) and origin[len(prefix) :].isdigit():
                return True
        if host and netloc == host.strip().lower():
            return True  # same origin
        # The same port under another loopback name (a page on localhost calling 127.0.0.1).
        default = "443" if scheme == "https" else "80"
        oname, oport = split_host(netloc)
        hname, hport = split_host(host)
        return is_loopback_name(oname) and is_loopback_name(hname) and (oport or default) == (hport or default)


__all__ = ["WILDCARD_BINDS", "HostPolicy", "HostRule", "OriginPolicy", "is_loopback_name", "split_host"]
