"""One version for every distribution, and compatible-release pins between them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import onedoor_release as release


def test_every_distribution_has_the_one_version_and_pins_it():
    assert release.version_problems() == []


def test_every_onedoor_dependency_is_pinned_compatibly():
    pins = [(folder, str(req)) for folder in release.ALL for req in release.requirements(folder) if release.is_ours(req)]
    assert ("plugins/door-rest", f"onedoor-transport-http~={release.version()}") in pins
    assert all(pin.endswith(f"~={release.version()}") for _, pin in pins), pins


def test_the_kernel_reports_the_one_version():
    assert release.kernel_version_attribute() == release.version()  # `onedoor --version` prints it


def test_bump_is_one_command_and_leaves_nothing_behind(tmp_path: Path):
    copy = tmp_path / "repo"
    for folder in release.ALL:
        (copy / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(release.ROOT / folder / "pyproject.toml", copy / folder / "pyproject.toml")
    (copy / "kernel" / "onedoor").mkdir(parents=True)
    shutil.copy(release.KERNEL_INIT, copy / "kernel" / "onedoor" / "__init__.py")
    script = Path(release.__file__)
    env = {"ONEDOOR_RELEASE_ROOT": str(copy), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script), "bump", "7.8.9"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("wrote ") == len(release.ALL) + 1
    check = subprocess.run([sys.executable, str(script), "version"], env=env, capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "7.8.9"
    rest = (copy / "plugins" / "door-rest" / "pyproject.toml").read_text()
    assert '"onedoor-kernel~=7.8.9"' in rest and '"onedoor-transport-http~=7.8.9"' in rest
    assert '__version__ = "7.8.9"' in (copy / "kernel" / "onedoor" / "__init__.py").read_text()
    bad = subprocess.run([sys.executable, str(script), "bump", "not a version"], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
