"""The ACP door object: what the entry point ``onedoor.doors:acp`` names.

Light on purpose: the CLI imports this module to learn the door's shapes and options, so
the ``acp`` library (and pydantic) are imported only in :meth:`AcpDoor.serve_channel`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onedoor.questions import AskFallback, check_policy


@dataclass
class AcpOptions:
    data_dir: str = field(
        default="",
        metadata={"help": "where ACP's own file acp-sessions.sqlite3 lives (session settings; sessions with "
                          "--store none); default: $ONEDOOR_DATA_DIR or the user data dir"},
    )
    backends: str = field(
        default="",
        metadata={"help": "comma-separated backends the editor may pick (default: every installed backend)"},
    )
    permissions: str = field(
        default="ask",
        metadata={"help": "ask: tools that need approval ask the editor; allow: approve without asking"},
    )

    ask_fallback: AskFallback = field(
        default="deny",
        metadata={"help": "free-form questions to an editor without elicitation: deny or allow (both decline), "
                          "or fail (the prompt ends with an error)"},
    )

    context_window: int = field(
        default=0,
        metadata={"help": "the model's context window in tokens: after each turn the editor gets usage_update "
                          "(how full it is, the session's cost); 0: unknown, no usage_update"},
    )

    def __post_init__(self) -> None:
        if self.context_window < 0:
            raise ValueError("context_window must be 0 (unknown) or a number of tokens")
        if self.permissions not in ("ask", "allow"):
            raise ValueError("permissions must be 'ask' or 'allow'")
        check_policy(self.ask_fallback)


class AcpDoor:
    """Agent Client Protocol over any channel transport (stdio for editors)."""

    name = "acp"
    shapes = frozenset({"channel"})
    framing = "ndjson"
    Options = AcpOptions

    async def serve_channel(self, channel: Any, ctx: Any) -> None:
        from .server import serve_acp

        await serve_acp(channel, ctx, ctx.options_for(self.name) or AcpOptions())


door = AcpDoor
