"""Several real `onedoor serve` processes on one PostgreSQL, behind a real nginx or HAProxy
rendered from the configuration docs/deploy.md tells users to run (docs/deploy/*.conf).

``with Cluster(tmp_path, servers=3, balancer="nginx") as cluster:`` starts PostgreSQL,
three servers (ports chosen by the OS) and the balancer on a free port; ``cluster.url``
is the balancer, ``cluster.servers`` the processes (restart one with
``cluster.restart(i)``, kill one with ``cluster.kill(i)``), ``cluster.upstreams()`` the
server each request went to (nginx's access log). Every wait is bounded.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from onedoor_test_support import free_port, wait_for, wait_for_port
from onedoor_transport_http.testing import ServerProcess, start_server

ROOT = Path(__file__).parents[2]
TEMPLATES = ROOT / "docs" / "deploy"
TOKEN = "deploy-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def balancer_missing(balancer: str) -> str | None:
    """Why ``balancer`` cannot run here (a skip reason naming the tool), or None."""
    if shutil.which(balancer) is None and not Path(f"/usr/sbin/{balancer}").exists():
        return f"{balancer} is not installed (Debian: apt-get install {balancer})"
    return None


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class Cluster:
    def __init__(self, tmp: Path, dsn: str, *, servers: int = 3, balancer: str = "nginx", doors: tuple[str, ...] = ("rest",),
                 options: tuple[str, ...] = ()) -> None:
        self.tmp = tmp
        self.dsn = dsn
        self.count = servers
        self.balancer = balancer
        self.doors = doors
        self.options = options
        self.servers: list[ServerProcess | None] = []
        self.ports: list[int] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.run_dir = tmp / balancer
        self._balancer: subprocess.Popen | None = None

    # -- the servers ------------------------------------------------------------------------
    def _args(self, port: int) -> list[str]:
        args = [arg for door in self.doors for arg in ("--door", door)]
        args += ["--token", TOKEN, "--store", "postgres", "-o", f"postgres.dsn={self.dsn}", "--port", str(port)]
        for option in self.options:
            args += ["-o", option]
        return args

    def _start(self, index: int) -> ServerProcess:
        server = start_server(self._args(self.ports[index]), env={"ONEDOOR_DATA_DIR": str(self.tmp / f"data-{index}")})
        server.__enter__()
        return server

    def restart(self, index: int, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        """Stop server ``index`` (SIGTERM: it drains) and start it again on the same port."""
        server = self.servers[index]
        if server is not None:
            server.proc.send_signal(sig)
            server.proc.wait(timeout)
            server.__exit__(None, None, None)
        self.servers[index] = self._start(index)

    def kill(self, index: int) -> None:
        """kill -9 of server ``index``: no drain, no goodbye."""
        server = self.servers[index]
        assert server is not None
        server.proc.kill()
        server.proc.wait(30)
        server.__exit__(None, None, None)
        self.servers[index] = None

    # -- the balancer -----------------------------------------------------------------------
    def _render(self) -> Path:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.balancer == "nginx":
            template = (TEMPLATES / "nginx.conf").read_text("utf-8")
            servers = "\n".join(f"        server 127.0.0.1:{port} max_fails=3 fail_timeout=2s;" for port in self.ports)
            target = self.run_dir / "nginx.conf"
        else:
            template = (TEMPLATES / "haproxy.cfg").read_text("utf-8")
            servers = "\n".join(f"    server s{i} 127.0.0.1:{port} check" for i, port in enumerate(self.ports))
            target = self.run_dir / "haproxy.cfg"
        text = template.replace("{{RUN_DIR}}", str(self.run_dir)).replace("{{PORT}}", str(self.port))
        text = text.replace("{{SERVERS}}", servers)
        if self.balancer == "nginx" and os.geteuid() == 0:
            text = "user root;\n" + text  # its workers write the run directory of this test
        target.write_text(text, "utf-8")
        return target

    def _start_balancer(self) -> None:
        config = self._render()
        if self.balancer == "nginx":
            cmd = [_binary("nginx"), "-p", str(self.run_dir), "-c", str(config), "-g", "daemon off;"]
        else:
            cmd = [_binary("haproxy"), "-f", str(config), "-db"]
        self._balancer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for_port(self.port, what=self.balancer)
        except AssertionError:
            self._balancer.kill()
            raise AssertionError(f"{self.balancer} did not start: {self._balancer.communicate()[0]}") from None

    def upstreams(self) -> list[str]:
        """``METHOD PATH STATUS UPSTREAM`` of each request nginx passed on, in order."""
        log = self.run_dir / "access.log"
        return log.read_text("utf-8").splitlines() if log.exists() else []

    def balancer_log(self, lines: int = 30) -> str:
        """The last lines of the balancer's error log (nginx) or output (HAProxy), for a failure message."""
        log = self.run_dir / "error.log"
        return "\n".join(log.read_text("utf-8", errors="replace").splitlines()[-lines:]) if log.exists() else ""

    # -- the whole -----------------------------------------------------------------------------
    def __enter__(self) -> "Cluster":
        try:
            self.ports = [free_port() for _ in range(self.count)]
            for index in range(self.count):
                self.servers.append(None)
                self.servers[index] = self._start(index)
            self._start_balancer()
            wait_for(lambda: httpx.get(self.url + "/readyz", timeout=5).status_code == 200, "the balancer answers")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._balancer is not None:
            self._balancer.terminate()
            try:
                self._balancer.wait(15)
            except subprocess.TimeoutExpired:
                self._balancer.kill()
        for server in self.servers:
            if server is not None:
                server.__exit__(None, None, None)


def client(cluster: Cluster, timeout: float = 60) -> httpx.Client:
    return httpx.Client(base_url=cluster.url, headers=AUTH, timeout=timeout)


def python() -> str:
    return sys.executable


def monotonic() -> float:
    return time.monotonic()
