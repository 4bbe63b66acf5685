"""Errors the kernel raises to doors and to the CLI. Each carries a one-line message."""

from __future__ import annotations


class OnedoorError(Exception):
    """Base class: the message is meant for the user, one line, no traceback."""


class RunRefused(OnedoorError):
    """The kernel would not start a run.

    ``reason`` is one of ``busy`` (too many concurrent runs; retry after
    ``retry_after`` seconds), ``too_large`` (message or history over the limit),
    ``invalid`` (empty message, malformed history, a run id that cannot be one),
    ``in_use`` (a client-chosen run id that is running, waiting for answers, or was used
    recently), ``not_found`` (a thread that is not the caller's), ``pending_questions``
    (the thread's run waits for answers: a new message is never taken as one),
    ``unsupported_content`` (a part of a kind or media type the backend or server does not
    take: :mod:`onedoor.content`), ``state_conflict`` (a state sent for a thread whose
    state has changed since the version it was based on) or ``draining`` (the server is
    shutting down: it finishes its runs but starts none; retry on another). Doors map these to their own
    error shapes (HTTP 429, 413, 422, 409, 404, 415, 503; JSON-RPC invalid params…); an HTTP door
    uses the transport's one table.
    """

    def __init__(self, reason: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after = retry_after


class ContractViolation(OnedoorError):
    """A backend's event stream broke the port's contract."""


class PluginError(OnedoorError):
    """A plugin could not be found, loaded, or is of the wrong kind."""


class CompositionError(OnedoorError):
    """A door and a transport that cannot work together, or bad serve options."""


class OptionsError(OnedoorError):
    """An unknown, missing or malformed option."""
