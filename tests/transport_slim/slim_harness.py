"""Helpers for the SLIM transport tests: a node and workers as real processes on a unix
socket in a short temporary directory; clients run in the test process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from onedoor_test_support import wait_for

HERE = Path(__file__).parent
LAUNCHER = HERE / "slim_test_launcher.py"
SECRET = "onedoor-slim-test-secret-0123456789abcdef"
NAME = "agntcy/onedoor/agent"


class Proc:
    """A child process whose stderr goes to a file we can poll."""

    def __init__(
        self, argv: list[str], log: Path, env: dict[str, str] | None = None, stdout: Path | None = None, wrapped: bool = False
    ) -> None:
        self.log = log
        self.wrapped = wrapped
        self.stdout_path = stdout or log.with_suffix(".out")
        full_env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET, "PYTHONUNBUFFERED": "1", **(env or {})}
        with open(log, "wb") as err, open(self.stdout_path, "wb") as out:
            self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=full_env)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def wait_for(self, needle: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} not seen (exit code {self.popen.poll()}); stderr:\n{self.text()}")

    def count(self, needle: str) -> int:
        return self.text().count(needle)

    def wait_count(self, needle: str, n: int, timeout: float = 20.0) -> int:
        """Wait until ``needle`` is in the log ``n`` times; the count (raise, naming it, if never)."""
        try:
            wait_for(lambda: self.count(needle) >= n, f"{needle!r} {n} times in {self.log}", timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc} (seen {self.count(needle)}); stderr:\n{self.text()}") from None
        return self.count(needle)

    def children(self) -> list[int]:
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return []
        return [int(pid) for pid in text.split()]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.wrapped:  # e.g. strace: stop the real process first
            for child in self.children():
                try:
                    os.kill(child, signal.SIGKILL)
                except OSError:
                    pass
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
                raise AssertionError(f"process {self.pid} did not stop within {timeout} s:\n{self.text()}")
        return self.popen.returncode

    def kill(self) -> None:
        if self.wrapped:
            self.stop()
            return
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(5)


def cli(*args: str) -> list[str]:
    return [sys.executable, str(LAUNCHER), *args]


class Cluster:
    """A node plus any number of workers, all cleaned up at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.endpoint = f"unix://{root}/node.sock"
        self.procs: list[Proc] = []
        self.node: Proc | None = None

    def start_node(self, wrapper: list[str] = ()) -> Proc:
        proc = Proc([*wrapper, *cli("slim-node", "--endpoint", self.endpoint)], self.root / "node.err", wrapped=bool(wrapper))
        self.procs.append(proc)
        proc.wait_for("listening on", timeout=30)
        self.node = proc
        return proc

    def worker(self, door: str = "mcp", *extra: str, env: dict[str, str] | None = None, wait: bool = True) -> Proc:
        index = len(self.procs)
        argv = cli("serve", "--door", door, "--transport", "slim", "-o", f"endpoint={self.endpoint}", "-o", "log_sessions=true", *extra)
        outcomes = self.root / f"outcomes-{index}.jsonl"
        proc = Proc(argv, self.root / f"worker-{index}.err", env={"ONEDOOR_TEST_OUTCOMES": str(outcomes), **(env or {})})
        proc.outcomes = outcomes  # type: ignore[attr-defined]
        self.procs.append(proc)
        if wait:
            proc.wait_for("serving door", timeout=30)
        return proc

    def options(self, **overrides: Any) -> Any:
        from onedoor_transport_slim.options import SlimOptions

        values: dict[str, Any] = dict(
            endpoint=self.endpoint, secret=SECRET, probe_interval=2.0, probe_timeout=3.0,
            session_retries=3, session_interval=0.5, connect_attempts=2, connect_timeout=2.0,
        )
        values.update(overrides)
        return SlimOptions(**values)

    def close(self) -> None:
        for proc in reversed(self.procs):
            try:
                proc.stop(timeout=5)
            except AssertionError:
                pass
