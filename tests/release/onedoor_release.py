"""The release facts of every onedoor distribution, in one place: where the distributions
are, their one version, the pins between them, and their declared lower bounds.

Used by the tests in this folder, by ``nox -s bump`` and by the ``lowest`` combination of
the matrix. As a script::

    python tests/release/onedoor_release.py version            # print the version
    python tests/release/onedoor_release.py bump 0.2.0         # write it everywhere
    python tests/release/onedoor_release.py lowest [FOLDER...]  # constraints: each dependency at its lower bound

The single source of the version is ``[project] version`` of the root ``pyproject.toml``
(the kernel). ``bump`` rewrites it there and in its copies: every other distribution's
version, every ``onedoor*~=`` pin between them and ``onedoor.__version__``;
``tests/release/test_versions.py`` fails if any copy disagrees.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

# ONEDOOR_RELEASE_ROOT: work on a copy (the bump test does)
ROOT = Path(os.environ.get("ONEDOOR_RELEASE_ROOT") or Path(__file__).resolve().parents[2])
REPOSITORY = "https://github.com/onedoor-dev/onedoor"
KERNEL_INIT = ROOT / "kernel" / "onedoor" / "__init__.py"

# The fourteen published distributions (folder -> import package), the kernel first.
PUBLISHED = {
    ".": "onedoor",
    "transports/http": "onedoor_transport_http",
    "transports/slim": "onedoor_transport_slim",
    "plugins/door-rest": "onedoor_door_rest",
    "plugins/door-agui": "onedoor_door_agui",
    "plugins/door-mcp": "onedoor_door_mcp",
    "plugins/door-acp": "onedoor_door_acp",
    "plugins/door-a2a": "onedoor_door_a2a",
    "plugins/store-postgres": "onedoor_store_postgres",
    "plugins/backend-pydantic-ai": "onedoor_backend_pydantic_ai",
    "plugins/backend-hermes": "onedoor_backend_hermes",
    "plugins/fake-model-server": "onedoor_fake_model_server",
    "plugins/hook-otel": "onedoor_hook_otel",
    "examples/backend-echo": "onedoor_example_echo",
}
# Built from this repository but not published: they follow the version all the same.
UNPUBLISHED = {"bench/loadhooks": "onedoor_bench_loadhooks"}
ALL = {**PUBLISHED, **UNPUBLISHED}


def pyproject(folder: str) -> dict:
    return tomllib.loads((ROOT / folder / "pyproject.toml").read_text())


def version() -> str:
    """The one version (the kernel's)."""
    return pyproject(".")["project"]["version"]


TEST_EXTRAS = {"test"}  # tools to run the tests with, not what a user installs


def requirements(folder: str, extras: bool = True) -> list[Requirement]:
    """The distribution's requirements, with those of its extras (but the test extra)."""
    project = pyproject(folder)["project"]
    found = [Requirement(text) for text in project.get("dependencies", [])]
    if extras:
        for extra, group in project.get("optional-dependencies", {}).items():
            if extra not in TEST_EXTRAS:
                found.extend(Requirement(text) for text in group)
    return found


def is_ours(requirement: Requirement) -> bool:
    return requirement.name.lower().replace("_", "-").startswith("onedoor")


def kernel_version_attribute() -> str | None:
    match = re.search(r'^__version__ = "([^"]+)"', KERNEL_INIT.read_text(), re.M)
    return match.group(1) if match else None


def version_problems() -> list[str]:
    """Every place that disagrees with the one version (empty when all agree)."""
    expected = version()
    problems = []
    if kernel_version_attribute() != expected:
        problems.append(f"kernel/onedoor/__init__.py: __version__ = {kernel_version_attribute()!r}, expected {expected!r}")
    names = {pyproject(folder)["project"]["name"] for folder in ALL}
    for folder in ALL:
        project = pyproject(folder)["project"]
        if project.get("version") != expected:
            problems.append(f"{folder}/pyproject.toml: version {project.get('version')!r}, expected {expected!r}")
        for requirement in requirements(folder):
            if not is_ours(requirement):
                continue
            if requirement.name not in names:
                problems.append(f"{folder}/pyproject.toml: {requirement} names no distribution of this repository")
            if str(requirement.specifier) != f"~={expected}":
                problems.append(f"{folder}/pyproject.toml: {requirement} is not a compatible-release pin ~={expected}")
    return problems


def bump(new: str) -> list[Path]:
    """Write version ``new`` everywhere; returns the files changed."""
    Version(new)  # a valid version or ValueError
    old = version()
    changed = []
    for folder in ALL:
        path = ROOT / folder / "pyproject.toml"
        text = path.read_text()
        # the [project] version line, and the onedoor pins (in dependencies and extras)
        text2 = re.sub(r'^version = "[^"]+"', f'version = "{new}"', text, count=1, flags=re.M)
        text2 = re.sub(r'("onedoor[a-z-]*(?:\[[^\]]*\])?)~=' + re.escape(old) + '"', rf'\g<1>~={new}"', text2)
        if text2 != text:
            path.write_text(text2)
            changed.append(path)
    init = KERNEL_INIT.read_text()
    init2 = re.sub(r'^__version__ = "[^"]+"', f'__version__ = "{new}"', init, count=1, flags=re.M)
    if init2 != init:
        KERNEL_INIT.write_text(init2)
        changed.append(KERNEL_INIT)
    return changed


def lower_bounds(folders: Iterable[str]) -> dict[str, str]:
    """Each third-party dependency of these distributions (extras included) at the highest
    of the lower bounds they declare: the lowest version an environment holding all of
    them can have."""
    bounds: dict[str, Version] = {}
    for folder in folders:
        for requirement in requirements(folder):
            if is_ours(requirement):
                continue
            floors = [Version(spec.version) for spec in requirement.specifier if spec.operator in (">=", "==", "~=")]
            if not floors:
                continue
            name = requirement.name.lower().replace("_", "-")
            bounds[name] = max([*floors, *([bounds[name]] if name in bounds else [])])
    return {name: str(floor) for name, floor in sorted(bounds.items())}


def main(argv: list[str]) -> int:
    if argv[:1] == ["version"]:
        print(version())
    elif argv[:1] == ["bump"] and len(argv) == 2:
        for path in bump(argv[1]):
            print(f"wrote {path.relative_to(ROOT)}")
        problems = version_problems()
        for problem in problems:
            print(f"left behind: {problem}", file=sys.stderr)
        return 1 if problems else 0
    elif argv[:1] == ["lowest"]:
        folders = [folder.removeprefix("./").rstrip("/") or "." for folder in argv[1:]] or list(PUBLISHED)
        for name, floor in lower_bounds(folders).items():
            print(f"{name}=={floor}")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
