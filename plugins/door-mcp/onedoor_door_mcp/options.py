"""The door's options (``-o mcp.NAME=VALUE``, ``ONEDOOR_MCP_NAME``, ``[options.mcp]``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from onedoor.questions import AskFallback, check_policy

from .keys import check_keys


@dataclass
class McpOptions:
    tool_name: str = field(default="ask", metadata={"help": "name of the MCP tool that asks the agent"})
    tool_description: str = field(default="", metadata={"help": "tool description (default: one naming the backend)"})
    server_name: str = field(default="onedoor", metadata={"help": "MCP server name reported at initialize"})
    instructions: str = field(default="", metadata={"help": "server instructions (default: how to use the tool)"})
    state_tool: str = field(
        default="",
        metadata={"help": "name of a second tool that changes a stored thread's shared state (a JSON Patch or a whole "
                  "state, at a version); empty: no such tool (the state is still readable as a resource)"},
    )
    progress_tools: bool = field(default=True, metadata={"help": "also report the agent's tool calls as progress"})
    stateless: bool = field(default=False, metadata={
        "help": "HTTP: stateless mode for 2025-11-25 clients (no sessions, so any server behind a round-robin balancer "
        "answers; lost: elicitation (questions go to ask_fallback) and notifications/cancelled); 2026-07-28 requests "
        "never have sessions"})
    request_state_keys: list[str] = field(default_factory=list, metadata={
        "help": "keys (comma-separated, each at least 32 bytes; the first seals, all unseal) sealing the requestState "
        "of 2026-07-28 questions, the same on every server behind one balancer; unset: derived from the HTTP token, "
        "else a key of this process only (mcp 2.x)", "secret": True})
    allowed_hosts: list[str] = field(
        default_factory=list,
        metadata={"help": "HTTP: extra Host header values accepted (e.g. myhost:8000 or myhost:*); loopback is always accepted"},
    )
    allowed_origins: list[str] = field(
        default_factory=list, metadata={"help": "HTTP: extra browser Origin values accepted (e.g. https://app.example)"}
    )
    dns_rebinding_protection: bool = field(
        default=True, metadata={"help": "HTTP: refuse Host/Origin headers not allowed (421/403)"}
    )
    max_body_bytes: int = field(default=16 * 1024 * 1024, metadata={"help": "HTTP: largest request body (413 past it)"})
    ask_fallback: AskFallback = field(
        default="deny",
        metadata={
            "help": "what the agent's questions get when the client cannot be asked (no elicitation capability, "
            "stateless HTTP): deny (approvals rejected, questions declined), allow "
            "(approvals allowed once, questions declined) or fail (the call ends with an error); the result says "
            "the policy answered"
        },
    )

    def __post_init__(self) -> None:
        if not self.tool_name.strip():
            raise ValueError("tool_name must not be empty")
        if self.state_tool and self.state_tool == self.tool_name:
            raise ValueError("state_tool must differ from tool_name")
        check_policy(self.ask_fallback)
        self.request_state_keys = check_keys(self.request_state_keys)
