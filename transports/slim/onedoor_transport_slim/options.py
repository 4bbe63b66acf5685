"""Options of the SLIM transport, the node and the `ask` client (light: no slim import).

Every value can come from ``-o name=value``, ``ONEDOOR_SLIM_<NAME>`` or
``[options.slim]`` in onedoor.toml. The secret is never printed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from onedoor import OptionsError

MIN_SECRET = 32
DEFAULT_NAME = "agntcy/onedoor/agent"


def runtime_dir() -> Path:
    """Where the default unix socket lives: $XDG_RUNTIME_DIR/onedoor or /tmp/onedoor-UID."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base):
        return Path(base) / "onedoor"
    return Path(tempfile.gettempdir()) / f"onedoor-{os.getuid()}"


def default_endpoint() -> str:
    return "unix://" + str(runtime_dir() / "slim.sock")


@dataclass
class SlimOptions:
    name: str = field(default=DEFAULT_NAME, metadata={"help": "SLIM name served (org/namespace/agent)"})
    endpoint: str = field(
        default="",
        metadata={"help": "SLIM node: unix:///path (default: a socket in the runtime dir), http://host:port or https://host:port"},
    )
    secret: str = field(default="", metadata={"help": "shared secret, at least 32 characters", "secret": True})
    secret_file: str = field(default="", metadata={"help": "file holding the shared secret"})
    mls: bool = field(default=True, metadata={"help": "MLS end-to-end encryption (off only with mls=false)"})
    embed_node: bool = field(default=False, metadata={"help": "run a SLIM node in this process at the endpoint"})
    connect_timeout: float = field(default=5.0, metadata={"help": "seconds to reach the node, per attempt"})
    connect_attempts: int = field(default=3, metadata={"help": "tries to reach the node before giving up"})
    session_retries: int = field(default=3, metadata={"help": "SLIM retries when opening a session"})
    session_interval: float = field(
        default=0.5, metadata={"help": "seconds between those retries (a wrong secret fails after retries x interval)"}
    )
    probe_interval: float = field(default=30.0, metadata={"help": "seconds of peer silence before a liveness probe (0: never)"})
    probe_timeout: float = field(default=10.0, metadata={"help": "seconds a probe may go unanswered before the session ends"})
    max_sessions: int = field(default=256, metadata={"help": "concurrent sessions served; more are refused"})
    max_message_bytes: int = field(default=16 * 1024 * 1024, metadata={"help": "longest message accepted"})
    tls_ca_file: str = field(default="", metadata={"help": "CA bundle (PEM) to trust for an https endpoint"})
    tls_insecure_skip_verify: bool = field(default=False, metadata={"help": "https: do not verify the node's certificate"})
    tls_cert_file: str = field(default="", metadata={"help": "embedded node / slim-node over https: certificate (PEM)"})
    tls_key_file: str = field(default="", metadata={"help": "embedded node / slim-node over https: private key (PEM)"})
    log_sessions: bool = field(default=False, metadata={"help": "log each session's start and end on stderr"})
    node_check_interval: float = field(
        default=2.0, metadata={"help": "seconds between a worker's checks that its node is still there (0: never)"}
    )
    log_level: str = field(default="error", metadata={"help": "SLIM's native log level (to stderr): error, warn, info, debug"})

    def __post_init__(self) -> None:
        parts = self.name.split("/")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise OptionsError(f"SLIM name must look like org/namespace/agent, got {self.name!r}")
        if not self.endpoint:
            self.endpoint = default_endpoint()
        if not self.endpoint.startswith(("unix://", "http://", "https://")):
            raise OptionsError(
                f"SLIM endpoint must start with unix://, http:// or https://, got {self.endpoint!r}"
            )
        if self.log_level not in ("error", "warn", "info", "debug", "trace"):
            raise OptionsError(f"SLIM log_level must be error, warn, info, debug or trace, got {self.log_level!r}")
        for name in ("connect_timeout", "session_interval"):
            if getattr(self, name) <= 0:
                raise OptionsError(f"option {name!r} of 'slim' must be above 0")
        for name in ("connect_attempts", "session_retries", "max_sessions"):
            if getattr(self, name) < 1:
                raise OptionsError(f"option {name!r} of 'slim' must be at least 1")


def resolve_secret(options: SlimOptions) -> str:
    """The shared secret from the option, env (via the option) or secret_file; checked."""
    secret = options.secret
    if not secret and options.secret_file:
        try:
            secret = Path(options.secret_file).expanduser().read_text().strip()
        except OSError as exc:
            raise OptionsError(f"cannot read the SLIM secret file {options.secret_file}: {exc.strerror}") from None
    if not secret:
        raise OptionsError(
            "SLIM needs a shared secret of at least 32 characters: -o secret=…, "
            "ONEDOOR_SLIM_SECRET=… or -o secret_file=PATH"
        )
    if len(secret) < MIN_SECRET:
        raise OptionsError(
            f"the SLIM shared secret is {len(secret)} characters long; it must have at least {MIN_SECRET}"
        )
    return secret


def unix_path(endpoint: str) -> Path | None:
    return Path(endpoint[len("unix://") :]) if endpoint.startswith("unix://") else None
