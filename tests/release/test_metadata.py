"""What the package index shows and ships: licenses, project URLs, classifiers, typing
markers, READMEs whose links work off this repository, and declared dependencies."""

from __future__ import annotations

import ast
import re
import sys

import onedoor_release as release
import pytest
from onedoor_release import PUBLISHED, ROOT

LICENSE = (ROOT / "LICENSE").read_text()
PYTHON_CLASSIFIERS = {f"Programming Language :: Python :: 3.{minor}" for minor in (11, 12, 13)}


@pytest.mark.parametrize("folder", list(release.ALL))
def test_license_file_and_metadata(folder):
    project = release.pyproject(folder)["project"]
    assert (ROOT / folder / "LICENSE").read_text() == LICENSE, f"{folder}/LICENSE differs from the top-level LICENSE"
    assert "MIT" in project.get("license", ""), f"{folder}: no license expression"
    assert "LICENSE" in project.get("license-files", []), f"{folder}: LICENSE is not in license-files"
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")], "PEP 639: the expression, not classifiers"


@pytest.mark.parametrize("folder", list(PUBLISHED))
def test_index_page_metadata(folder):
    project = release.pyproject(folder)["project"]
    urls = project.get("urls", {})
    assert urls.get("Homepage") == release.REPOSITORY and urls.get("Issues") == f"{release.REPOSITORY}/issues"
    assert all(url.startswith(release.REPOSITORY) for url in urls.values()), urls
    classifiers = set(project.get("classifiers", []))
    assert PYTHON_CLASSIFIERS <= classifiers and "Typing :: Typed" in classifiers
    assert project["requires-python"].startswith(">=3.11")
    assert project.get("readme") == "README.md" and project.get("description")


def test_classifiers_are_known_to_the_index():
    trove = pytest.importorskip("trove_classifiers", reason="trove-classifiers is installed by nox -s packaging")
    for folder in release.ALL:
        unknown = set(release.pyproject(folder)["project"].get("classifiers", [])) - trove.classifiers
        assert not unknown, f"{folder}: {unknown}"


@pytest.mark.parametrize("folder, package", list(release.ALL.items()))
def test_every_package_ships_py_typed(folder, package):
    source = ROOT / ("kernel" if folder == "." else folder) / package
    assert (source / "py.typed").is_file(), f"{source}/py.typed is missing"
    data = release.pyproject(folder)["tool"]["setuptools"].get("package-data", {})
    assert "py.typed" in data.get(package, []), f"{folder}: py.typed is not in [tool.setuptools.package-data]"


RELATIVE_LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)]+)\)")


@pytest.mark.parametrize("folder", list(PUBLISHED))
def test_readme_links_work_on_the_index(folder):
    """A relative link resolves against the index's page, not this repository: 404."""
    text = (ROOT / folder / "README.md").read_text()
    assert not RELATIVE_LINK.findall(text), f"{folder}/README.md has relative links"


def test_the_readme_states_the_names_and_the_quick_start():
    text = (ROOT / "README.md").read_text()
    assert "onedoor-kernel" in text and "docs/plugin-authors.md" in text
    assert "python3 -m venv" in text


# --- dependencies ---------------------------------------------------------------------

# Import name -> the distribution that provides it (for names that differ, and to catch
# an import nobody declared). Our own packages map to our distributions.
PROVIDER = {
    "acp": "agent-client-protocol",
    "a2a": "a2a-sdk",
    "google": "protobuf",  # google.protobuf
    "psycopg_pool": "psycopg-pool",
    "ag_ui": "ag-ui-protocol",
    "pydantic_ai": "pydantic-ai-slim",
    "pydantic_core": "pydantic-core",
    "slim_bindings": "slim-bindings",
    "opentelemetry": "opentelemetry-api",  # (its sdk and exporters are declared beside it)
    "prometheus_client": "prometheus-client",
    "run_agent": "hermes-agent",
    "hermes_cli": "hermes-agent",
    "tools": "hermes-agent",
    "jwt": "pyjwt",
    "toolsets": "hermes-agent",
    **{package: release.pyproject(folder)["project"]["name"] for folder, package in release.ALL.items()},
}


def imported_distributions(folder: str, package: str) -> dict[str, str]:
    """Every third-party or sibling distribution the package's modules import -> a file that does."""
    source = ROOT / ("kernel" if folder == "." else folder) / package
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == package:
                    continue
                found.setdefault(PROVIDER.get(top, top.replace("_", "-")), str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("folder, package", list(release.ALL.items()))
def test_every_imported_module_is_declared(folder, package):
    declared = {req.name.lower() for req in release.requirements(folder)}
    missing = {dist: where for dist, where in imported_distributions(folder, package).items() if dist not in declared}
    assert not missing, f"{folder} imports these without declaring them: {missing}"


UPPER_BOUND = re.compile(r'"[A-Za-z0-9_.\[\]-]+[^"]*(<|==|!=)[^"]*"')


@pytest.mark.parametrize("folder", list(release.ALL))
def test_every_upper_bound_says_why(folder):
    """An upper bound (or an exact pin) only where a break is known, with a comment naming it."""
    lines = (ROOT / folder / "pyproject.toml").read_text().splitlines()
    unexplained = []
    for number, line in enumerate(lines):
        if line.lstrip().startswith("#") or not UPPER_BOUND.search(line) or "requires-python" in line:
            continue
        comment_above = number > 0 and lines[number - 1].lstrip().startswith("#")
        if "#" not in line.split('"')[-1] and not comment_above:
            unexplained.append(line.strip())
    assert not unexplained, f"{folder}: bounds without a reason: {unexplained}"


def test_the_agui_license_covers_the_bundled_notices():
    notices = ROOT / "plugins/door-agui/THIRD-PARTY-NOTICES.txt"
    project = release.pyproject("plugins/door-agui")["project"]
    assert str(notices.relative_to(ROOT / "plugins/door-agui")) in project["license-files"]
    bundled = set(re.findall(r"[A-Za-z0-9.-]+", " ".join(re.findall(r"^License: (.*)$", notices.read_text(), re.M))))
    expression = set(re.findall(r"[A-Za-z0-9.-]+", project["license"]))
    assert bundled - {"AND", "OR"} <= expression, f"bundle licenses {bundled} not all in {project['license']!r}"
