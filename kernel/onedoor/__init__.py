"""onedoor: one agent, every door.

The kernel owns the agent port and the run lifecycle; backends, doors, transports and
thread stores are entry-point plugins (:mod:`onedoor.plugins`). This package is the
public face: every name a plugin author needs, imported lazily, so ``import onedoor``
imports nothing heavy and ``onedoor run`` stays fast::

    from onedoor import Kernel, RunContext, TextDelta, RunFinished, Question, SuspendAsker

Where they live (layers, lowest first; each imports only from the ones before it):
``errors``, ``limits``, ``principals``, ``wire``, ``usage``, ``state``, ``ids`` → ``content``,
``observe`` → ``messages`` → ``questions`` → ``events`` → ``port`` → ``journal`` →
``threads`` → ``run`` → ``kernel`` (the :class:`Kernel` face) → ``composition`` →
``hookspecs`` → ``plugins`` → ``builtins`` → ``testing`` → ``cli``.

The distribution is ``onedoor-kernel`` (``onedoor`` on the package index is another
project: :mod:`onedoor._foreign`); ``__version__`` is written by ``nox -s bump``.
"""

from __future__ import annotations

from ._foreign import warn_if_installed as _warn_if_foreign
from ._lazy import lazy_names

__version__ = "0.1.0"
TYPE_CHECKING = False  # typing's flag without importing typing (type checkers read the name)

_warn_if_foreign()

# name -> the module that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["CompositionError", "ContractViolation", "OnedoorError", "OptionsError", "PluginError", "RunRefused"],
        "onedoor.errors",
    ),
    **dict.fromkeys(
        [
            "Event", "QuestionAnswered", "QuestionAsked", "ReasoningDelta", "RunFailed", "RunFinished", "RunStarted",
            "STOP_CANCELLED", "STOP_END_TURN", "STOP_MAX_TURNS", "STOP_PENDING_TOOLS", "STOP_SUSPENDED", "TextDelta",
            "ToolFinished", "ToolStarted", "event_from_dict", "event_from_json", "event_to_dict", "event_to_json",
            "ReplyPart", "StateDelta", "StateSnapshot", "UsageReported",
        ],
        "onedoor.events",
    ),
    **dict.fromkeys(["ContentError", "ContentLimits", "Part", "parse_content", "text_of"], "onedoor.content"),
    **dict.fromkeys(["ModelUsage", "add_usage"], "onedoor.usage"),
    **dict.fromkeys(["RequestInfo", "observed_request", "trace_meta"], "onedoor.observe.requests"),
    **dict.fromkeys(["Message", "ToolCall"], "onedoor.messages"),
    "Limits": "onedoor.limits",
    **dict.fromkeys(["LOCAL_PRINCIPAL", "principal_of"], "onedoor.principals"),
    **dict.fromkeys(["WireError", "decode_json", "decode_json_object", "encode_json", "encode_json_text"], "onedoor.wire"),
    **dict.fromkeys(
        [
            "APPROVAL", "INPUT", "POLICIES", "Answer", "AskFallback", "Asker", "LiveAsker", "PolicyAsker", "Question",
            "QuestionError", "SuspendAsker",
        ],
        "onedoor.questions",
    ),
    **dict.fromkeys(["CancelToken", "RunContext", "ToolSpec", "collect_text"], "onedoor.port"),
    **dict.fromkeys(
        ["Cursor", "CursorError", "CursorExpired", "RemoteAnswer", "RunJournal", "parse_cursor", "read_cursor"],
        "onedoor.journal",
    ),
    **dict.fromkeys(
        ["StoreUnavailable", "Thread", "ThreadDesk", "ThreadError", "ThreadPage", "ThreadStore", "ThreadSummary"],
        "onedoor.threads",
    ),
    **dict.fromkeys(["Backend", "RunInfo", "RunStream"], "onedoor.run"),
    "Kernel": "onedoor.kernel",
    **dict.fromkeys(
        [
            "AsgiDoor", "AsgiMount", "Channel", "ChannelClosed", "ChannelDoor", "Endpoint", "MessageTooLarge", "RpcDoor",
            "ServeContext", "Transport",
        ],
        "onedoor.composition",
    ),
    "hookimpl": "onedoor.hookspecs",
}

__all__ = [  # every name of _EXPORTS (a test checks they agree)
    "__version__", "add_usage", "Answer", "APPROVAL", "AsgiDoor", "AsgiMount", "Asker", "AskFallback", "Backend",
    "CancelToken", "Channel", "ChannelClosed", "ChannelDoor", "collect_text", "CompositionError", "ContentError",
    "ContentLimits", "ContractViolation", "Cursor", "CursorError", "CursorExpired", "decode_json",
    "decode_json_object", "encode_json", "encode_json_text", "Endpoint", "Event", "event_from_dict",
    "event_from_json", "event_to_dict", "event_to_json", "hookimpl", "INPUT", "Kernel", "Limits", "LiveAsker",
    "LOCAL_PRINCIPAL", "Message", "MessageTooLarge", "ModelUsage", "observed_request", "OnedoorError",
    "OptionsError", "parse_content", "parse_cursor", "Part", "PluginError", "POLICIES", "PolicyAsker",
    "principal_of", "Question", "QuestionAnswered", "QuestionAsked", "QuestionError", "read_cursor",
    "ReasoningDelta", "ReplyPart", "RequestInfo", "RpcDoor", "RunContext", "RunFailed", "RunFinished", "RunInfo",
    "RemoteAnswer", "RunJournal", "RunRefused", "RunStarted", "RunStream", "ServeContext", "StateDelta", "StateSnapshot",
    "STOP_CANCELLED", "STOP_END_TURN", "STOP_MAX_TURNS", "STOP_PENDING_TOOLS", "STOP_SUSPENDED", "StoreUnavailable",
    "SuspendAsker", "TextDelta", "text_of", "Thread", "ThreadDesk", "ThreadError", "ThreadPage", "ThreadStore",
    "ThreadSummary", "ToolCall", "ToolFinished", "ToolSpec", "ToolStarted", "trace_meta", "Transport",
    "UsageReported", "WireError",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from .composition import (
        AsgiDoor,
        AsgiMount,
        Channel,
        ChannelClosed,
        ChannelDoor,
        Endpoint,
        MessageTooLarge,
        RpcDoor,
        ServeContext,
        Transport,
    )
    from .content import ContentError, ContentLimits, Part, parse_content, text_of
    from .errors import CompositionError, ContractViolation, OnedoorError, OptionsError, PluginError, RunRefused
    from .events import (
        STOP_CANCELLED,
        STOP_END_TURN,
        STOP_MAX_TURNS,
        STOP_PENDING_TOOLS,
        STOP_SUSPENDED,
        Event,
        QuestionAnswered,
        QuestionAsked,
        ReasoningDelta,
        ReplyPart,
        RunFailed,
        RunFinished,
        RunStarted,
        StateDelta,
        StateSnapshot,
        TextDelta,
        ToolFinished,
        ToolStarted,
        UsageReported,
        event_from_dict,
        event_from_json,
        event_to_dict,
        event_to_json,
    )
    from .hookspecs import hookimpl
    from .journal import Cursor, CursorError, CursorExpired, RemoteAnswer, RunJournal, parse_cursor, read_cursor
    from .kernel import Kernel
    from .limits import Limits
    from .messages import Message, ToolCall
    from .observe.requests import RequestInfo, observed_request, trace_meta
    from .port import CancelToken, RunContext, ToolSpec, collect_text
    from .principals import LOCAL_PRINCIPAL, principal_of
    from .questions import (
        APPROVAL,
        INPUT,
        POLICIES,
        Answer,
        Asker,
        AskFallback,
        LiveAsker,
        PolicyAsker,
        Question,
        QuestionError,
        SuspendAsker,
    )
    from .run import Backend, RunInfo, RunStream
    from .threads import StoreUnavailable, Thread, ThreadDesk, ThreadError, ThreadPage, ThreadStore, ThreadSummary
    from .usage import ModelUsage, add_usage
    from .wire import WireError, decode_json, decode_json_object, encode_json, encode_json_text

del TYPE_CHECKING
