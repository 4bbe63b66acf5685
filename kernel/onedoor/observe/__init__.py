"""Calling the observer hooks (:mod:`onedoor.hookspecs`): through pluggy, every observer
fenced in; and :func:`observed_request`, how a door tells observers about a request.

The kernel (and a door, for requests) calls the observers through the pluggy hook caller
itself, so pluggy's ordering and wrappers (``@hookimpl(wrapper=True)``, old-style
``hookwrapper=True``) apply as they do for any pluggy hook. An observer must never break a
run nor silence the others, and pluggy stops at the first implementation that raises; so,
before a call, each implementation's function is wrapped once in a guard that logs its
exception and carries on (a plain observer returns None, a wrapper passes the result
through as if it were not there). A hook nobody implements costs a lookup (:func:`observed`).

A door serves each request (or JSON-RPC message) inside :func:`observed_request`::

    async with observed_request(kernel.hooks, door="mcp", transport="stdio", method="tools/call",
                                meta={"traceparent": ...}) as request:
        ...   # runs started here are inside the request (for a tracer: its child spans)
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Callable, Generator

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .requests import TRACE_KEYS, RequestInfo, observed_request, trace_meta

log = logging.getLogger("onedoor.kernel")

_GUARDED = "_onedoor_guarded"


def observed(hooks: Any, name: str) -> bool:
    """Whether hook ``name`` has an implementation (so a caller can skip building its arguments)."""
    caller = getattr(hooks, name, None) if hooks is not None else None
    if caller is None:
        return False
    get_hookimpls = getattr(caller, "get_hookimpls", None)
    return bool(get_hookimpls()) if get_hookimpls is not None else True


def notify(hooks: Any, name: str, **kwargs: Any) -> None:
    """Call hook ``name`` on every observer; log, never raise, what an observer raises.

    ``hooks`` is a pluggy ``PluginManager.hook`` relay, or any object whose attribute
    ``name`` is callable with ``kwargs`` (a stand-in in tests), or None.
    """
    caller = getattr(hooks, name, None) if hooks is not None else None
    if caller is None:
        return
    get_hookimpls = getattr(caller, "get_hookimpls", None)
    if get_hookimpls is not None:
        for impl in get_hookimpls():
            if not getattr(impl.function, _GUARDED, False):
                impl.function = _guard(impl, name)
    try:
        caller(**kwargs)
    except Exception:  # an observer must never break a run
        log.exception("observer hook %s failed", name)


def _guard(impl: Any, hook: str) -> Callable[..., Any]:
    """``impl.function`` inside a guard (the same arguments, so pluggy calls it alike)."""
    function = impl.function
    who = f"observer hook {hook} of {impl.plugin_name!r}"
    if impl.wrapper or impl.hookwrapper:

        @functools.wraps(function)
        def guarded_wrapper(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
            return (yield from _guarded_wrapper(function(*args, **kwargs), who))

        guarded: Callable[..., Any] = guarded_wrapper
    else:

        @functools.wraps(function)
        def guarded_plain(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except Exception:
                log.exception("%s failed", who)
                return None

        guarded = guarded_plain
    setattr(guarded, _GUARDED, True)
    return guarded


def _guarded_wrapper(inner: Any, who: str) -> Generator[None, Any, Any]:
    """Run a wrapper generator; if it breaks, log it and let the call pass through.

    What pluggy sends in after the first yield (the result, or for an old-style
    hookwrapper its Result object) is passed through when the wrapper fails.
    """
    try:
        next(inner)
    except Exception:  # broke before its yield, or never yielded
        log.exception("%s failed", who)
        return (yield)
    try:
        sent = yield
    except BaseException as exc:  # an inner implementation raised: the wrapper may handle it
        try:
            inner.throw(exc)
        except StopIteration as stop:
            return stop.value
        except Exception as raised:
            if raised is not exc:
                log.exception("%s failed", who)
            raise exc from None
        inner.close()
        raise exc from None
    try:
        inner.send(sent)
    except StopIteration as stop:
        return stop.value
    except Exception:
        log.exception("%s failed", who)
        return sent
    log.error("%s yielded twice", who)
    inner.close()
    return sent


# the request side, imported on first use (a run alone needs only notify and observed)
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(["RequestInfo", "TRACE_KEYS", "observed_request", "trace_meta"],
                                                          ".requests"), globals())

__all__ = ["RequestInfo", "TRACE_KEYS", "notify", "observed", "observed_request", "trace_meta"]
