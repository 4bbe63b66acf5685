"""nox sessions: the plugin matrix, packaging, lint, a developer environment, benchmarks.

The matrix is assembled from ``tests/*/nox.toml``: each test folder says which
combinations of distributions it runs against. A combination is one virtualenv with the
kernel plus the listed distributions (local folders or pinned requirements), and the
listed test folders run in it::

    [[combo]]
    name = "mcp-1.26"                       # session: tests(mcp-1.26)
    install = ["transports/http", "plugins/door-mcp", "mcp==1.26.0"]
    tests = ["tests/door_mcp"]
    npm = ["tests/door_mcp/js"]             # optional: folders to `npm ci` first
    resolution = "newest"                   # optional: "newest" upgrades every dependency to
                                            # its newest release (and runs a folder only where
                                            # that differs from another combination's pins);
                                            # "lowest" installs each
                                            # declared dependency at its lower bound (uv)

Every combination runs on Python 3.11; those in :data:`ALL_PYTHONS` also on 3.12 and 3.13
(sessions ``tests(kernel-3.12)``, …). A missing interpreter skips its sessions on a
developer's machine and fails in CI (``CI`` set). pyenv's interpreters are found even
when pyenv does not put them on PATH.

``nox`` runs the matrix, ``packaging`` and ``lint``, two sessions at a time (session
``matrix``: each session's output goes to ``.nox/logs/``, a failed one's tail is shown;
``ONEDOOR_NOX_LANES`` sets how many at a time). ``nox -s tests -- -k name`` passes
pytest args; ``nox -s "tests(kernel)"`` runs one combination; ``nox -s dev`` makes
``.venv`` with every distribution installed editable; ``nox -s bump -- 0.2.0`` sets the
one version everywhere.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT / "tests" / "release"))
import onedoor_release as release  # noqa: E402  (tests/release/onedoor_release.py: versions, pins, bounds)

IN_CI = bool(os.environ.get("CI"))
nox.options.sessions = ["matrix"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = IN_CI

PYTHON = "3.11"
PYTHONS = ["3.11", "3.12", "3.13"]
# The combinations that run on every supported Python: the kernel alone, every web door
# together, and a channel door (ACP over stdio).
ALL_PYTHONS = {"kernel", "all-http", "door-acp"}
NPM_READY = "ONEDOOR_NPM_READY"  # set by the matrix session: the npm folders are installed already
# Rough minutes each session takes in CI, to start the long ones first (unknown: 1).
EXPECTED_MINUTES = {"tests(lowest)": 7.5, "packaging": 5.5, "tests(mcp-2.3)": 5, "tests(mcp-1.26)": 4,
                    "tests(all-http)": 3.5, "tests(all-http-3.12)": 3.5, "tests(all-http-3.13)": 3.5, "tests(agui)": 3.3,
                    "tests(deploy)": 3, "tests(rest)": 2.5, "lint": 2}
TEST_TOOLS = ["pytest>=8", "pytest-asyncio>=0.24", "pytest-timeout>=2.3", "hypothesis>=6.100", "httpx>=0.27"]
# Not installable beside the others (hermes-agent pins openai/pydantic exactly): own environments only.
OWN_ENVIRONMENT = {"plugins/backend-hermes"}


def _find_interpreters() -> dict[str, str]:
    """Each supported Python: its command on PATH if that runs, else pyenv's build of it,
    exposed on PATH through a symlink so that nox finds it by version."""
    found: dict[str, str] = {}
    links = ROOT / ".nox" / ".interpreters"
    for version in PYTHONS:
        command = shutil.which(f"python{version}")
        if command and subprocess.run([command, "-c", ""], capture_output=True).returncode == 0:
            found[version] = command
            continue
        pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
        builds = sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), key=_version_key)
        if builds:
            links.mkdir(parents=True, exist_ok=True)
            link = links / f"python{version}"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(builds[-1])
            found[version] = str(link)
    if found and str(links) not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = str(links) + os.pathsep + os.environ["PATH"]
    return found


def _version_key(path: str) -> tuple[int, ...]:
    digits = Path(path).parents[1].name.split(".")
    return tuple(int(d) if d.isdigit() else 0 for d in digits)


INTERPRETERS = _find_interpreters()


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


def _matrix() -> list:
    params = []
    for name in COMBOS:
        for python in PYTHONS if name in ALL_PYTHONS else [PYTHON]:
            params.append(nox.param(python, name, id=name if python == PYTHON else f"{name}-{python}"))
    return params


def _install(session: nox.Session, combo: dict) -> None:
    local = [item for item in combo.get("install", []) if (ROOT / item).is_dir()]
    pinned = [item for item in combo.get("install", []) if not (ROOT / item).is_dir()]
    targets = [".", *[f"./{item}" for item in local], *pinned, *combo.get("extra", [])]
    resolution = combo.get("resolution")
    if resolution == "lowest":
        _install_lowest(session, local, targets)
    elif resolution == "newest":
        # a reused virtualenv would keep what it had: ask for the newest of everything
        session.install("--upgrade", "--upgrade-strategy", "eager", *TEST_TOOLS, *targets)
    else:
        # One resolver pass: the kernel, the plugins and the pins together.
        session.install(*TEST_TOOLS, *targets)
    if os.environ.get(NPM_READY) != "1":  # (the matrix session installs them once, before its lanes)
        for folder in combo.get("npm", []):
            session.run("npm", "ci", "--no-audit", "--no-fund", "--prefix", folder, external=True)


def _install_lowest(session: nox.Session, local: list[str], targets: list[str]) -> None:
    """Our distributions with every dependency they declare at its lower bound.

    uv's ``lowest-direct`` resolution takes the lowest version of each *direct*
    requirement; our third-party dependencies are made direct by listing them (so a bound
    that another package raises shows up, instead of failing the install). The test tools
    come second, without moving anything the first pass chose.
    """
    session.install("uv")
    folders = [".", *local]
    direct = sorted({str(req) for folder in folders for req in release.requirements(folder) if not release.is_ours(req)})
    requirements = Path(session.create_tmp()) / "lowest-direct.txt"
    requirements.write_text("\n".join(direct) + "\n")
    python = ["--python", session.virtualenv.location]  # type: ignore[union-attr]
    session.run("uv", "pip", "install", *python, "--reinstall", "--resolution", "lowest-direct", "-r", str(requirements), *targets)
    frozen = Path(session.create_tmp()) / "chosen.txt"
    listed = session.run("uv", "pip", "freeze", "--quiet", *python, silent=True) or ""
    frozen.write_text("".join(line + "\n" for line in listed.splitlines() if "==" in line and " @ " not in line))
    session.run("uv", "pip", "install", *python, "-c", str(frozen), *TEST_TOOLS)
    lower = release.lower_bounds(folders)
    chosen = dict(line.split("==", 1) for line in frozen.read_text().splitlines() if "==" in line)
    for name, floor in lower.items():
        got = chosen.get(name) or chosen.get(name.replace("-", "_"))
        note = "" if got is None or release.Version(got) == release.Version(floor) else "  (raised by another requirement)"
        session.log(f"lowest: {name} declared >={floor}, installed {got}{note}")


@nox.session
@nox.parametrize("python,combo", _matrix())
def tests(session: nox.Session, combo: str) -> None:
    """Run one combination of the plugin matrix."""
    spec = COMBOS[combo]
    _install(session, spec)
    label = combo if session.python == PYTHON else f"{combo}-{session.python}"
    artifacts = ROOT / "test-artifacts" / label
    artifacts.mkdir(parents=True, exist_ok=True)
    freeze = session.run("python", "-m", "pip", "freeze", silent=True) or ""
    (artifacts / "pip-freeze.txt").write_text(freeze)
    folders = list(spec["tests"])
    if spec.get("resolution") == "newest" and not session.posargs:
        folders = _not_run_elsewhere(session, combo, folders, _versions(freeze))
        if not folders:
            return
    env = {"ONEDOOR_TEST_ARTIFACTS": str(artifacts), "ONEDOOR_COMBO": combo}
    session.run("pytest", *folders, *session.posargs, env=env)


_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^,;\s]+)$")


def _name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _versions(freeze: str) -> dict[str, str]:
    """``pip freeze`` output as {normalized name: version}."""
    found = {}
    for line in freeze.splitlines():
        match = _PIN.match(line.strip())
        if match:
            found[_name(match[1])] = match[2]
    return found


def _not_run_elsewhere(session: nox.Session, combo: str, folders: list[str], installed: dict[str, str]) -> list[str]:
    """The folders of a ``newest`` combination that no other combination already runs at
    these versions: a folder is left out when another combination runs it and every
    library that combination pins (``name==version``) is installed here at that same
    version (its newest release is the pinned one). A new release brings the folder back."""
    kept = []
    for folder in folders:
        same = None
        for name, other in COMBOS.items():
            if name == combo or folder not in other["tests"]:
                continue
            pins = [m.groups() for m in map(_PIN.match, other.get("install", [])) if m]
            if pins and all(installed.get(_name(dist)) == version for dist, version in pins):
                same = f"{name} ({', '.join(f'{dist} {version}' for dist, version in pins)})"
                break
        if same is None:
            kept.append(folder)
        else:
            session.log(f"{combo}: {folder} left out: the newest releases here are the pins of {same}, which runs it")
    if not kept:
        session.log(f"{combo}: nothing to run that other combinations do not already run at these versions")
    return kept


@nox.session(python=False)
def matrix(session: nox.Session) -> None:
    """Every test combination, ``packaging`` and ``lint``, ONEDOOR_NOX_LANES (2) at a time.

    Each runs as its own ``nox -s NAME`` with its output in ``.nox/logs/NAME.log``; the npm
    folders are installed once first (sessions at once would race on one node_modules).
    Fails, with each failed session's last lines, if any session fails."""
    import concurrent.futures
    import time

    names = [f"tests({param.id})" for param in _matrix()] + ["packaging", "lint"]
    if session.posargs:  # `nox -s matrix -- kernel rest lint`: only those
        names = [name for name in names if name in session.posargs or name[len("tests("):-1] in session.posargs]
    names.sort(key=lambda name: -EXPECTED_MINUTES.get(name, 1))
    for folder in sorted({folder for combo in COMBOS.values() for folder in combo.get("npm", [])}):
        session.run("npm", "ci", "--no-audit", "--no-fund", "--prefix", folder, external=True)
    logs = ROOT / ".nox" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, NPM_READY: "1"}

    def run(name: str) -> tuple[str, int, float]:
        started = time.monotonic()
        with open(logs / f"{name}.log", "w") as log:
            code = subprocess.run([sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", name],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT).returncode
        took = time.monotonic() - started
        session.log(f"{name}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {took:.0f} s")
        return name, code, took

    lanes = int(os.environ.get("ONEDOOR_NOX_LANES", "2"))
    with concurrent.futures.ThreadPoolExecutor(max(1, lanes)) as pool:
        results = list(pool.map(run, names))
    failed = [name for name, code, _ in results if code != 0]
    for name in failed:
        tail = (logs / f"{name}.log").read_text(errors="replace").splitlines()[-60:]
        session.log(f"--- {name}: the last lines of .nox/logs/{name}.log ---\n" + "\n".join(tail))
    session.log(f"{len(results) - len(failed)} of {len(results)} sessions passed")
    if failed:
        session.error(f"failed: {', '.join(failed)}")


@nox.session(python=PYTHON)
def packaging(session: nox.Session) -> None:
    """Build every distribution (wheel + sdist), check them (twine, check-wheel-contents),
    then install each one by name from a local index on Python 3.11 and 3.13 and serve the
    AG-UI chat page and REST from such installs on 3.11, 3.12 and 3.13 (tests/release)."""
    session.install("build", "setuptools>=77", "twine", "check-wheel-contents", "packaging", "trove-classifiers", *TEST_TOOLS)
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    for folder in release.PUBLISHED:
        session.run("python", "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT / folder), silent=True)
    artifacts = sorted(str(p) for p in dist.iterdir())
    session.run("twine", "check", "--strict", *artifacts)
    session.run("check-wheel-contents", *[p for p in artifacts if p.endswith(".whl")])
    pythons = ";".join(f"{version}={path}" for version, path in INTERPRETERS.items())
    env = {"ONEDOOR_DIST": str(dist), "ONEDOOR_PYTHONS": pythons, "ONEDOOR_REQUIRE_PYTHONS": "1" if IN_CI else ""}
    artifacts_dir = ROOT / "test-artifacts" / "packaging"
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    env["ONEDOOR_TEST_ARTIFACTS"] = str(artifacts_dir)
    session.run("pytest", "tests/release", *session.posargs, env=env)


LINT_DISTRIBUTIONS = [folder for folder in release.ALL if folder not in OWN_ENVIRONMENT]
MAX_MODULE_LINES = 400
# The modules the size rule covers: the kernel, every distribution's package, the examples.
SIZED_MODULES = ("kernel/**/*.py", "plugins/*/onedoor_*/**/*.py", "transports/*/onedoor_*/**/*.py", "examples/**/*.py")
UNSIZED_FOLDERS = {"node_modules", "build"}


def oversized_modules(root: Path = ROOT, limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    """``(path, lines)`` of every module under :data:`SIZED_MODULES` with more than ``limit`` lines."""
    found: dict[str, int] = {}
    for pattern in SIZED_MODULES:
        for path in root.glob(pattern):
            relative = path.relative_to(root)
            if UNSIZED_FOLDERS.intersection(relative.parts) or not path.is_file():
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > limit:
                found[str(relative)] = lines
    return sorted(found.items())


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on everything; mypy on every distribution's package (with its dependencies
    installed, so their types count); the import contract (``lint-imports``, configured in
    pyproject.toml); no module over :data:`MAX_MODULE_LINES` lines."""
    session.install("ruff>=0.6", "mypy>=1.10", "import-linter>=2.10", *TEST_TOOLS,
                    *[f"-e./{folder}" for folder in LINT_DISTRIBUTIONS])
    # The import graph needs every package's source, hermes' too, but not hermes' exact pins.
    session.install("--no-deps", *[f"-e./{folder}" for folder in sorted(OWN_ENVIRONMENT)])
    session.run("ruff", "check", "kernel", "plugins", "transports", "examples", "bench/loadhooks", "tests", "noxfile.py")
    packages = [str(ROOT / folder / package) if folder != "." else str(ROOT / "kernel" / package)
                for folder, package in release.ALL.items()]
    session.run("mypy", *packages)
    session.run("lint-imports")
    oversized = oversized_modules()
    if oversized:
        listed = "\n".join(f"  {path}: {lines} lines" for path, lines in oversized)
        session.error(f"modules over {MAX_MODULE_LINES} lines (split them by what they hold):\n{listed}")
    session.log(f"every module is at most {MAX_MODULE_LINES} lines")


@nox.session(python=PYTHON)
def dev(session: nox.Session) -> None:
    """A developer environment in ./.venv: every distribution installed editable (but the
    hermes backend, whose exact pins clash with pydantic-ai), the test tools, ruff and mypy.
    Then: ``. .venv/bin/activate``."""
    venv = ROOT / ".venv"
    session.run(sys.executable, "-m", "venv", "--clear", str(venv), external=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--upgrade"]
    session.run(*pip, "pip", external=True)
    editable = [f"-e./{folder}" for folder in release.PUBLISHED if folder not in OWN_ENVIRONMENT]
    session.run(*pip, *editable, *TEST_TOOLS, "ruff>=0.6", "mypy>=1.10", "nox", external=True)
    session.log(f"ready: . {venv.relative_to(ROOT)}/bin/activate  (onedoor, pytest, ruff, mypy, nox)")


@nox.session(python=False)
def bump(session: nox.Session) -> None:
    """Set the one version of every distribution: ``nox -s bump -- 0.2.0``."""
    if len(session.posargs) != 1:
        session.error("usage: nox -s bump -- NEW_VERSION")
    session.run(sys.executable, str(ROOT / "tests" / "release" / "onedoor_release.py"), "bump", session.posargs[0])


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
