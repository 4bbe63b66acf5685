"""`onedoor threads ls|show|rm|state`: the local user's stored threads, in the terminal.

The threads are the kernel's thread store's (the default: the SQLite file
``$ONEDOOR_DATA_DIR/threads.sqlite3``; ``-o sqlite.path=FILE``, or ``store = …`` and
``[options.STORE]`` in onedoor.toml), owned by the principal ``local``: the terminal's,
and every door's on a server without tokens. Text that came from other doors is shown
without control characters (:func:`onedoor.builtins.console.printable`).

``show`` names every part of a message that is not text (an image sent or made) and
what each turn cost (its usage, per model); ``state`` prints a thread's shared state, or
changes it (``--set`` a JSON object, ``--patch`` an RFC 6902 JSON Patch).

Each command returns its exit code: 0, 1 when a thread named is not there or a change of
its state is refused (one line on stderr each), 2 for an id that cannot be a thread id or
an argument that is not JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Awaitable, Callable, TextIO

from ..errors import OnedoorError
from ..principals import LOCAL_PRINCIPAL
from ..threads import Thread, ThreadDesk, ThreadError, check_thread_id
from .console import printable, shorten

NOT_FOUND = 1
BAD_ID = 2


def when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def open_store(options: list[str], config: Path | None) -> Any:
    """The configured thread store (the same as `onedoor serve` would use)."""
    from ..plugins.serve import kernel_for

    store = kernel_for(None, options, config, store=True).store
    if store is None:
        raise OnedoorError("no thread store is configured (store = \"none\"), so there are no threads")
    return store


def with_store(options: list[str], config: Path | None, work: Callable[[Any], Awaitable[int]]) -> int:
    """Run ``work(store)`` on the configured store, and close the store."""
    return _with(open_store(options, config), work)


def with_desk(options: list[str], config: Path | None, work: Callable[[ThreadDesk], Awaitable[int]]) -> int:
    """Run ``work(desk)`` on the configured store's threads, under the configured limits."""
    from ..plugins.serve import kernel_for

    kernel = kernel_for(None, options, config, store=True)
    if kernel.store is None:
        raise OnedoorError("no thread store is configured (store = \"none\"), so there are no threads")
    desk = ThreadDesk(kernel.store, max_state_chars=kernel.limits.max_state_chars)
    return _with(kernel.store, lambda store: work(desk))


def _with(store: Any, work: Callable[[Any], Awaitable[int]]) -> int:
    async def main() -> int:
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())


def _checked(thread_id: str, err: TextIO) -> str | None:
    try:
        return check_thread_id(thread_id)
    except ThreadError as exc:
        print(f"onedoor: error: {exc}", file=err)
        return None


def _missing(thread_id: str, err: TextIO) -> int:
    print(f"onedoor: error: no thread {thread_id!r}; `onedoor threads ls` lists yours", file=err)
    return NOT_FOUND


async def list_threads(store: Any, *, limit: int, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    summaries = await store.list(LOCAL_PRINCIPAL, limit=limit)
    if as_json:
        print(json.dumps([asdict(s) for s in summaries], indent=2), file=out)
        return 0
    if not summaries:
        print("no threads yet: `onedoor chat --thread new` starts one", file=err)
        return 0
    width = max(len(s.id) for s in summaries)
    print(f"{'ID':<{width}}  {'UPDATED':<16}  {'MESSAGES':>8}  TITLE", file=out)
    for s in summaries:
        title = shorten(printable(s.title), 60) if s.title else "(untitled)"
        print(f"{s.id:<{width}}  {when(s.updated_at):<16}  {s.message_count:>8}  {title}", file=out)
    return 0


def thread_json(thread: Thread) -> dict[str, Any]:
    return {
        "id": thread.id, "title": thread.title, "settings": thread.settings, "version": thread.version,
        "created_at": thread.created_at, "updated_at": thread.updated_at,
        "state": thread.state, "state_version": thread.state_version,
        "messages": [m.to_dict() for m in thread.messages],
    }


def usage_line(usage: Any) -> str:
    """A turn's usage, one model: "scripted (onedoor): 12 in, 9 out tokens, 1 request"."""
    extra = [f"{n:,} {what}" for n, what in ((usage.cache_read_tokens, "cached"), (usage.reasoning_tokens, "reasoning"))
             if n]
    cost = f", {usage.cost:g} {usage.currency}".rstrip() if usage.cost is not None else ""
    requests = f"{usage.requests} request{'s' if usage.requests != 1 else ''}"
    who = printable(usage.model or "?") + (f" ({printable(usage.provider)})" if usage.provider else "")
    return (f"{who}: {usage.input_tokens:,} in, {usage.output_tokens:,} out tokens"
            f"{' (' + ', '.join(extra) + ')' if extra else ''}, {requests}{cost}")


def show_lines(thread: Thread) -> list[str]:
    """A thread as a person reads it: a header, then each message by its role (parts that
    are not text named, what each turn cost after its last message)."""
    lines = [f"thread {thread.id}" + (f"  {printable(thread.title)}" if thread.title else ""),
             f"created {when(thread.created_at)}, updated {when(thread.updated_at)}, {len(thread.messages)} messages"]
    if thread.state:
        lines.append(f"state (version {thread.state_version}): {shorten(printable(json.dumps(thread.state)), 200)}")
    lines.append("")
    for message in thread.messages:
        if message.role == "tool":
            named = "".join(" " + printable(p.describe()) for p in message.parts if p.kind != "text")
            lines.append(f"  [tool result] {shorten(printable(message.content))}{named}")
            continue
        if message.content:  # its text names the parts that are not text
            lines.append(f"{message.role}: {printable(message.content)}")
        for call in message.tool_calls:
            lines.append(f"  [tool {printable(call.name)} {shorten(printable(json.dumps(call.arguments, ensure_ascii=False)))}]")
        lines.extend(f"  [usage {usage_line(usage)}]" for usage in message.usage)
    return lines


async def show_thread(store: Any, thread_id: str, *, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    if _checked(thread_id, err) is None:
        return BAD_ID
    try:  # as readers see it: a turn no run answers any more is shown marked
        thread = await ThreadDesk(store).view(LOCAL_PRINCIPAL, thread_id)
    except ThreadError:
        return _missing(thread_id, err)
    if as_json:
        print(json.dumps(thread_json(thread), indent=2, ensure_ascii=False), file=out)
    else:
        print("\n".join(show_lines(thread)), file=out)
    return 0


async def remove_threads(store: Any, thread_ids: list[str], *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Delete each thread named; the worst exit code of them (every id is tried)."""
    code = 0
    for thread_id in thread_ids:
        if _checked(thread_id, err) is None:
            code = max(code, BAD_ID)
        elif await store.delete(LOCAL_PRINCIPAL, thread_id):
            print(f"deleted {thread_id}", file=out)
        else:
            code = max(code, _missing(thread_id, err))
    return code


async def thread_state(desk: ThreadDesk, thread_id: str, *, set_to: str | None = None, patch: str | None = None,
                       out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Print the thread's state (JSON, on stdout; its version on stderr), after the change asked for."""
    if _checked(thread_id, err) is None:
        return BAD_ID
    if set_to is not None and patch is not None:
        print("onedoor: error: give --set or --patch, not both", file=err)
        return BAD_ID
    given = set_to if set_to is not None else patch
    value: Any = None
    if given is not None:
        try:
            value = json.loads(given)
        except ValueError as exc:
            print(f"onedoor: error: {'--set' if set_to is not None else '--patch'} is not JSON: {exc}", file=err)
            return BAD_ID
    try:
        if set_to is not None:
            thread = await desk.set_state(LOCAL_PRINCIPAL, thread_id, value)
        elif patch is not None:
            thread = await desk.patch_state(LOCAL_PRINCIPAL, thread_id, value)
        else:
            thread = await desk.get(LOCAL_PRINCIPAL, thread_id)
    except ThreadError as exc:
        if exc.reason == "not_found":
            return _missing(thread_id, err)
        print(f"onedoor: error: {exc}", file=err)
        return NOT_FOUND
    print(json.dumps(thread.state, indent=2, ensure_ascii=False), file=out)
    print(f"thread {thread.id}: state version {thread.state_version}", file=err)
    return 0
