"""What the kernel checks before a run starts: its input and the run id a door passes on.

Each check raises :class:`~onedoor.errors.RunRefused` before anything runs, so a door
answers its protocol's refusal and the backend never sees the input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import RunRefused
from ..ids import is_run_id
from ..limits import Limits
from ..messages import Message, normalize_history
from ..questions import clip

if TYPE_CHECKING:
    from ..content import Part


def check_content(limits: Limits, message: Any, accepts: frozenset[str], backend: str) -> tuple[str, tuple[Part, ...]]:
    """A message's text and parts (a string, or a list of parts: :mod:`onedoor.content`),
    under the content limits, and only of kinds the backend takes (or that text stands for);
    RunRefused (``invalid``, ``too_large``, ``unsupported_content``) otherwise."""
    if isinstance(message, str):
        return message, ()
    if not isinstance(message, (list, tuple)):
        raise RunRefused("invalid", "the message must be text or a list of parts")
    from ..content import ContentError, ContentLimits, needs_backend, parse_content  # (a message of parts only)

    try:
        text, parts = parse_content(message, ContentLimits.of(limits))
    except ContentError as exc:
        reason = {"too_large": "too_large", "unsupported": "unsupported_content"}.get(exc.reason, "invalid")
        raise RunRefused(reason, str(exc)) from None
    missing = sorted(needs_backend(parts) - accepts)
    if missing:
        takes = ", ".join(sorted(accepts)) or "text only"
        raise RunRefused("unsupported_content", f"backend {backend!r} does not take {', '.join(missing)} parts "
                         f"(it takes: {takes})")
    return text, parts


def check_input(limits: Limits, message: Any, history: Iterable[Any] | None) -> list[Message]:
    """The normalized history; RunRefused for a message or history the kernel will not run
    (``message`` is the message's text, :func:`check_content`'s first result)."""
    if not isinstance(message, str):
        raise RunRefused("invalid", "the message must be a string")
    if len(message) > limits.max_message_chars:
        raise RunRefused(
            "too_large", f"the message has {len(message)} characters; the limit is {limits.max_message_chars}"
        )
    try:
        past = normalize_history(history)
    except ValueError as exc:
        raise RunRefused("invalid", f"bad history: {exc}") from None
    if not message.strip() and not (past and past[-1].role == "tool"):
        # An empty message is a continuation only after tool results (a client
        # answering frontend tools); otherwise there is nothing to answer.
        raise RunRefused("invalid", "the message is empty")
    total = len(message) + sum(len(m.content) for m in past)
    if total > limits.max_input_chars:
        raise RunRefused(
            "too_large", f"message and history have {total} characters; the limit is {limits.max_input_chars}"
        )
    return past


def check_run_id(run_id: Any, in_use: Callable[[str], bool], kept: Callable[[str], bool]) -> None:
    """A run id a door passes on from its client: usable in a journal cursor (else
    ``invalid``), and neither in use (running or waiting for answers) nor used recently (a
    journal still kept), by anyone (``in_use``): a run never continues another's events."""
    if not is_run_id(run_id):
        raise RunRefused("invalid", f"a run id is 1-128 letters, digits or -_. (got {clip(repr(run_id))})")
    if in_use(run_id):
        raise RunRefused("in_use", f"run id {clip(run_id)} is in use (running or waiting for answers)")
    if kept(run_id):
        raise RunRefused("in_use", f"run id {clip(run_id)} was used recently; choose a new one")


__all__ = ["check_content", "check_input", "check_run_id"]
