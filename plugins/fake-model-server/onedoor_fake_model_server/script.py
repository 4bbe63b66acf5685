"""What the fake model answers: a plan built from the request's messages.

Directives at the start of the last user message shape the reply (several may be
combined, e.g. ``/think /slow /tool add {"a": 1}``):

``/think``             stream reasoning (``reasoning_content``) before the reply
``/tool NAME JSON``    call tool NAME with JSON arguments (repeatable: parallel calls)
``/error [STATUS]``    answer with HTTP STATUS (default 400) and an OpenAI-style error body
``/slow [SECONDS]``    pause between chunks (default 0.05 s)
``/hang``              send the first chunk, then wait until the client disconnects
``/long N``            stream a reply of N chunks
``/reply TEXT``        reply with exactly TEXT (the rest of the message)

Without directives the reply is ``You said: TEXT (turn N)``, one chunk per word, where N
counts the user messages (so a history round trip is visible). When the last message
is a tool result, the reply is ``The tool returned: CONTENT``.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


def new_call_id() -> str:
    """A tool-call id unique across requests, turns and server instances."""
    return f"call_{next(_ids)}_{uuid.uuid4().hex[:12]}"


@dataclass
class Plan:
    reasoning: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments"}
    error_status: int = 0
    error_message: str = ""
    delay: float = 0.0
    hang: bool = False

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def words(text: str) -> list[str]:
    pieces = text.split(" ")
    return [w + " " for w in pieces[:-1]] + [pieces[-1]] if text else []


_JSON_START = re.compile(r"\s*[\[{]")


def _take_json(rest: str) -> tuple[Any, str]:
    """Parse a JSON value at the start of ``rest``; return it and what follows."""
    if not _JSON_START.match(rest):
        return {}, rest
    decoder = json.JSONDecoder()
    stripped = rest.lstrip()
    try:
        value, end = decoder.raw_decode(stripped)
    except json.JSONDecodeError:
        return {}, rest
    return value, stripped[end:]


def _read_directives(rest: str, plan: Plan) -> tuple[str, bool, int, str | None]:
    """Consume the leading ``/directives`` of a message into ``plan``; return what is left
    of the message, and the ``/think``, ``/long`` and ``/reply`` choices."""
    think = False
    long_count = 0
    exact: str | None = None
    while rest.startswith("/"):
        word, _, tail = rest.partition(" ")
        if word == "/think":
            think = True
        elif word == "/tool":
            name, _, tail = tail.strip().partition(" ")
            args, tail = _take_json(tail)
            plan.tool_calls.append({"id": new_call_id(), "name": name, "arguments": json.dumps(args)})
        elif word == "/error":
            status, _, after = tail.strip().partition(" ")
            if status.isdigit():
                plan.error_status, tail = int(status), after
            else:
                plan.error_status = 400
        elif word == "/slow":
            value, _, after = tail.strip().partition(" ")
            try:
                plan.delay, tail = float(value), after
            except ValueError:
                plan.delay = 0.05
        elif word == "/hang":
            plan.hang = True
        elif word == "/long":
            value, _, after = tail.strip().partition(" ")
            if value.isdigit():
                long_count, tail = int(value), after
            else:
                long_count = 200
        elif word == "/reply":
            exact, tail = tail, ""
        else:
            break
        rest = tail.strip()
    return rest, think, long_count, exact


def plan_for(body: dict[str, Any], default_delay: float = 0.0) -> Plan:
    messages = body.get("messages") or []
    plan = Plan(delay=default_delay)
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        plan.text = words(f"The tool returned: {_content_text(last.get('content'))}")
        return plan
    users = [m for m in messages if m.get("role") == "user"]
    rest = _content_text(users[-1].get("content")).strip() if users else ""
    rest, think, long_count, exact = _read_directives(rest, plan)
    if plan.error_status:
        plan.error_message = f"fake model server: scripted error {plan.error_status} ({rest or 'as asked'})"
        return plan
    if think:
        plan.reasoning = words(f"The user wrote {len(rest.split())} words; I should answer briefly.")
    if plan.tool_calls:
        return plan
    if exact is not None:
        plan.text = words(exact)
    elif long_count:
        plan.text = [f"w{i} " for i in range(long_count)]
    else:
        plan.text = words(f"You said: {rest} (turn {len(users)})")
    return plan
