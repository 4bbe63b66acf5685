"""The messages of a run's translation that carry text: assistant text (with the reply's
non-text parts named in it), reasoning, and the record of them for a MESSAGES_SNAPSHOT.
:class:`~.translate.Translator` builds on it."""

from __future__ import annotations

import uuid
from typing import Any, Iterable

from onedoor import ReplyPart, encode_json

from .extras_out import part_activity


class TextMessages:
    """The open text and reasoning messages of one run's translation, their ids, and (with
    ``record``) the messages so far, for :meth:`snapshot` (see :class:`~.translate.Translator`)."""

    def __init__(self, id_prefix: str | None, record: bool, input_messages: Iterable[dict[str, Any]],
                 snapshot_ids: str | None) -> None:
        self.prefix = id_prefix if id_prefix is not None else f"m{uuid.uuid4().hex[:12]}-"
        self._count = 0
        self.record = record
        self.input_messages = list(input_messages)
        self.snapshot_ids = snapshot_ids  # renumber this run's messages in a snapshot: f"{snapshot_ids}{position}"
        self.messages: list[dict[str, Any]] = []  # this run's messages, when recording
        self._by_id: dict[str, dict[str, Any]] = {}
        self._parts: dict[str, list[str]] = {}
        self.text_id: str | None = None  # open text message
        self.reasoning_id: str | None = None  # open reasoning message
        self.last_assistant: str | None = None  # assistant message that is last in the client's list
        self._content_head = b""  # the start of a CONTENT frame for the open text message
        self._newline_due = False  # a part was named last in the open text: the next thing starts a line
        self._tail = ""  # the open text message's last character

    # -- ids and recording ----------------------------------------------------------------
    def _new_id(self) -> str:
        self._count += 1
        return f"{self.prefix}{self._count}"

    def _remember(self, message: dict[str, Any], text: bool = False) -> None:
        self.messages.append(message)
        self._by_id[message["id"]] = message
        if text:
            self._parts[message["id"]] = []

    def _text(self, text: str, out: list[dict[str, Any]]) -> None:
        """One more piece of the reply's text (opening its message when none is open)."""
        if not text:
            return
        if self._newline_due:
            text, self._newline_due = "\n" + text, False
        if self.text_id is None:
            self._open_text(out)
        assert self.text_id is not None
        if self.record:
            self._parts[self.text_id].append(text)
        self._tail = text[-1]
        out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self.text_id, "delta": text})

    def _open_text(self, out: list[dict[str, Any]]) -> None:
        self._close_reasoning(out)
        mid = self.text_id = self.last_assistant = self._new_id()
        self._tail = ""
        self._content_head = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":' + encode_json(mid) + b',"delta":'
        out.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
        if self.record:
            self._remember({"id": mid, "role": "assistant", "content": ""}, text=True)

    def _reply_part(self, event: ReplyPart, out: list[dict[str, Any]]) -> None:
        """A part of the reply that is not text: named in the text on its own line (as
        ``text_of`` names it), then carried by an activity."""
        part = event.part
        if self.text_id is None:
            self._open_text(out)
        starts_line = not self._newline_due and self._tail in ("", "\n")
        self._newline_due = False
        self._text(part.describe() if starts_line else "\n" + part.describe(), out)
        self._newline_due = True
        assert self.text_id is not None
        out.append(part_activity(self._new_id(), part, self.text_id))

    def _close_text(self, out: list[dict[str, Any]]) -> None:
        self._newline_due = False
        if self.text_id is not None:
            out.append({"type": "TEXT_MESSAGE_END", "messageId": self.text_id})
            if self.record:
                self._by_id[self.text_id]["content"] = "".join(self._parts.pop(self.text_id))
            self.text_id = None

    def _close_reasoning(self, out: list[dict[str, Any]]) -> None:
        rid = self.reasoning_id
        if rid is not None:
            out.append({"type": "REASONING_MESSAGE_END", "messageId": rid})
            out.append({"type": "REASONING_END", "messageId": rid})
            if self.record:
                self._by_id[rid]["content"] = "".join(self._parts.pop(rid))
            self.reasoning_id = None

    def _reasoning(self, text: str, out: list[dict[str, Any]]) -> None:
        if not text:
            return
        if self.reasoning_id is None:
            self._close_text(out)
            rid = self.reasoning_id = self._new_id()
            self.last_assistant = None
            out.append({"type": "REASONING_START", "messageId": rid})
            out.append({"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"})
            if self.record:
                self._remember({"id": rid, "role": "reasoning", "content": ""}, text=True)
        if self.record:
            self._parts[self.reasoning_id].append(text)
        out.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": self.reasoning_id, "delta": text})

    def _close_all(self, out: list[dict[str, Any]]) -> None:
        self._close_reasoning(out)
        self._close_text(out)

    def snapshot(self) -> dict[str, Any]:
        """A MESSAGES_SNAPSHOT of the input's messages plus this run's so far."""
        messages = list(self.input_messages)
        for message in self.messages:
            copy = dict(message)
            parts = self._parts.get(message["id"])
            if parts is not None:
                copy["content"] = "".join(parts)
            if self.snapshot_ids is not None:
                copy["id"] = f"{self.snapshot_ids}{len(messages)}"
            messages.append(copy)
        return {"type": "MESSAGES_SNAPSHOT", "messages": messages}


__all__ = ["TextMessages"]
