"""Install every distribution *by name* from a local package index, as a user of the
public index would, on Python 3.11, 3.12 and 3.13.

The index is a set of folders for ``pip --no-index --find-links``: our built wheels
(``ONEDOOR_DIST``, from ``nox -s packaging``), their dependencies for that Python
(downloaded once into ``~/.cache/onedoor-tests/index/``, again only when our
requirements change) and the unrelated ``onedoor`` 0.8.1 from the public index, which a
plugin must never resolve to. Each install runs in a fresh virtualenv, made the way the
README's quick start makes it (``venv --without-pip`` + ``pip --python``).

Figures (wheel size, dependency counts, installed size, and the time from
``pip install onedoor-door-agui`` to the chat page answering) go to
``$ONEDOOR_TEST_ARTIFACTS/install-figures.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from email.parser import Parser
from pathlib import Path

import onedoor_release as release
import pytest
from onedoor_test_support import free_port, wait_for

DIST = Path(os.environ["ONEDOOR_DIST"]) if os.environ.get("ONEDOOR_DIST") else None
pytestmark = [
    pytest.mark.skipif(DIST is None, reason="needs built distributions in ONEDOOR_DIST: run `nox -s packaging`"),
    pytest.mark.timeout(1800),  # the first run downloads every dependency for three Pythons
]

VERSION = release.version()
PYTHONS = dict(item.split("=", 1) for item in os.environ.get("ONEDOOR_PYTHONS", "").split(";") if "=" in item)
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "onedoor-tests" / "index"
FOREIGN = "onedoor==0.8.1"
NAMES = {folder: release.pyproject(folder)["project"]["name"] for folder in release.PUBLISHED}
# hermes-agent pins openai and pydantic exactly: its dependencies are fetched on their own
APART = {"onedoor-backend-hermes"}
FIGURES: dict[str, dict] = {}


def interpreter(version: str) -> str:
    path = PYTHONS.get(version)
    if not path:
        if os.environ.get("ONEDOOR_REQUIRE_PYTHONS") == "1":
            pytest.fail(f"Python {version} is missing (CI must run every supported Python)")
        pytest.skip(f"Python {version} is not installed here")
    return path


def run(*args: str | Path, timeout: float = 900, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def wheels() -> dict[str, Path]:
    found = {}
    for path in sorted(DIST.glob("*.whl")):  # type: ignore[union-attr]
        with zipfile.ZipFile(path) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            found[Parser().parsestr(archive.read(meta).decode())["Name"]] = path
    return found


def requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(archive.read(meta).decode()).get_all("Requires-Dist") or []


_index_lock = threading.Lock()


def index(version: str) -> list[str]:
    """``--find-links`` folders for this Python; downloads what is missing, once."""
    python = interpreter(version)
    ours = wheels()
    folder = CACHE / f"py{version}"
    stamp_text = json.dumps({name: requires(path) for name, path in ours.items()} | {"foreign": FOREIGN}, sort_keys=True)
    stamp = hashlib.sha256(stamp_text.encode()).hexdigest()
    with _index_lock:
        if (folder / ".stamp").is_file() and (folder / ".stamp").read_text() == stamp:
            return [str(DIST), str(folder)]
        folder.mkdir(parents=True, exist_ok=True)
        together = [str(path) for name, path in ours.items() if name not in APART]
        download = [python, "-m", "pip", "download", "--quiet", "--dest", folder]
        run(*download, *together)
        for name in APART:
            run(*download, ours[name], ours["onedoor-kernel"])
        for path in ours.values():  # pip download copies our own wheels too: only ONEDOOR_DIST may hold them
            (folder / path.name).unlink(missing_ok=True)
        # the other project: its wheel (and, where it installs, what it needs) sits in the
        # index too, so that a wrong name would resolve to it instead of failing
        foreign = [*download, "--only-binary=:all:", "--python-version", "3.12", "--no-deps", FOREIGN]
        run(*foreign)
        if version != "3.11":
            run(*download, FOREIGN)
        (folder / ".stamp").write_text(stamp)
    return [str(DIST), str(folder)]


class Venv:
    """A fresh virtualenv without pip of its own; the base interpreter's pip installs into it."""

    def __init__(self, version: str, where: Path) -> None:
        self.version = version
        self.base = interpreter(version)
        self.path = where
        run(self.base, "-m", "venv", "--without-pip", where)
        self.python = where / "bin" / "python"

    def pip(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(self.base, "-m", "pip", "--python", self.python, *args, check=check)

    def install(self, *names: str) -> float:
        started = time.perf_counter()
        links = [arg for folder in index(self.version) for arg in ("--find-links", folder)]
        self.pip("install", "--isolated", "--no-index", *links, *names)
        return time.perf_counter() - started

    def distributions(self) -> dict[str, str]:
        code = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
        return json.loads(run(self.python, "-c", code).stdout)

    def onedoor(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(self.path / "bin" / "onedoor", *args, check=check, timeout=120)

    def site_packages_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.glob("lib/python*/site-packages/**/*") if p.is_file())


class Server:
    """`onedoor serve ...` from a venv, until it says where it listens (on stdout)."""

    def __init__(self, venv: Venv, *args: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(venv.path / "bin" / "onedoor"), "serve", "--port", str(self.port), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        try:
            wait_for(lambda: any("listening on" in line for line in self.lines) or self.proc.poll() is not None,
                     "`onedoor serve` to say it is listening", timeout=60)
            assert self.proc.poll() is None, f"`onedoor serve` ended:\n{''.join(self.lines)}"
        except BaseException:
            self.stop()
            raise
        self.base = f"http://127.0.0.1:{self.port}"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def get(self, path: str) -> tuple[int, str, str]:
        with urllib.request.urlopen(self.base + path, timeout=30) as reply:
            return reply.status, reply.headers.get("content-type", ""), reply.read().decode()

    def post_json(self, path: str, body: dict) -> tuple[int, dict]:
        request = urllib.request.Request(self.base + path, json.dumps(body).encode(), {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)


def entry_points(folder: str) -> set[str]:
    groups = release.pyproject(folder)["project"].get("entry-points", {})
    return {name for group, items in groups.items() if group in ("onedoor.backends", "onedoor.doors", "onedoor.transports") for name in items}


PY_VERSIONS = ["3.11", "3.12", "3.13"]
# Every distribution is pure Python and needs Python >= 3.11: installing each one at
# both ends of the supported range covers what lies between (CI time); the serve tests
# below run on every Python.
INSTALL_VERSIONS = [PY_VERSIONS[0], PY_VERSIONS[-1]]


@pytest.mark.parametrize("version", INSTALL_VERSIONS)
@pytest.mark.parametrize("folder", list(release.PUBLISHED))
def test_install_by_name_brings_our_kernel(folder, version, tmp_path):
    name = NAMES[folder]
    requires_python = release.pyproject(folder)["project"]["requires-python"]
    venv = Venv(version, tmp_path / "venv")
    seconds = venv.install(name)
    installed = venv.distributions()
    assert installed.get(name) == VERSION, installed
    assert "onedoor" not in installed, f"{name} pulled in the other project's `onedoor`: {installed}"
    assert venv.pip("check").returncode == 0
    if name != "onedoor-fake-model-server":  # test support: stdlib only, no kernel
        assert installed.get("onedoor-kernel") == VERSION, installed
        version_line = venv.onedoor("--version")
        assert version_line.stdout.strip() == f"onedoor {VERSION}" and "warning" not in version_line.stderr
        listed = json.loads(venv.onedoor("plugins", "--json").stdout)
        mine = {p["name"] for p in listed if p["distribution"] == name}
        assert entry_points(folder) <= mine, listed
    else:
        run(venv.python, "-c", "import onedoor_fake_model_server")
    if version == "3.11":
        wheel = wheels()[name]
        direct = [r for r in requires(wheel) if "extra ==" not in r]
        FIGURES[name] = {
            "wheel_kb": wheel.stat().st_size / 1024, "direct": len(direct), "transitive": len(installed) - 1,
            "installed_mb": venv.site_packages_bytes() / 2**20, "install_s": seconds, "requires_python": requires_python,
        }
        write_figures()


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_door_agui_alone_serves_the_chat_page(version, tmp_path):
    started = time.perf_counter()
    venv = Venv(version, tmp_path / "venv")
    venv.install("onedoor-door-agui")
    server = Server(venv)
    try:
        status, kind, page = server.get("/agui/")
        answered = time.perf_counter() - started
        assert status == 200 and kind.startswith("text/html")
        assert page.count("<script>") == 1 and len(page) > 100_000  # the page with its bundle inlined
        notices = list(venv.path.glob("lib/python*/site-packages/onedoor_door_agui-*.dist-info/licenses/THIRD-PARTY-NOTICES.txt"))
        assert notices and "@ag-ui/client" in notices[0].read_text(), "the bundle's third-party notices are not in the wheel"
    finally:
        server.stop()
    FIGURES.setdefault("timings", {})[f"pip install onedoor-door-agui -> chat page answers, Python {version}"] = answered
    write_figures()


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_door_rest_alone_serves_rest(version, tmp_path):
    venv = Venv(version, tmp_path / "venv")
    venv.install("onedoor-door-rest")
    assert "onedoor-transport-http" in venv.distributions()
    server = Server(venv, "--door", "rest")
    try:
        status, body = server.post_json("/rest/chat", {"message": "hello from the index"})
        assert status == 200 and body["stop_reason"] == "end_turn" and "hello from the index" in body["reply"]
    finally:
        server.stop()


@pytest.mark.parametrize("version", ["3.12", "3.13"])  # the other project needs Python >= 3.12
@pytest.mark.parametrize("order", ["ours-first", "theirs-first"])
def test_the_other_onedoor_is_named_at_start(version, order, tmp_path):
    venv = Venv(version, tmp_path / "venv")
    for name in (["onedoor-kernel", FOREIGN] if order == "ours-first" else [FOREIGN, "onedoor-kernel"]):
        venv.install(name)
    result = venv.onedoor("--version", check=False)
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "'onedoor' 0.8.1" in warnings[0] and "pip uninstall onedoor" in warnings[0], result.stderr


def write_figures() -> None:
    out = Path(os.environ.get("ONEDOOR_TEST_ARTIFACTS") or ".") / "install-figures.md"
    rows = ["| distribution | wheel | direct deps | transitive deps | installed (venv site-packages) | pip install (s) |",
            "|---|---|---|---|---|---|"]
    for name, f in sorted((k, v) for k, v in FIGURES.items() if k != "timings"):
        rows.append(f"| {name} | {f['wheel_kb']:.0f} KB | {f['direct']} | {f['transitive']} | {f['installed_mb']:.1f} MB | {f['install_s']:.1f} |")
    for what, seconds in sorted(FIGURES.get("timings", {}).items()):
        rows.append(f"\n{what}: {seconds:.1f} s")
    out.write_text("\n".join(rows) + "\n")
    print(f"figures: {out}", file=sys.stderr)
