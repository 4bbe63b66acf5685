"""Loading hermes-agent for embedding: isolated home, host logging untouched.

hermes reads ``HERMES_HOME`` (else ~/.hermes) when its modules load and when an agent
starts, and its logging setup adds handlers to the root logger and raises its level.
:func:`load_aiagent` sets the home first and :func:`host_logging_kept` undoes any
change hermes makes to the host's logging while importing or building an agent.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

_lock = threading.RLock()

CONFIG = """\
# Written by onedoor-backend-hermes. onedoor owns this directory; edit freely.
model:
  context_length: {context_length}
agent:
  environment_probe: false   # it runs pip/python subprocesses to describe this machine
security:
  # tirith, hermes' command scanner, downloads its binary from GitHub on first use.
  # Install it yourself and set tirith_enabled: true (and tirith_path) to use it.
  tirith_enabled: false
"""


def prepare_home(home: str, context_length: int) -> Path:
    """Create the isolated home and its config.yaml (kept if it already exists)."""
    path = Path(home)
    path.mkdir(parents=True, exist_ok=True)
    config = path / "config.yaml"
    if not config.exists():
        config.write_text(CONFIG.format(context_length=context_length))
    return path


@contextmanager
def host_logging_kept() -> Iterator[None]:
    """Restore the root logger (level, handlers), existing loggers' levels and logging.disable."""
    with _lock:
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        manager = logging.Logger.manager
        disabled = manager.disable
        levels = {
            name: lg.level for name, lg in list(manager.loggerDict.items()) if isinstance(lg, logging.Logger)
        }
        try:
            yield
        finally:
            root.setLevel(level)
            for handler in list(root.handlers):
                if handler not in handlers:
                    root.removeHandler(handler)
            for name, old in levels.items():
                lg = manager.loggerDict.get(name)
                if isinstance(lg, logging.Logger) and lg.level != old:
                    lg.setLevel(old)
            if manager.disable != disabled:
                logging.disable(disabled)


def load_aiagent(home: str, context_length: int) -> Any:
    """Import hermes' AIAgent with HERMES_HOME pointing at ``home``."""
    with _lock:
        prepare_home(home, context_length)
        os.environ["HERMES_HOME"] = home
        with host_logging_kept():
            from run_agent import AIAgent
        return AIAgent


class _StdoutGuard:
    """sys.stdout stand-in: writes from hermes' threads go to stderr, the rest pass through.

    hermes has bare ``print()`` calls (e.g. when it reaches max_iterations); the door's
    stdout must carry only the door's output.
    """

    def __init__(self, real: Any) -> None:
        self._real = real
        self.threads: set[int] = set()

    def _target(self) -> Any:
        return (sys.stderr or self._real) if threading.get_ident() in self.threads else self._real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def writelines(self, lines: Any) -> None:
        self._target().writelines(lines)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


_guard: _StdoutGuard | None = None


@contextmanager
def prints_to_stderr() -> Iterator[None]:
    """While this thread runs hermes, its prints go to stderr instead of stdout."""
    global _guard
    with _lock:
        if _guard is None or sys.stdout is not _guard:
            _guard = _StdoutGuard(sys.stdout)
            sys.stdout = _guard
        guard = _guard
    ident = threading.get_ident()
    guard.threads.add(ident)
    try:
        yield
    finally:
        guard.threads.discard(ident)


def build_agent(home: str, context_length: int, **kwargs: Any) -> Any:
    """A new AIAgent, built for embedding (quiet, nothing printed to stdout)."""
    AIAgent = load_aiagent(home, context_length)
    with _lock, host_logging_kept():
        os.environ["HERMES_HOME"] = home
        agent = AIAgent(**kwargs)
    agent.suppress_status_output = True
    log = logging.getLogger("onedoor.hermes")
    agent._print_fn = lambda *args, **_kw: log.debug(" ".join(str(a) for a in args))
    return agent
