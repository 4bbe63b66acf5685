"""Every direct use of slim_bindings' service: initialising it once, node and client
configs, running a node, connecting to one, creating apps and session configs.

Imported only when SLIM is actually used. Facts it relies on (slim-bindings 3.3.8):
the Rust logs go to fd 1, so stdout is pointed at stderr before the first
initialisation; later initialisations are ignored; the async app constructor is broken
(the sync one is used); a dead endpoint hangs unless the backoff has max_attempts.
"""

from __future__ import annotations

import asyncio
import datetime
import os
from typing import Any

from .errors import SlimTransportError
from .options import SlimOptions, unix_path

_initialized: bool = False


def protect_stdout() -> int:
    """Point fd 1 at stderr (native logs cannot reach stdout); return the real stdout."""
    from onedoor.builtins.stdio import protect_stdout as protect

    return protect()


def slim(log_level: str = "error") -> Any:
    """The slim_bindings module, initialised once with quiet logs.

    Native logs at or above ``log_level`` are written to fd 1: command-line entry points
    call :func:`protect_stdout` first so they land on stderr.
    """
    global _initialized
    import slim_bindings as sb

    if not _initialized:
        sb.initialize_with_configs(
            runtime_config=sb.new_runtime_config(),
            tracing_config=sb.new_tracing_config_with(log_level or "error", False, False, []),
            service_config=[sb.new_service_config()],
        )
        _initialized = True
    return sb


def seconds(value: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=value)


def describe_error(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    lines = [line.strip().lstrip("->").strip() for line in str(message).splitlines()]
    lines = [line for line in lines if line and line != "Caused by:"]
    return "; ".join(dict.fromkeys(lines))


def client_config(sb: Any, options: SlimOptions) -> Any:
    endpoint = options.endpoint
    if endpoint.startswith("https://"):
        config = sb.new_secure_client_config(endpoint)
        if options.tls_ca_file:
            config.tls.ca_source = sb.CaSource.FILE(path=options.tls_ca_file)
        config.tls.insecure_skip_verify = options.tls_insecure_skip_verify
    else:
        config = sb.new_insecure_client_config(endpoint)
    config.connect_timeout = seconds(options.connect_timeout)
    config.request_timeout = seconds(max(options.connect_timeout, 5.0))
    backoff = sb.FixedIntervalBackoff(interval=seconds(0.2), max_attempts=options.connect_attempts)
    config.backoff = sb.BackoffConfig.FIXED_INTERVAL(config=backoff)
    return config


def server_config(sb: Any, options: SlimOptions) -> Any:
    endpoint = options.endpoint
    address = endpoint.split("://", 1)[1].rstrip("/")  # a node listens on host:port
    if endpoint.startswith("https://"):
        if not (options.tls_cert_file and options.tls_key_file):
            raise SlimTransportError("an https SLIM node needs -o tls_cert_file=… and -o tls_key_file=…")
        return sb.new_secure_server_config(
            address, sb.TlsSource.FILE(cert=options.tls_cert_file, key=options.tls_key_file)
        )
    if endpoint.startswith("http://"):
        return sb.new_insecure_server_config(address)
    path = unix_path(endpoint)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists():
            if _socket_alive(path):
                raise SlimTransportError(f"a SLIM node already listens on {endpoint}")
            path.unlink()
    return sb.new_insecure_server_config(endpoint)


def _socket_alive(path: Any) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
            return True
        except OSError:
            return False


async def start_node(sb: Any, options: SlimOptions) -> Any:
    """Run a node in this process on the global service; return that service."""
    service = sb.get_global_service()
    config = server_config(sb, options)
    try:
        await service.run_server_async(config)
    except sb.SlimError as exc:
        raise SlimTransportError(f"cannot start a SLIM node on {options.endpoint}: {describe_error(exc)}") from None
    path = unix_path(options.endpoint)
    if path is not None:
        for _ in range(100):  # the listener binds in the background
            if path.exists():
                break
            await asyncio.sleep(0.02)
        try:
            os.chmod(path, 0o600)
        except OSError:
            pass
    return service


def stop_node(service: Any, options: SlimOptions) -> None:
    """Stop a node started by :func:`start_node` and remove its socket file."""
    endpoint = options.endpoint
    try:
        service.stop_server(endpoint if endpoint.startswith("unix://") else endpoint.split("://", 1)[1].rstrip("/"))
    except Exception:  # noqa: BLE001 - already stopped
        pass
    path = unix_path(endpoint)
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


_shared: dict[str, list[int]] = {}  # endpoint -> [conn id, users] on the global service
_locks: dict[str, asyncio.Lock] = {}


async def acquire(sb: Any, service: Any, options: SlimOptions) -> int:
    """A connection of the global service to the node, shared by every client in the
    process (a service holds one connection per endpoint; the Python wrappers of the
    global service are new objects on every call, so the key is the endpoint)."""
    key = options.endpoint
    async with _locks.setdefault(key, asyncio.Lock()):
        entry = _shared.get(key)
        if entry is None:
            try:
                conn = await connect(sb, service, options)
            except SlimTransportError:
                existing = service.get_connection_id(options.endpoint)
                if existing is None:
                    raise
                conn = existing
            entry = _shared.setdefault(key, [conn, 0])
        entry[1] += 1
        return entry[0]


def release(service: Any, endpoint: str) -> None:
    key = endpoint
    entry = _shared.get(key)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _shared[key]
        try:
            service.disconnect(entry[0])
        except Exception:  # noqa: BLE001 - already gone
            pass


def _reachable(endpoint: str, timeout: float) -> str | None:
    """Why the node's address cannot be reached right now, or None."""
    import socket

    path = unix_path(endpoint)
    if path is not None:
        if not path.exists():
            return "the socket does not exist"
        return None if _socket_alive(path) else "nothing listens on the socket"
    address = endpoint.split("://", 1)[1].split("/", 1)[0]
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port or 443)), timeout=timeout):
            return None
    except (OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__


def node_identity(endpoint: str) -> Any:
    """What tells this node from a restarted one: the unix socket's inode."""
    path = unix_path(endpoint)
    try:
        return path.stat().st_ino if path is not None else None
    except OSError:
        return None


def node_lost(endpoint: str, identity: Any, timeout: float) -> str | None:
    """Why the node we connected to is gone (or replaced), or None if it is still there."""
    problem = _reachable(endpoint, timeout)
    if problem:
        return problem
    if identity is not None and node_identity(endpoint) != identity:
        return "a new node replaced it"
    return None


async def connect(sb: Any, service: Any, options: SlimOptions) -> int:
    """Connect a service to the node; a clear error within attempts x timeout (the
    address is checked first, so a dead node fails at once)."""
    problem = await asyncio.to_thread(_reachable, options.endpoint, options.connect_timeout)
    if problem is not None:
        raise SlimTransportError(
            f"no SLIM node at {options.endpoint} ({problem}): start one with "
            "`onedoor slim-node`, or serve with -o embed_node=true"
        )
    budget = options.connect_attempts * (options.connect_timeout + 0.5) + 2.0
    try:
        return await asyncio.wait_for(service.connect_async(client_config(sb, options)), budget)
    except TimeoutError:
        raise SlimTransportError(
            f"the SLIM node at {options.endpoint} did not answer within {budget:.0f}s"
        ) from None
    except sb.SlimError as exc:
        hint = ""
        text = describe_error(exc)
        if "certificate" in text.lower() or "tls" in text.lower():
            hint = " (untrusted certificate? pass -o tls_ca_file=CA.pem)"
        raise SlimTransportError(f"cannot reach the SLIM node at {options.endpoint}: {text}{hint}") from None


def make_app(sb: Any, service: Any, name: str, secret: str) -> Any:
    try:
        return service.create_app_with_secret(sb.Name.from_string(name), secret)
    except sb.SlimError as exc:
        raise SlimTransportError(f"cannot create the SLIM app {name}: {describe_error(exc)}") from None


def session_config(sb: Any, options: SlimOptions, metadata: dict[str, str] | None = None) -> Any:
    mls = (
        sb.MlsSettings(header_integrity_validation_percent=0, max_seen_control_message_ids_size=None)
        if options.mls
        else None
    )
    return sb.SessionConfig(
        session_type=sb.SessionType.POINT_TO_POINT,
        max_retries=options.session_retries,
        interval=seconds(options.session_interval),
        metadata=dict(metadata or {}),
        mls_settings=mls,
    )
