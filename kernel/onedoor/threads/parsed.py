"""The messages of recently read threads, parsed once, for a store that reads a thread
again (every turn does, twice).

A thread's messages are only ever appended (seq 0, 1, 2, ...) and go only with the
thread itself, so what a store parsed of a thread stays true: a later read parses only
the rows past those held here. A thread deleted and made again under the same id is
another thread, told apart by its ``created_at``. Held: the most recently read threads,
at most ``max_threads`` of them and ``max_size`` (text characters plus part bytes, as
``Message.size`` counts) in all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Sequence

from ..messages import Message

Key = tuple[str, float]  # (thread id, created_at)


class ParsedMessages:
    def __init__(self, max_threads: int = 64, max_size: int = 64_000_000) -> None:
        self.max_threads = max_threads
        self.max_size = max_size
        self._held: OrderedDict[Key, tuple[tuple[Message, ...], int]] = OrderedDict()  # key -> (messages, size)
        self._size = 0
        self._lock = threading.Lock()  # a store may read on a worker thread

    def first(self, thread_id: str, created_at: float, count: int) -> tuple[Message, ...]:
        """The thread's first messages held here (none, or at most ``count``: the row's
        message count; holding more would mean the thread is not the one held)."""
        key = (thread_id, created_at)
        with self._lock:
            held = self._held.get(key)
            if held is None:
                return ()
            if len(held[0]) > count:
                self._drop(key)
                return ()
            self._held.move_to_end(key)
            return held[0]

    def latest(self, thread_id: str) -> tuple[float, tuple[Message, ...]] | None:
        """(created_at, messages) held for the thread id, for a store that asks for the
        rows past them in the same query that tells it whether the thread is the one held."""
        with self._lock:
            for key in reversed(self._held):
                if key[0] == thread_id:
                    self._held.move_to_end(key)
                    return key[1], self._held[key][0]
        return None

    def keep(self, thread_id: str, created_at: float, messages: Sequence[Message]) -> None:
        """Hold ``messages`` as all the thread's messages so far (the oldest threads go past the bounds)."""
        key, kept = (thread_id, created_at), tuple(messages)
        size = sum(m.size for m in kept)
        with self._lock:
            self._drop(key)
            if size > self.max_size:
                return
            self._held[key] = (kept, size)
            self._size += size
            while len(self._held) > self.max_threads or self._size > self.max_size:
                self._drop(next(iter(self._held)))

    def forget(self, thread_id: str) -> None:
        """The thread was deleted."""
        with self._lock:
            for key in [k for k in self._held if k[0] == thread_id]:
                self._drop(key)

    def _drop(self, key: Key) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            self._size -= held[1]


__all__ = ["ParsedMessages"]
