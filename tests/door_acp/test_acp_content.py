"""Issue 25 for ACP: images, audio, resources and resource links reach the backend as
parts; ``file://`` links are read through the editor (``fs/read_text_file``), never from
the agent's disk; replies and tool results carry parts back; session/load replays the
blocks. As Zed sends them (the TypeScript SDK driving `onedoor acp` over stdio) and in
process (the ``acp`` library's client), bad input included."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, spawn_agent_process, text_block
from acp_harness import JS_DIR, DoorHarness, Recorder, node_ready, onedoor_command  # type: ignore[import-not-found]
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.limits import Limits
from onedoor.testing import scripted_kernel
from onedoor.threads.sqlite import SQLiteThreadStore

pytestmark = pytest.mark.timeout(120)
PNG = base64.b64encode(DOT_PNG).decode("ascii")
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}


def editor_lines(first: int, last: int) -> str:
    return "".join(f"line {n} in the editor\n" for n in range(first, last + 1))


def _node(scenario: str, agent: list[str], config: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(["node", "client.mjs", scenario, json.dumps(agent), json.dumps(config)],
                         capture_output=True, text=True, env=env, cwd=JS_DIR, timeout=100)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines, f"no output; stderr:\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert out.returncode == 0 and result.get("ok"), f"{result}\nstderr:\n{out.stderr[-3000:]}"
    return result


def _turn_usage(store_path: Path, sid: str) -> list[dict[str, Any]]:
    """The usage the kernel kept with each turn of the thread (its last assistant message's)."""
    async def read() -> Any:
        store = SQLiteThreadStore(store_path)
        try:
            return await store.get("local", sid)
        finally:
            await store.close()

    thread = asyncio.run(read())
    return [m.usage[0].to_dict() for m in thread.messages if m.role == "assistant" and m.usage]


@pytest.mark.skipif(node_ready() is not None, reason=node_ready() or "")
@pytest.mark.parametrize("store", ["sqlite", "none"])
def test_typescript_client_sends_what_zed_sends_and_loads_it_back(
    agent_env: dict[str, str], tmp_path: Path, store: str
) -> None:
    ws = tmp_path / "proj"
    ws.mkdir()
    # the file on disk differs from the editor's buffer: the agent must read the editor's
    (ws / "sample.py").write_text("".join(f"line {n} on disk\n" for n in range(1, 21)))
    (tmp_path / "secret.txt").write_text("secret")
    threads = tmp_path / "threads.sqlite3"
    agent = onedoor_command() + ["acp", "--store", store, "-o", f"sqlite.path={threads}", "-o", "context_window=1000"]
    if store == "none":
        agent = onedoor_command() + ["acp", "--store", "none", "-o", "context_window=1000"]
    config = {"workspace": str(ws), "png": PNG, "editorFiles": {str(ws / "sample.py"): editor_lines(1, 20)}}
    seen = _node("content", agent, config, agent_env)
    sid = seen["sid"]
    assert seen["caps"] == {"image": True, "audio": True, "embeddedContext": True}

    # a resource_link with #L5-L10: one fs/read_text_file with line and limit; the backend gets exactly those lines
    assert seen["fsRequests"][0] == {"sessionId": sid, "path": str(ws / "sample.py"), "line": 5, "limit": 6}
    assert seen["fsAfterLink"] == 1
    link = seen["link"]["text"]
    assert link.startswith(f"Received: 1 resource (text/x-python, {len(editor_lines(5, 10)) - 1} bytes, "
                           f"file://{ws}/sample.py lines 5-10, sample.py). You said: explain ")
    assert f"--- file://{ws}/sample.py (lines 5-10) ---\n{editor_lines(5, 10)}--- end of" in link
    assert "line 4 " not in link and "line 11 " not in link and "on disk" not in link

    embedded = seen["embedded"]["text"]
    assert embedded.startswith(f"Received: 1 resource (text/x-python, 9 bytes, file://{ws}/b.py). You said: and this")
    assert "\nprint(2)\n" in embedded
    assert seen["image"]["text"].startswith(f"Received: 1 image (image/png, {len(DOT_PNG)} bytes, dot.png). ")

    # the agent's parts go back as ACP content: a reply image, a tool result's image
    assert {"sessionUpdate": "agent_message_chunk", "content": IMAGE} in seen["replyImage"]["other"]
    drawn = [u for u in seen["draw"]["other"] if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"]
    assert drawn[0]["content"] == [{"type": "content", "content": {"type": "text", "text": "drew dot.png"}},
                                   {"type": "content", "content": IMAGE}]

    bad = seen["bad"]
    for name, words in {
        "outside": "outside this session's directories", "dotdot": "outside this session's directories",
        "otherHost": "another host", "badRange": "bad line range", "notInEditor": "the editor could not read",
        "badBase64": "not valid base64", "lyingType": "bytes are not image/jpeg", "audioAsImage": "cannot be audio/wav",
        "unknownBlock": "'hologram'",
    }.items():
        assert bad[name]["code"] == -32602 and words in bad[name]["message"], (name, bad[name])
    assert seen["fsBadPaths"] == [str(ws / "missing.py")], "only the file inside the workspace was asked for"
    assert seen["after"]["text"] == "You said: still there? (2 words, turn 6)", "still serving after the refusals"

    # usage: the prompt response's (unstable ACP) and usage_update (stable) for each turn
    turns = [seen[k] for k in ("link", "embedded", "image", "replyImage", "draw", "after")]
    for turn in turns:
        usage = turn["result"]["usage"]
        assert usage["outputTokens"] == turn["textChunks"]  # the scripted backend: one token per delta
        assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]
        updates = [u for u in turn["other"] if u["sessionUpdate"] == "usage_update"]
        assert updates == [{"sessionUpdate": "usage_update", "used": usage["totalTokens"], "size": 1000}]
        assert turn["result"]["_meta"]["onedoor.dev/usage"][0]["output_tokens"] == usage["outputTokens"]
    if store == "sqlite":  # what the kernel kept with each turn is what the editor was told
        kept = _turn_usage(threads, sid)
        assert [(u["input_tokens"], u["output_tokens"]) for u in kept] == [
            (t["result"]["usage"]["inputTokens"], t["result"]["usage"]["outputTokens"]) for t in turns]

    # session/load in a new process: the blocks again, not flattened text
    replayed = _node("replay", agent, {"workspace": str(ws), "sid": sid}, agent_env)["replayed"]
    user = [u["content"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert user[:2] == [
        {"type": "text", "text": "explain "},
        {"type": "resource", "resource": {"uri": f"file://{ws}/sample.py#L5-L10", "text": editor_lines(5, 10)[:-1],
                                          "mimeType": "text/x-python"}},
    ]
    assert {"type": "resource", "resource": {"uri": f"file://{ws}/b.py", "text": "print(2)\n",
                                             "mimeType": "text/x-python"}} in user
    assert IMAGE in user
    agent_blocks = [u["content"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk"]
    assert IMAGE in agent_blocks
    tool_images = [u for u in replayed if u["sessionUpdate"] == "tool_call_update"
                   and {"type": "content", "content": IMAGE} in (u.get("content") or [])]
    assert len(tool_images) == 1


@pytest.fixture(params=["threads", "door-kept"])
async def store(request: pytest.FixtureRequest, data_dir: Path) -> Any:
    """Sessions as threads of a store, and kept by the door itself (a kernel without a store)."""
    store = SQLiteThreadStore(data_dir / "threads.sqlite3") if request.param == "threads" else None
    yield store
    if store is not None:
        await store.close()


async def test_a_link_is_read_through_the_editor_only_when_it_offers_to(data_dir: Path, store: Any) -> None:
    link = {"type": "resource_link", "uri": "file:///work/proj/src/a.py#L2:3", "name": "a.py"}
    for fs in (True, False):
        async with DoorHarness(scripted_kernel(tool=False, reasoning=False, store=store), data_dir, fs=fs) as door:
            door.recorder.files["/work/proj/src/a.py"] = "one\ntwo\nthree\nfour\n"
            sid = await door.new_session(cwd="/work/proj")
            await door.conn.prompt(session_id=sid, prompt=[text_block("see"), link])
            text = door.recorder.text()
            if fs:  # Zed's #L2:3 is lines 2 to 3
                assert door.recorder.reads == [{"sessionId": sid, "path": "/work/proj/src/a.py", "line": 2, "limit": 2}]
                assert "--- file:///work/proj/src/a.py (lines 2-3) ---\ntwo\nthree\n--- end of" in text
            else:  # no fs.readTextFile: nothing is read, the backend is given the link
                assert door.recorder.reads == []
                assert text == ("Received: 1 resource_link (file:///work/proj/src/a.py#L2:3, a.py). "
                                "You said: see\n[file: file:///work/proj/src/a.py#L2:3]")


async def test_additional_directories_are_part_of_the_workspace(data_dir: Path, store: Any) -> None:
    async with DoorHarness(scripted_kernel(tool=False, reasoning=False, store=store), data_dir, fs=True) as door:
        door.recorder.files["/opt/shared/notes.md"] = "shared notes"
        sid = await door.new_session(cwd="/work/proj", additional_directories=["/opt/shared"])
        await door.conn.prompt(session_id=sid, prompt=[
            {"type": "resource_link", "uri": "file:///opt/shared/notes.md", "name": "notes.md"}])
        assert "shared notes" in door.recorder.text()
        with pytest.raises(RequestError) as refused:
            await door.conn.prompt(session_id=sid, prompt=[
                {"type": "resource_link", "uri": "file:///opt/sharedness/x.md", "name": "x.md"}])
        assert refused.value.code == -32602 and "outside this session's directories" in str(refused.value)
        assert [r["path"] for r in door.recorder.reads] == ["/opt/shared/notes.md"]


async def test_a_cancel_while_the_editor_reads_a_file_ends_the_prompt(data_dir: Path, store: Any) -> None:
    async with DoorHarness(scripted_kernel(store=store), data_dir, fs=True) as door:
        door.recorder.hold_read = asyncio.Event()  # the editor is slow to answer
        sid = await door.new_session(cwd="/work")
        prompt = asyncio.ensure_future(door.conn.prompt(session_id=sid, prompt=[
            {"type": "resource_link", "uri": "file:///work/big.log", "name": "big.log"}]))
        await asyncio.wait_for(door.recorder.read_asked.wait(), 10)
        await door.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 10)
        assert response.stop_reason == "cancelled"
        door.recorder.hold_read.set()
        door.recorder.updates.clear()
        response = await door.prompt(sid, "next")
        assert response.stop_reason == "end_turn" and "You said: next" in door.recorder.text()


async def test_what_the_backend_cannot_take_is_refused_before_any_run(data_dir: Path, store: Any) -> None:
    kernel = scripted_kernel(accepts="image", store=store)  # images, but neither audio nor binary resources
    async with DoorHarness(kernel, data_dir) as door:
        caps = (await door.conn.initialize(protocol_version=1)).agent_capabilities.prompt_capabilities
        assert (caps.image, caps.audio, caps.embedded_context) == (True, False, True)
        sid = await door.new_session()
        for block, words in (
            ({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}, "does not take audio parts"),
            ({"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAAA"}}, "does not take resource parts"),
        ):
            with pytest.raises(RequestError) as refused:
                await door.conn.prompt(session_id=sid, prompt=[text_block("hi"), block])
            assert refused.value.code == -32602 and words in str(refused.value)
            assert refused.value.data["reason"] == "unsupported_content"
        assert [k for k in door.recorder.kinds(sid) if k != "available_commands_update"] == [], "no run started"
        response = await door.conn.prompt(session_id=sid, prompt=[text_block("look"), IMAGE])
        assert response.stop_reason == "end_turn"
        assert door.recorder.text().startswith(f"Received: 1 image (image/png, {len(DOT_PNG)} bytes). ")


async def test_a_prompts_image_is_decoded_once(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel checks the prompt's parts as the run starts; the session the door keeps takes those, not a
    second decode (a thread store decodes what it reads back, as its own)."""
    from onedoor.content import _parse

    decoded: list[int] = []
    real = _parse._decode_base64

    def counting(value: Any, where: str) -> bytes:
        data = real(value, where)
        decoded.append(len(data))
        return data

    monkeypatch.setattr(_parse, "_decode_base64", counting)
    async with DoorHarness(scripted_kernel(tool=False, reasoning=False), data_dir) as door:
        sid = await door.new_session()
        response = await door.conn.prompt(session_id=sid, prompt=[text_block("look"), IMAGE])
    assert response.stop_reason == "end_turn"
    assert door.recorder.text().startswith(f"Received: 1 image (image/png, {len(DOT_PNG)} bytes). ")
    assert decoded == [len(DOT_PNG)]


async def test_oversize_and_too_many_parts_are_refused_and_the_door_serves_on(data_dir: Path, store: Any) -> None:
    limits = Limits(max_part_bytes=1000, max_parts=4)
    async with DoorHarness(scripted_kernel(limits, store=store), data_dir, fs=True) as door:
        door.recorder.files["/w/big.txt"] = "x" * 5000
        sid = await door.new_session(cwd="/w")
        for blocks, words in (
            ([{"type": "resource", "resource": {"uri": "file:///w/a.txt", "text": "y" * 2000}}], "the limit is 1,000"),
            ([{"type": "resource_link", "uri": "file:///w/big.txt", "name": "big.txt"}], "the limit is 1,000"),
            ([{"type": "resource_link", "uri": "file:///w/big.txt", "name": "big.txt", "size": 5000}], "5,000 bytes"),
            ([text_block(str(n)) for n in range(3)] + [IMAGE, IMAGE], "at most 4 parts"),
        ):
            with pytest.raises(RequestError) as refused:
                await door.conn.prompt(session_id=sid, prompt=blocks)
            assert refused.value.code == -32602 and words in str(refused.value), str(refused.value)
        assert len(door.recorder.reads) == 1, "a link whose size is over the limit is not even read"
        response = await door.prompt(sid, "fine")
        assert response.stop_reason == "end_turn"


async def test_replies_and_tool_results_with_parts_load_back_as_blocks(data_dir: Path, store: Any) -> None:
    async with DoorHarness(scripted_kernel(reasoning=False, store=store), data_dir) as door:
        sid = await door.new_session()
        await door.conn.prompt(session_id=sid, prompt=[text_block("/image /draw look"), IMAGE])
        live = [u for _, u in door.recorder.updates if u["sessionUpdate"] in ("agent_message_chunk", "tool_call_update")]
        live_text = door.recorder.text()
    async with DoorHarness(scripted_kernel(reasoning=False, store=store), data_dir) as door:
        await door.conn.load_session(cwd="/tmp", session_id=sid, mcp_servers=[])
        replayed = [u for _, u in door.recorder.updates]
    user = [u["content"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert user == [{"type": "text", "text": "/image /draw look"}, IMAGE]
    for kind in ("agent_message_chunk", "tool_call_update"):
        live_images = [u for u in live if u["sessionUpdate"] == kind and "data" in json.dumps(u)]
        loaded_images = [u for u in replayed if u["sessionUpdate"] == kind and "data" in json.dumps(u)]
        assert len(live_images) == len(loaded_images) == 1, kind
    shown = "".join(u["content"]["text"] for u in replayed
                    if u["sessionUpdate"] == "agent_message_chunk" and u["content"]["type"] == "text")
    assert shown == live_text and shown.startswith("Received: 1 image")


async def test_a_photo_sized_image_is_kept_by_the_default_store_and_an_overfull_thread_is_refused(
    agent_env: dict[str, str],
) -> None:
    """`onedoor acp` as installed (a thread store of its own, default limits) takes a 3 MB
    image, as an editor pastes one; a prompt that would take the session's thread past the
    store's limit gets -32602 before any run (not a run that fails keeping it), and the
    session goes on."""
    photo = DOT_PNG + os.urandom(3 * 1024 * 1024)
    block = {"type": "image", "data": base64.b64encode(photo).decode("ascii"), "mimeType": "image/png"}
    cmd = onedoor_command() + ["acp", "-o", "sqlite.max_thread_chars=5000000", "-o", "reasoning=false", "-o", "tool=false"]
    rec = Recorder()
    async with spawn_agent_process(rec, cmd[0], *cmd[1:], env=agent_env) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(Path.cwd()), mcp_servers=[])).session_id
        response = await conn.prompt(session_id=sid, prompt=[text_block("what is this?"), block])
        assert response.stop_reason == "end_turn"
        assert rec.text().startswith(f"Received: 1 image (image/png, {len(photo):,} bytes). "), rec.text()[:200]
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=sid, prompt=[text_block("and this?"), block])
        assert refused.value.code == -32602, str(refused.value)
        assert "the limit is 5000000: start a new thread" in str(refused.value), str(refused.value)
        rec.updates.clear()
        again = await conn.prompt(session_id=sid, prompt=[text_block("still there?")])
        assert again.stop_reason == "end_turn" and "still there?" in rec.text()
