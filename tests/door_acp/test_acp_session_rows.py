"""ACP's own session file (``--store none``): a session's history is one row per message,
and a save writes only what changed, so a long session, or one with a pasted screenshot,
is not written again at every checkpoint of every turn. An older file (the history in the
session's row) is read as it is and moves to rows at its first save."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from onedoor_door_acp import sessions as sessions_module
from onedoor_door_acp.sessions import DB_NAME, Session, SessionManager, SessionStore


def _image_message() -> dict[str, Any]:
    """A prompt with a pasted screenshot, as the door keeps it (``Message.to_dict``)."""
    from onedoor import Message
    from onedoor.content import Part

    parts = (Part.of_text("what is this?"), Part.media("image", "image/png", data=b"\x89PNG\r\n\x1a\n" + bytes(20_000)))
    return Message.from_dict({"role": "user", "content": [p.to_dict() for p in parts]}).to_dict()


IMAGE = _image_message()


def _stored(path: Path, session_id: str) -> tuple[str, list[Any]]:
    with sqlite3.connect(path) as db:
        (column,) = db.execute("SELECT history FROM sessions WHERE id = ?", (session_id,)).fetchone()
        rows = db.execute("SELECT seq, body FROM session_messages WHERE session_id = ? ORDER BY seq",
                          (session_id,)).fetchall()
    return column, [(seq, json.loads(body)) for seq, body in rows]


class FakeRecorder:
    """What a turn's recorder gives the manager: the turn's messages so far, and at its end."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def snapshot(self) -> list[dict[str, Any]]:
        return [dict(m) for m in self.messages]

    def finish(self, note: str, usage: Any) -> list[dict[str, Any]]:
        return self.messages


async def test_a_turn_writes_its_own_messages_and_the_prompt_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    encoded: list[Any] = []
    real = sessions_module.encode_json_text
    monkeypatch.setattr(sessions_module, "encode_json_text", lambda value: encoded.append(value) or real(value))
    path = tmp_path / DB_NAME
    manager = SessionManager(SessionStore(path), "scripted")
    session = await manager.create("/proj")
    for turn_number in range(3):
        turn = SimpleNamespace(recorder=FakeRecorder(), usage=())
        prompt = IMAGE if turn_number == 0 else {"role": "user", "content": f"question {turn_number}"}
        await manager.begin_turn(session, turn, prompt)
        for step in range(3):  # checkpoints of a turn that grows
            turn.recorder.messages.append({"role": "assistant", "content": f"turn {turn_number} step {step}"})
            manager.checkpoint(session, turn)
        turn.recorder.messages[:] = turn.recorder.messages[:1]  # a turn may end shorter than a checkpoint
        await manager.end_turn(session, turn, "")
    assert sum(1 for value in encoded if value == IMAGE) == 1, "the screenshot was written once"
    expected = []
    for turn_number in range(3):
        expected += [IMAGE if turn_number == 0 else {"role": "user", "content": f"question {turn_number}"},
                     {"role": "assistant", "content": f"turn {turn_number} step 0"}]
    assert session.history == expected
    column, rows = _stored(path, session.id)
    assert column == "[]" and rows == list(enumerate(expected))  # stale checkpoint rows are gone
    manager.close_files()

    again = SessionManager(SessionStore(path), "scripted")
    loaded = await again.open(session.id)
    assert loaded.history == expected and loaded.title.startswith("what is this?")
    assert await again.reset(loaded) == len(expected)
    assert _stored(path, session.id) == ("[]", [])
    loaded.settings["always_allow"] = ["write_file"]  # a change of settings only writes no message
    again.save(loaded)
    assert again.store.load(session.id).settings == {"always_allow": ["write_file"]}
    again.close_files()


async def test_an_older_file_is_read_as_it_is_and_moves_to_rows_at_its_first_save(tmp_path: Path):
    path = tmp_path / DB_NAME
    history = [{"role": "user", "content": "old question"}, {"role": "assistant", "content": "old answer"}]
    with sqlite3.connect(path) as db:  # the table as an older version made and filled it
        db.execute("""CREATE TABLE sessions (
            id TEXT PRIMARY KEY, cwd TEXT NOT NULL, backend TEXT NOT NULL,
            additional_directories TEXT NOT NULL, title TEXT NOT NULL,
            history TEXT NOT NULL, settings TEXT NOT NULL,
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""")
        db.execute("INSERT INTO sessions VALUES ('sess_old', '/old', 'scripted', '[]', 'old question', ?, '{}', "
                   "'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')", (json.dumps(history),))
    manager = SessionManager(SessionStore(path), "scripted")
    session = await manager.open("sess_old")
    assert session.history == history
    [listed], _ = await manager.page(None, None)
    assert (listed.id, listed.title, listed.cwd) == ("sess_old", "old question", "/old")
    turn = SimpleNamespace(recorder=FakeRecorder(), usage=())
    await manager.begin_turn(session, turn, {"role": "user", "content": "new question"})
    column, rows = _stored(path, "sess_old")
    assert column == "[]" and [body for _, body in rows] == history + [{"role": "user", "content": "new question"}]
    manager.store.delete("sess_old")
    assert manager.store.load("sess_old") is None
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM session_messages").fetchone() == (0,)
    manager.close_files()


def test_a_session_made_by_hand_is_written_whole(tmp_path: Path):
    """A Session made by hand (an import, the migration's tests) is written whole."""
    store = SessionStore(tmp_path / DB_NAME)
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    store.save(Session(id="sess_x", cwd="/", backend="scripted", history=history))
    assert store.load("sess_x").history == history
    store.close()


async def test_idle_sessions_leave_memory_and_stay_open(tmp_path: Path):
    """Open sessions past IDLE_KEPT that are idle leave memory (their histories, images and
    all) and answer as before: the next call reads them back. A closed one stays closed."""
    from onedoor_door_acp.sessions import IDLE_KEPT, UnknownSession

    manager = SessionManager(SessionStore(tmp_path / DB_NAME), "scripted")
    made = []
    for number in range(IDLE_KEPT + 5):
        session = await manager.create(f"/proj{number}")
        turn = SimpleNamespace(recorder=FakeRecorder(), usage=())
        await manager.begin_turn(session, turn, IMAGE if number == 0 else {"role": "user", "content": f"q{number}"})
        turn.recorder.messages.append({"role": "assistant", "content": f"answer {number}"})
        await manager.end_turn(session, turn, "")
        made.append((session.id, list(session.history)))
    busy = made[1][0]
    (await manager.get(busy)).turn = object()  # a running turn keeps its session in memory
    for _ in range(IDLE_KEPT + 2):
        await manager.create("/more")
    assert busy in manager.live and made[0][0] not in manager.live and made[0][0] in manager.away
    assert len([s for s in manager.live.values() if s.turn is None]) <= IDLE_KEPT + 1
    first = await manager.get(made[0][0])  # back from the file, as it was
    assert first.history == made[0][1] and first.cwd == "/proj0" and first.id in manager.live
    closed_id = made[2][0]
    await manager.close(closed_id)
    for _ in range(IDLE_KEPT + 2):
        await manager.create("/more")
    assert closed_id not in manager.live
    with pytest.raises(UnknownSession, match="was closed"):
        await manager.get(closed_id)
    reopened = await manager.open(closed_id)  # session/load opens it again
    assert reopened.history == made[2][1] and await manager.get(closed_id) is reopened
    manager.store.delete(made[3][0])  # deleted by another process while away
    with pytest.raises(UnknownSession, match="unknown session"):
        await manager.get(made[3][0])
    manager.close_files()
