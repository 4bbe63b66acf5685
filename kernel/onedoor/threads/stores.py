"""Thread stores as plugins: the ``onedoor.stores`` entry-point group, and the built-in one.

A store plugin is a factory: ``factory(options) -> ThreadStore`` with an ``Options``
dataclass (the same option machinery as backends: ``-o sqlite.path=…`` or
``[options.sqlite]`` in onedoor.toml). ``onedoor serve`` picks one with ``--store NAME``
(or ``store = "NAME"`` in onedoor.toml); the default is ``sqlite``, built into the
kernel: one file in onedoor's data directory, no server to start. ``--store none``
serves without threads (every door then works statelessly). ``onedoor.plugins.make_store``
loads a store by name.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_STORE = "sqlite"
NO_STORE = "none"
THREADS_FILE = "threads.sqlite3"


def data_dir(configured: str = "") -> Path:
    """The directory for onedoor's data: ``configured``, ``$ONEDOOR_DATA_DIR``, or the
    platform's user data directory (XDG on Linux)."""
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get("ONEDOOR_DATA_DIR")
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "onedoor"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / "onedoor"
    return Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "onedoor"


@dataclass
class SQLiteOptions:
    path: str = field(default="", metadata={"help": f"the SQLite file (default: DATA_DIR/{THREADS_FILE})"})
    max_thread_chars: int = field(default=64_000_000, metadata={
        "help": "largest thread: characters of text, plus the bytes of its images and files"})
    busy_timeout: float = field(
        default=30.0, metadata={"help": "seconds a call waits while another process holds the file's write lock"}
    )
    shared_journal: bool = field(
        default=False,
        metadata={"help": "keep run journals in the file too, so servers sharing it can reattach each other's readers"},
    )

    def __post_init__(self) -> None:
        if self.max_thread_chars < 1000:
            raise ValueError("max_thread_chars must be at least 1000")
        if not self.busy_timeout > 0:
            raise ValueError("busy_timeout must be more than 0 seconds")


def sqlite(options: SQLiteOptions | None = None) -> Any:
    """The built-in ``sqlite`` store plugin."""
    from .sqlite import SQLiteThreadStore

    options = options or SQLiteOptions()
    path = Path(options.path).expanduser() if options.path else data_dir() / THREADS_FILE
    return SQLiteThreadStore(path, max_thread_chars=options.max_thread_chars, shared_journal=options.shared_journal,
                             busy_timeout=options.busy_timeout)


sqlite.Options = SQLiteOptions  # type: ignore[attr-defined]


__all__ = ["DEFAULT_STORE", "NO_STORE", "SQLiteOptions", "THREADS_FILE", "data_dir", "sqlite"]
