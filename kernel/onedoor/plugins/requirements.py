"""Are a distribution's declared requirements installed? (for `onedoor plugins --check`)

A plugin can import fine and still fail on its first run because a library it imports
lazily is missing (the pydantic-ai backend without ``pydantic-ai-slim``). This reads the
distribution's ``Requires-Dist`` metadata and checks each requirement that applies here
(its environment marker holds, no extra is asked for) against what is installed.

It needs no third-party package: requirement strings and markers are read by the small
parser below, which covers what PEP 508 metadata holds in practice. A requirement or a
version it cannot read is never reported: this check may miss a problem, but it does
not invent one.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from importlib import metadata
from typing import Any, Callable

_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$", re.DOTALL)
_SPECIFIER = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*([^\s,;]+)\s*$")
_VERSION = re.compile(r"^\s*v?(?:\d+!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?"
                      r"(?:[-_.]?(post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+.*)?\s*$", re.IGNORECASE)
_MARKER_TOKEN = re.compile(r"""\s*(\(|\)|===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b|and\b|or\b|'[^']*'|"[^"]*"|[A-Za-z_.]+)""")


class Unreadable(ValueError):
    """A requirement, marker or version this module cannot read."""


def unmet_requirements(distribution: str) -> list[str]:
    """One line for each requirement of ``distribution`` that applies here and is not
    met: ``"pydantic-ai-slim>=1.0 (not installed)"``, ``"mcp<2 (1.26.0 is installed)"``."""
    try:
        requires = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return []
    problems = []
    for line in requires:
        try:
            problem = _problem(line)
        except Unreadable:
            continue
        if problem:
            problems.append(problem)
    return problems


def _problem(requirement: str) -> str | None:
    text, _, marker = requirement.partition(";")
    if marker.strip() and not evaluate_marker(marker):
        return None
    match = _NAME.match(text)
    if not match:
        raise Unreadable(requirement)
    name, _extras, rest = match.groups()
    shown = text.strip()
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        return f"{shown} (not installed)"
    rest = rest.strip()
    if not rest or rest.startswith("@"):  # no version asked for, or a URL
        return None
    rest = rest.removeprefix("(").removesuffix(")")
    for spec in rest.split(","):
        op_match = _SPECIFIER.match(spec)
        if not op_match:
            raise Unreadable(requirement)
        if not version_matches(installed, *op_match.groups()):
            return f"{shown} ({installed} is installed)"
    return None


def version_key(version: str) -> tuple[Any, ...]:
    """An ordering key for a PEP 440 version (epochs and local labels aside)."""
    match = _VERSION.match(version)
    if not match:
        raise Unreadable(version)
    release, pre, pre_n, post, post_n, dev, dev_n = match.groups()
    numbers = tuple(int(part) for part in release.split("."))
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers = numbers[:-1]
    if pre:
        stage = {"a": 0, "alpha": 0, "b": 1, "beta": 1}.get(pre.lower(), 2)
        phase: tuple[int, ...] = (-1, stage, int(pre_n or 0))
    elif dev and not post:
        phase = (-2, 0, 0)
    else:
        phase = (0, 0, 0)
    return (numbers, phase, int(post_n or 0) if post else -1, int(dev_n or 0) if dev else sys.maxsize)


def version_matches(installed: str, op: str, wanted: str) -> bool:
    """Does ``installed`` satisfy the specifier ``op wanted`` (``>=``, ``==1.2.*``, ``~=``…)?"""
    if op == "===":
        return installed.strip() == wanted.strip()
    if wanted.endswith(".*") and op in ("==", "!="):
        prefix = [int(p) for p in wanted[:-2].split(".") if p.isdigit()]
        release = [int(p) for p in _release(installed)]
        same = release[: len(prefix)] + [0] * (len(prefix) - len(release)) == prefix
        return same if op == "==" else not same
    have, want = version_key(installed), version_key(wanted)
    if op == "~=":
        parts = _release(wanted)
        if len(parts) < 2:
            raise Unreadable(wanted)
        return have >= want and version_matches(installed, "==", ".".join(parts[:-1]) + ".*")
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
    }
    return compare[op](have, want)


def _release(version: str) -> list[str]:
    match = _VERSION.match(version)
    if not match:
        raise Unreadable(version)
    return match.group(1).split(".")


def marker_environment() -> dict[str, str]:
    """The values PEP 508 markers name, for this interpreter; ``extra`` is empty (the
    requirements that matter are the ones installed without extras)."""
    impl = sys.implementation
    info = impl.version
    impl_version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        impl_version += info.releaselevel[0] + str(info.serial)
    return {
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "python_full_version": platform.python_version(),
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "extra": "",
    }


def evaluate_marker(marker: str, environment: dict[str, str] | None = None) -> bool:
    """Evaluate a PEP 508 environment marker such as
    ``python_version < "3.12" and (sys_platform == "linux" or extra == "ask")``."""
    env = marker_environment() if environment is None else environment
    tokens = _tokens(marker)
    value, position = _or_expression(tokens, 0, env)
    if position != len(tokens):
        raise Unreadable(marker)
    return value


def _tokens(marker: str) -> list[str]:
    tokens, position = [], 0
    marker = marker.strip()
    while position < len(marker):
        match = _MARKER_TOKEN.match(marker, position)
        if not match:
            raise Unreadable(marker)
        tokens.append(" ".join(match.group(1).split()))
        position = match.end()
        while position < len(marker) and marker[position].isspace():
            position += 1
    return tokens


def _or_expression(tokens: list[str], position: int, env: dict[str, str]) -> tuple[bool, int]:
    return _chain(tokens, position, env, "or", _and_expression)


def _and_expression(tokens: list[str], position: int, env: dict[str, str]) -> tuple[bool, int]:
    return _chain(tokens, position, env, "and", _comparison)


def _chain(tokens: list[str], position: int, env: dict[str, str], word: str, operand: Any) -> tuple[bool, int]:
    """``operand (word operand)*`` for ``word`` "and" or "or"; (value, next position)."""
    values = []
    value, position = operand(tokens, position, env)
    values.append(value)
    while position < len(tokens) and tokens[position] == word:
        value, position = operand(tokens, position + 1, env)
        values.append(value)
    return (any(values) if word == "or" else all(values)), position


def _comparison(tokens: list[str], position: int, env: dict[str, str]) -> tuple[bool, int]:
    if position < len(tokens) and tokens[position] == "(":
        value, position = _or_expression(tokens, position + 1, env)
        if position >= len(tokens) or tokens[position] != ")":
            raise Unreadable(" ".join(tokens))
        return value, position + 1
    if position + 3 > len(tokens):
        raise Unreadable(" ".join(tokens))
    left, op, right = tokens[position : position + 3]
    variable = left if left[0] not in "'\"" else right
    a, b = _operand(left, env), _operand(right, env)
    if variable == "extra":  # extra names compare normalized
        a, b = (re.sub(r"[-_.]+", "-", x).lower() for x in (a, b))
    return _compare(a, op, b, versions=variable.endswith("version")), position + 3


def _operand(token: str, env: dict[str, str]) -> str:
    if token[0] in "'\"":
        return token[1:-1]
    if token not in env:
        raise Unreadable(token)
    return env[token]


def _compare(a: str, op: str, b: str, *, versions: bool) -> bool:
    if op == "in":
        return a in b
    if op == "not in":
        return a not in b
    if op not in ("==", "!=", "<", "<=", ">", ">=", "~=", "==="):
        raise Unreadable(op)
    if versions:
        try:
            return version_matches(a, op, b)
        except Unreadable:
            pass
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    raise Unreadable(f"{a} {op} {b}")
