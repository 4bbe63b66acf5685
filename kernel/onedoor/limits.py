"""The limits a kernel enforces; every door inherits them (``[limits]`` in onedoor.toml,
``-o limits.NAME=VALUE``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Limits:
    """Limits a kernel enforces; every door inherits them."""

    max_concurrent_runs: int = 64  # a backend that ignores cancel holds its slot until it really ends
    max_message_chars: int = 100_000
    max_input_chars: int = 1_000_000  # message plus history
    idle_timeout: float = 120.0  # seconds a backend may stay silent
    run_timeout: float | None = 3600.0
    cancel_grace: float = 5.0  # seconds a cancelled backend gets to stop before the door gets its ending anyway
    queue_size: int = 1024  # events buffered between backend and door (backpressure)
    retry_after: float = 1.0  # advice given with a "busy" refusal
    max_parked_runs: int = 32  # runs waiting for answers between requests; they hold run slots too, so keep it
    # well below max_concurrent_runs: past it, questions get the door's fallback answer
    question_ttl: float = 600.0  # seconds a parked run waits for its answers before it ends cancelled
    journal_retention: float = 300.0  # seconds a run's journal is kept after it ends (reconnects, reattach)
    max_journal_events: int = 100_000  # events one run's journal holds; older ones go first
    max_kept_journal_events: int = 1_000_000  # events all ended runs' journals hold together; oldest runs go first
    max_parts: int = 32  # parts (text, images, files…) one message may hold
    max_part_bytes: int = 10 * 1024 * 1024  # bytes one part (an image, a file) may hold
    max_content_bytes: int = 20 * 1024 * 1024  # bytes all the parts of one message may hold
    media_types: tuple[str, ...] = field(default=("*/*",))  # media types a part may be: "image/*", "application/pdf"…
    max_state_chars: int = 1_000_000  # characters of a run's (and a thread's) shared state, as JSON


__all__ = ["Limits"]
