"""Helpers for the kernel tests: fake plugin distributions and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def make_dist(root: Path, name: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
    """Write an installed-looking distribution (dist-info + modules) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    lines = []
    for group, items in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in items.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines))
    for filename, source in modules.items():
        (root / filename).write_text(textwrap.dedent(source))
    return root


def run_cli(*args: str, env: dict[str, str] | None = None, extra_path: Path | None = None, input: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    if extra_path is not None:
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), full_env.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "onedoor", *args],
        capture_output=True, text=True, env=full_env, input=input, timeout=timeout,
    )
