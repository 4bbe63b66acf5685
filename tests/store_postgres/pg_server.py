"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` into a temporary
directory, ``pg_ctl`` to start, restart and stop it, trust authentication, and a unix
socket in that directory only (no TCP port, so nothing else can reach it or collide).

PostgreSQL refuses to run as root: under root the server runs as the ``postgres`` user
(Debian's package makes it) or ``nobody``, and the directory is handed to that user.
Every wait is bounded (``pg_ctl -w -t``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

WAIT_SECONDS = 60
PORT = 5432  # names the socket file only (.s.PGSQL.5432 in the temporary directory)


def find_tool(name: str) -> str | None:
    """``name`` on PATH, else the newest of Debian's /usr/lib/postgresql/*/bin (not on PATH there)."""
    found = shutil.which(name)
    if found:
        return found
    def version(path: str) -> tuple[int, ...]:  # /usr/lib/postgresql/15/bin/initdb -> (15,)
        return tuple(int(part) for part in Path(path).parents[1].name.split(".") if part.isdigit())

    builds = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=version)
    return builds[-1] if builds else None


def missing_reason() -> str | None:
    """Why no server can be started here (a skip reason naming the tool), or None."""
    for tool in ("initdb", "pg_ctl"):
        if find_tool(tool) is None:
            return f"PostgreSQL's {tool} is not installed (Debian: apt-get install postgresql)"
    if os.geteuid() == 0 and _server_user() is None:
        return "running as root and no 'postgres' or 'nobody' user to run the PostgreSQL server as"
    return None


def _server_user() -> pwd.struct_passwd | None:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    return None


class LocalPostgres:
    """``with LocalPostgres() as pg: pg.dsn`` — a running server with an empty database."""

    def __init__(self, *, durable: bool = False, max_connections: int = 100) -> None:
        self.durable = durable  # fsync on (benchmarks); tests turn it off for speed
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="onedoor-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.user = _server_user() if os.geteuid() == 0 else None
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)

    @property
    def dsn(self) -> str:
        return f"host={self.root} port={PORT} dbname=postgres user=onedoor"

    def _run(self, *args: str) -> None:
        as_user = self.user
        done = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS + 30,
            cwd=self.root,
            user=as_user.pw_uid if as_user else None,
            group=as_user.pw_gid if as_user else None,
            extra_groups=[] if as_user else None,
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()}\n{log}")

    def _pg_ctl(self, *args: str) -> None:
        pg_ctl = find_tool("pg_ctl")
        assert pg_ctl is not None, "pg_ctl is not installed"
        self._run(pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(WAIT_SECONDS), *args)

    def start(self) -> LocalPostgres:
        initdb = find_tool("initdb")
        assert initdb is not None, "initdb is not installed"
        self._run(initdb, "-D", str(self.data), "-U", "onedoor", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
        settings = {
            "listen_addresses": "''",
            "unix_socket_directories": f"'{self.root}'",
            "port": str(PORT),
            "max_connections": str(self.max_connections),
            "fsync": "on" if self.durable else "off",
            "full_page_writes": "on" if self.durable else "off",
        }
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())
        self._pg_ctl("start")
        return self

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart -m MODE``: ``fast`` ends every session (their calls fail), then starts again."""
        self._pg_ctl("restart", "-m", mode)

    def stop(self, mode: str = "fast") -> None:
        if (self.data / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", mode)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def waiting_on_a_row_lock(dsn: str) -> bool:
    """Whether some session waits for a row lock (``SELECT … FOR UPDATE`` behind another)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'"
        ).fetchone()
    return bool(row and row[0])
