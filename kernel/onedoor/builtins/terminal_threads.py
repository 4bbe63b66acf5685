"""The stored thread of a terminal chat (`onedoor chat --thread ID|new`).

The terminal is the local user: its threads belong to the principal ``local``, the
same owner as the threads of a server without tokens (and of the stdio and SLIM doors),
so a conversation begun in the editor or on the web page of a local server continues
here, and the other way round.
"""

from __future__ import annotations

import sys
from typing import Any

from ..principals import LOCAL_PRINCIPAL
from ..threads import Thread, ThreadError, check_thread_id
from .console import printable

NEW = "new"  # `--thread new`: start a thread


class TerminalThread:
    """One chat's thread: which one, read again before every turn (another door may have
    added turns meanwhile), and replaced by a new one on /reset."""

    principal = LOCAL_PRINCIPAL

    def __init__(self, store: Any, thread: Thread, channel: Any, *, created: bool) -> None:
        self.store = store
        self.thread_id = thread.id
        self.channel = channel
        self.created = created
        self.count = len(thread.messages)
        self.title = thread.title
        self.problem = ""  # why the thread could not be read for the last turn

    @classmethod
    async def open(cls, store: Any, wanted: str, channel: Any) -> "TerminalThread":
        """The thread ``wanted`` names (or a new one); :class:`ThreadError` if there is none."""
        if store is None:
            raise ThreadError("invalid", "this chat keeps no threads (its thread store is 'none'), so --thread cannot work")
        try:
            if wanted == NEW:
                opened = cls(store, await store.create(LOCAL_PRINCIPAL), channel, created=True)
                opened.announce()
                return opened
            found = await store.get(LOCAL_PRINCIPAL, check_thread_id(wanted))
        except ThreadError:
            raise
        except Exception as exc:  # noqa: BLE001 - a store that fails (disk, database) is one clear line
            raise ThreadError("invalid", f"the thread store failed: {type(exc).__name__}: {exc}") from None
        if found is None:
            raise ThreadError("not_found", f"no thread {wanted!r}; `onedoor threads ls` lists yours")
        return cls(store, found, channel, created=False)

    @property
    def over_stdio(self) -> bool:
        return getattr(self.channel, "peer", "") == "stdio"

    def announce(self) -> None:
        """Tell a new thread's id on stderr (over stdio; a remote terminal reads the banner)."""
        if self.over_stdio:
            print(f"onedoor: new thread {self.thread_id} (continue it with: onedoor chat --thread {self.thread_id})",
                  file=sys.stderr, flush=True)

    def banner(self) -> str:
        if self.created:
            return f"[new thread {self.thread_id}]\n"
        title = f" {printable(self.title)!r}" if self.title else ""
        return f"[thread {self.thread_id}{title}: {self.count} earlier messages]\n"

    async def current(self) -> Thread | None:
        """The thread as stored now; None (and :attr:`problem` says why) if it cannot be read."""
        try:
            thread = await self.store.get(LOCAL_PRINCIPAL, self.thread_id)
        except Exception as exc:  # noqa: BLE001 - the chat goes on; the turn is not run
            self.problem = f"the thread store failed: {type(exc).__name__}: {exc}"
            return None
        self.problem = "" if thread is not None else f"thread {self.thread_id} no longer exists; /reset starts a new one"
        return thread

    def gone(self) -> str:
        return self.problem or f"thread {self.thread_id} cannot be read"

    async def restart(self) -> str:
        """/reset: a new thread for the next turns; the note for the conversation."""
        try:
            thread = await self.store.create(LOCAL_PRINCIPAL)
        except Exception as exc:  # noqa: BLE001
            return f"; no new thread: {type(exc).__name__}: {exc}"
        self.thread_id, self.created, self.count, self.title = thread.id, True, 0, ""
        self.announce()
        return f"; new thread {thread.id}"
