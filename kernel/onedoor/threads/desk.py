"""The thread calls doors make, for one principal at a time (``kernel.threads``).

Every door that names threads does the same few things with them; they are here once:

- :meth:`ThreadDesk.open`: the caller's thread, or (``create=True``) a new one with a
  chosen id, race-safe (two first requests on one new id share the thread one of them
  made; an id another principal holds is ``taken``, and their thread is never read);
- :meth:`ThreadDesk.page`: a page of the caller's threads, newest first, and the id to
  pass as ``before`` for the next page (None on the last page);
- :meth:`ThreadDesk.delete`: the thread goes, its runs are cancelled and their journals
  (which hold its text) dropped;
- :meth:`ThreadDesk.state` / :meth:`set_state` / :meth:`patch_state`: the thread's shared
  state (:mod:`onedoor.state`) between runs, compare-and-set on its version.

Every refusal is a :class:`~onedoor.threads.ThreadError`; ``no_threads`` when the server
keeps none (``--store none``). Doors map reasons to their protocol in one table (the HTTP
transport's ``door_parts``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Sequence

from ..content import Part
from ..messages import Message
from ..state import apply_patch, checked_state, state_chars
from .leases import UNANSWERED, turn_leases
from .model import Thread, ThreadError, ThreadStore, ThreadSummary, check_thread_id, keeps_state
from .turns import append_turn

NO_THREADS = "this server keeps no threads (it was started with --store none)"
MAX_PAGE = 500  # threads in one page, at most


@dataclass(frozen=True)
class ThreadPage:
    threads: list[ThreadSummary]
    next_before: str | None  # pass as ``before`` for the next page; None: this is the last


def _no_forget(thread_id: str, principal: str) -> int:
    return 0


class ThreadDesk:
    """``kernel.threads``: a store's threads as doors use them (see the module docstring).
    ``forget(thread_id, principal)`` is called after a delete (the kernel cancels the
    thread's runs and drops their journals)."""

    def __init__(
        self, store: ThreadStore | None, forget: Callable[[str, str], int] = _no_forget,
        answering: Callable[[Thread], Awaitable[bool]] | None = None, *, max_state_chars: int = 1_000_000,
    ) -> None:
        self.store = store
        self.forget = forget
        self.max_state_chars = max_state_chars
        # whether a run (here or elsewhere) is answering a thread now; by default what the
        # store's turn leases say (a process with no runs of its own: the CLI)
        self.answering = answering or self._leased

    async def _leased(self, thread: Thread) -> bool:
        leases = turn_leases(self.store)
        if leases is None:
            return True  # cannot tell: show the thread as it is
        return await leases.turn_live(thread.owner, thread.id)

    @property
    def kept(self) -> bool:
        """The server keeps threads."""
        return self.store is not None

    def _store(self) -> ThreadStore:
        if self.store is None:
            raise ThreadError("no_threads", NO_THREADS)
        return self.store

    async def get(self, principal: str, thread_id: Any) -> Thread:
        """The caller's thread; ``not_found`` for an unknown one and another principal's alike."""
        checked = check_thread_id(thread_id)
        thread = await self._store().get(principal, checked)
        if thread is None:
            raise ThreadError("not_found", f"no thread {checked!r}")
        return thread

    async def view(self, principal: str, thread_id: Any) -> Thread:
        """The caller's thread as a reader should see it: like :meth:`get`, and when it ends
        with a user's message no run is answering (its server was killed, its reply could
        not be kept), that turn is shown marked (``UNANSWERED``), as the next turn will keep it."""
        thread = await self.get(principal, thread_id)
        if thread.messages and thread.messages[-1].role == "user" and not await self.answering(thread):
            return replace(thread, messages=(*thread.messages, Message("assistant", UNANSWERED)))
        return thread

    async def create(
        self, principal: str, *, title: str = "", settings: dict[str, Any] | None = None, thread_id: str | None = None
    ) -> Thread:
        return await self._store().create(principal, title=title, settings=settings, thread_id=thread_id)

    async def open(self, principal: str, thread_id: Any, *, create: bool = True, title: str = "") -> tuple[Thread, bool]:
        """The caller's thread ``thread_id`` and whether this call made it; with ``create``
        a missing one is made (``taken`` when another principal holds the id)."""
        checked = check_thread_id(thread_id)
        store = self._store()
        thread = await store.get(principal, checked)
        if thread is not None:
            return thread, False
        if not create:
            raise ThreadError("not_found", f"no thread {checked!r}")
        try:
            return await store.create(principal, title=title, thread_id=checked), True
        except ThreadError as exc:
            if exc.reason != "conflict":
                raise
        again = await store.get(principal, checked)  # made a moment ago by this caller's other request?
        if again is None:
            raise ThreadError("taken", f"thread id {checked!r} is taken; start the conversation with another id")
        return again, False

    async def page(self, principal: str, *, limit: int = 50, before: str | None = None) -> ThreadPage:
        """Up to ``limit`` of the caller's threads, most recently changed first, after ``before``."""
        limit = max(1, min(int(limit), MAX_PAGE))
        if before is not None:
            before = check_thread_id(before)
        found = await self._store().list(principal, limit=limit + 1, before=before)
        page = found[:limit]
        return ThreadPage(page, page[-1].id if len(found) > limit and page else None)

    async def delete(self, principal: str, thread_id: Any) -> None:
        """Delete the caller's thread (``not_found`` if there is none), then cancel its runs
        and drop their journals."""
        checked = check_thread_id(thread_id)
        if not await self._store().delete(principal, checked):
            raise ThreadError("not_found", f"no thread {checked!r}")
        self.forget(checked, principal)

    async def add(self, thread: Thread, messages: Sequence[Message]) -> Thread:
        """Append messages a client sent along (earlier turns, tool results) to a thread."""
        return await append_turn(self._store(), thread, messages) if messages else thread

    # -- shared state --------------------------------------------------------------------
    def _state_store(self) -> Any:
        store = self._store()
        if not keeps_state(store):
            raise ThreadError("no_state", f"this server's thread store ({type(store).__name__}) keeps no shared state")
        return store

    async def state(self, principal: str, thread_id: Any) -> tuple[dict[str, Any], int]:
        """The caller's thread's shared state and its version."""
        self._state_store()
        thread = await self.get(principal, thread_id)
        return thread.state, thread.state_version

    async def set_state(
        self, principal: str, thread_id: Any, state: Any, *, expected_version: int | None = None
    ) -> Thread:
        """Replace the thread's state. With ``expected_version``, only if the state is still
        at that version (``stale`` otherwise: someone changed it since it was read)."""
        try:
            value = checked_state(state, self.max_state_chars)
        except ValueError as exc:
            raise ThreadError("too_large" if "limit" in str(exc) else "invalid", str(exc)) from None
        return await self._change_state(principal, thread_id, lambda current: value, expected_version)

    async def patch_state(
        self, principal: str, thread_id: Any, ops: Any, *, expected_version: int | None = None
    ) -> Thread:
        """Apply RFC 6902 JSON Patch ``ops`` to the thread's state, atomically: all of them or,
        when one does not apply (``invalid``, saying which), none. With ``expected_version`` as
        :meth:`set_state`; without, the patch goes on whatever the state is when it lands."""
        if not isinstance(ops, list):
            raise ThreadError("invalid", "a state patch is a list of JSON Patch operations")
        try:
            ops = checked_state({"ops": ops}, self.max_state_chars)["ops"]
        except ValueError as exc:
            raise ThreadError("too_large" if "limit" in str(exc) else "invalid", f"bad state patch: {exc}") from None

        def patched(current: dict[str, Any]) -> dict[str, Any]:
            try:
                value = apply_patch(current, ops)
            except ValueError as exc:
                raise ThreadError("invalid", str(exc)) from None
            if state_chars(value) > self.max_state_chars:
                raise ThreadError("too_large", f"the state would pass the limit of {self.max_state_chars:,} characters")
            return value

        return await self._change_state(principal, thread_id, patched, expected_version)

    async def _change_state(
        self, principal: str, thread_id: Any, change: Callable[[dict[str, Any]], dict[str, Any]],
        expected_version: int | None, attempts: int = 16,
    ) -> Thread:
        store = self._state_store()
        for _ in range(attempts):
            thread = await self.get(principal, thread_id)
            if expected_version is not None and thread.state_version != expected_version:
                raise ThreadError("stale", f"the state of thread {thread.id!r} is at version {thread.state_version}, "
                                  f"not {expected_version}: read it again")
            try:
                kept: Thread = await store.update_state(principal, thread.id, change(thread.state),
                                                        expected_version=thread.state_version)
                return kept
            except ThreadError as exc:
                if exc.reason != "conflict":
                    raise
        raise ThreadError("conflict", "the thread's state kept changing; try again")

    def check_room(self, thread: Thread, message: Any) -> None:
        """``too_large`` when the message alone (text, or a list of parts: their text and
        bytes) would take the thread past the store's size limit (a reply that does is not
        kept: its run ends run_failed saying so)."""
        limit = getattr(self.store, "max_thread_chars", None)
        if not isinstance(limit, int):
            return
        held = sum(m.size for m in thread.messages)
        if held + _size_of(message) > limit:
            raise ThreadError(
                "too_large", f"thread {thread.id!r} holds {held} characters; with this message it would pass the limit "
                f"of {limit}: start a new thread",
            )


def _size_of(message: Any) -> int:
    """What a message will take in a thread, before it is checked: its text, and the bytes
    of its parts (base64 counted as the bytes it decodes to)."""
    if isinstance(message, str):
        return len(message)
    size = 0
    for part in message if isinstance(message, (list, tuple)) else ():
        if isinstance(part, Part):
            size += part.byte_size
        elif isinstance(part, dict):
            data, text = part.get("data"), part.get("text")
            size += len(data) * 3 // 4 if isinstance(data, str) else 0
            size += len(text) if isinstance(text, str) else 0
    return size


__all__ = ["MAX_PAGE", "NO_THREADS", "ThreadDesk", "ThreadPage"]
