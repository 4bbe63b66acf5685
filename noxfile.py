"""nox sessions: the plugin matrix, lint, and benchmarks.

The matrix is assembled from ``tests/*/nox.toml``: each test folder says which
combinations of distributions it runs against. A combination is one virtualenv with the
kernel plus the listed distributions (local folders or pinned requirements), and the
listed test folders run in it::

    [[combo]]
    name = "mcp-1.26"                       # session: tests(combo='mcp-1.26')
    install = ["transports/http", "plugins/door-mcp", "mcp==1.26.0"]
    tests = ["tests/door_mcp"]
    npm = ["tests/door_mcp/js"]             # optional: folders to `npm ci` first

``nox`` runs every combination and lint; ``nox -s tests -- -k name`` passes pytest args;
``nox -s "tests(combo='kernel')"`` runs one.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False

TEST_TOOLS = ["pytest>=8", "pytest-asyncio>=0.24", "pytest-timeout>=2.3", "hypothesis>=6.100", "httpx>=0.27"]


def _combos() -> dict[str, dict]:
    combos: dict[str, dict] = {}
    for path in sorted(ROOT.glob("tests/*/nox.toml")):
        data = tomllib.loads(path.read_text())
        for combo in data.get("combo", []):
            name = combo["name"]
            if name in combos:
                raise RuntimeError(f"combo {name!r} defined twice (second in {path})")
            combos[name] = combo
    return combos


COMBOS = _combos()


def _install(session: nox.Session, combo: dict) -> None:
    local = [item for item in combo.get("install", []) if (ROOT / item).is_dir()]
    pinned = [item for item in combo.get("install", []) if not (ROOT / item).is_dir()]
    # One resolver pass: the kernel, the plugins and the pins together.
    session.install(*TEST_TOOLS, ".", *[f"./{item}" for item in local], *pinned, *combo.get("extra", []))
    for folder in combo.get("npm", []):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--prefix", folder, external=True)


@nox.session
@nox.parametrize("combo", list(COMBOS))
def tests(session: nox.Session, combo: str) -> None:
    """Run one combination of the plugin matrix."""
    spec = COMBOS[combo]
    _install(session, spec)
    artifacts = ROOT / "test-artifacts" / combo
    artifacts.mkdir(parents=True, exist_ok=True)
    env = {"ONEDOOR_TEST_ARTIFACTS": str(artifacts), "ONEDOOR_COMBO": combo}
    session.run("pytest", *spec["tests"], *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on everything, mypy on the kernel."""
    session.install("ruff>=0.6", "mypy>=1.10", ".")
    session.run("ruff", "check", "kernel", "plugins", "transports", "examples", "tests", "noxfile.py")
    session.run("mypy", "kernel/onedoor")


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmark beside its baseline in one run; writes bench/out/ (report.md, results.json, chart.png).

    ``nox -s bench -- --quick`` is the short run CI records; ``-- --only kernel,rest`` picks some.
    """
    local = [f"./{p.relative_to(ROOT)}" for p in sorted(ROOT.glob("plugins/*")) + sorted(ROOT.glob("transports/*"))
             if (p / "pyproject.toml").is_file() and p.name not in BENCH_OWN_ENV]
    requirements = ROOT / "bench" / "requirements.txt"
    extra = ["-r", str(requirements)] if requirements.is_file() else []
    session.install(".", "./examples/backend-echo", "./bench/loadhooks", *local, *extra)
    session.run("python", "bench/run.py", *session.posargs)


# Distributions whose exact pins clash with the rest: their benchmarks install them on their own.
BENCH_OWN_ENV = {"backend-hermes"}
