"""Bad input and auth on the A2A door, against a real `onedoor serve` process.

Each bad request gets a clear error in the protocol's shape (the transport's JSON error
before the door; a JSON-RPC error from it), nothing is logged as a traceback, and a
normal request afterwards still works. The shared hostile corpus runs on both bindings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, TaskState
from a2a.utils.errors import TaskNotFoundError
from a2a_helpers import TOKEN, A2aServer
from onedoor.testing.hostile import all_raw, mutations, traceback_in

pytestmark = pytest.mark.timeout(300)

V1 = {"A2A-Version": "1.0", "Content-Type": "application/json"}
SEND = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}}


def rpc(server: Any, body: Any, *, token: str | None = TOKEN, raw: bytes | None = None) -> httpx.Response:
    headers = dict(V1)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(server.a2a_url + "/", content=content, headers=headers, timeout=30)


def still_serves(server: Any) -> None:
    reply = rpc(server, SEND).json()
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply


def rpc_error(response: httpx.Response, code: int, request_id: Any = 1) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id and body["error"]["code"] == code, body
    return body["error"]


def test_each_bad_json_rpc_request_gets_its_error_and_the_server_serves_on(served: Any) -> None:
    refused = rpc(served, None, raw=b'{"jsonrpc":"2.0","id":1,')
    assert refused.status_code == 400 and refused.json()["error"] == "bad_json"  # the transport decodes JSON
    still_serves(served)
    rpc_error(rpc(served, {"jsonrpc": "2.0", "id": 1}), -32600)  # no method
    rpc_error(rpc(served, [1, 2]), -32600, None)
    rpc_error(rpc(served, {"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}), -32600)
    rpc_error(rpc(served, {"jsonrpc": "2.0", "id": 1, "method": "tasks/teleport", "params": {}}), -32601)
    rpc_error(rpc(served, {**SEND, "params": {"message": 5}}), -32602)
    unknown = rpc_error(rpc(served, {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "no-such"}}),
                        -32001, 7)
    assert unknown["message"] == "Task not found"
    rpc_error(rpc(served, {"jsonrpc": "2.0", "id": 8, "method": "CancelTask", "params": {"id": "no-such"}}), -32001, 8)
    done = rpc(served, SEND).json()["result"]["task"]
    rpc_error(rpc(served, {"jsonrpc": "2.0", "id": 9, "method": "CancelTask", "params": {"id": done["id"]}}), -32002, 9)
    get = httpx.get(served.a2a_url + "/", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert get.status_code == 405 and get.json()["error"] == "method_not_allowed"
    still_serves(served)
    assert traceback_in(served.stderr()) is None, served.stderr()[-3000:]


def test_a_missing_or_wrong_token_is_refused_everywhere_but_on_the_card(served: Any) -> None:
    for token in (None, "wrong-token-0123456789abcdef"):
        assert rpc(served, SEND, token=token).status_code == 401
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = httpx.get(served.base_url + "/a2a/rest/message:send", headers=headers, timeout=30)
        assert response.status_code == 401 and response.json()["error"] == "unauthorized", response.text
        for path in ("/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json"):
            card = httpx.get(served.base_url + path, timeout=30)  # public: it says how to authenticate
            assert card.status_code == 200 and "bearer" in json.dumps(card.json()["securitySchemes"]).lower(), card.text
            posted = httpx.post(served.base_url + path, json={}, headers=headers, timeout=30)
            assert posted.status_code == 401, (path, posted.text)  # only GET/HEAD are public
    assert httpx.get(served.base_url + "/agent-card.json", timeout=30).status_code == 401  # exact paths only
    still_serves(served)


def test_the_transport_checks_host_and_origin_for_the_door_and_the_root_card(served: Any) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json"):
        response = httpx.get(served.base_url + path, headers={**auth, "Host": "evil.example"}, timeout=30)
        assert response.status_code == 421 and response.json()["error"] == "misdirected_request", response.text
    response = httpx.post(served.a2a_url + "/", json=SEND, headers={**V1, **auth, "Origin": "https://evil.example"},
                          timeout=30)
    assert response.status_code == 403 and response.json()["error"] == "forbidden_origin", response.text
    response = httpx.post(served.a2a_url + "/", content=b"hi", headers={**auth, "Content-Type": "text/plain"}, timeout=30)
    assert response.status_code == 415, response.text
    still_serves(served)


async def test_the_python_client_reports_a_wrong_token_and_an_unknown_task(served: Any) -> None:
    async with httpx.AsyncClient(headers={"Authorization": "Bearer wrong-token-0123456789abcdef"}, timeout=30) as bad:
        public = await A2ACardResolver(bad, served.a2a_url).get_agent_card()  # the card is public
        refused = ClientFactory(ClientConfig(httpx_client=bad, streaming=False)).create(public)
        with pytest.raises(Exception, match="401"):
            async for _ in refused.send_message(SendMessageRequest(message=new_text_message("hi", role=Role.ROLE_USER))):
                pass
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as good:
        card = await A2ACardResolver(good, served.a2a_url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=good, streaming=False)).create(card)
        with pytest.raises(TaskNotFoundError, match="Task not found"):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        events = [e async for e in client.send_message(SendMessageRequest(
            message=new_text_message("still here", role=Role.ROLE_USER)))]
        assert events[0].task.status.state == TaskState.TASK_STATE_COMPLETED


def test_messages_to_an_ended_task_are_refused_and_leave_nothing_behind(served: Any) -> None:
    """The door refuses them before the SDK sets the task up again (a2a-sdk would leave the
    event queues of each attempt running, and log a traceback per queue once collected)."""
    done = rpc(served, SEND).json()["result"]["task"]
    again = {**SEND["params"]["message"], "taskId": done["id"], "contextId": done["contextId"]}
    headers = {**V1, "Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=30) as http:
        for n in range(60):  # enough for the server's garbage collector to run meanwhile
            message = {**again, "messageId": f"m{n}"}
            body = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message}}
            error = rpc_error(http.post(served.a2a_url + "/", json=body, headers=headers), -32004, n)
            assert "terminal state: TASK_STATE_COMPLETED" in error["message"], error
            rest = http.post(served.a2a_url + "/rest/message:send", json={"message": {**again, "messageId": f"r{n}"}},
                             headers=headers)
            assert rest.status_code == 400 and "terminal state" in rest.json()["error"]["message"], rest.text
    still_serves(served)
    errors = served.stderr()
    assert traceback_in(errors) is None and "Task was destroyed but it is pending" not in errors, errors[-3000:]


def test_another_principal_cannot_see_a_task(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("alice alice-token-0123456789\nbob bob-token-0123456789\n", "utf-8")
    server = A2aServer(["-o", f"tokens_file={tokens}", "-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}"], tmp_path)
    try:
        task = rpc(server, SEND, token="alice-token-0123456789").json()["result"]["task"]
        get = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task["id"]}}
        rpc_error(rpc(server, get, token="bob-token-0123456789"), -32001)
        assert rpc(server, get, token="alice-token-0123456789").json()["result"]["id"] == task["id"]
        # the context names alice's thread: bob sending on it is refused (the id is taken), no task is made
        on_context = {**SEND, "params": {"message": {**SEND["params"]["message"], "contextId": task["contextId"]}}}
        refused = rpc_error(rpc(server, on_context, token="bob-token-0123456789"), -32602)
        assert refused["data"][0]["metadata"]["error"] == "thread_taken", refused
        listed = {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}
        assert rpc(server, listed, token="bob-token-0123456789").json()["result"].get("tasks", []) == []
    finally:
        server.stop()


def _acceptable(response: httpx.Response) -> str | None:
    """Why this answer to a hostile request is wrong, or None."""
    if response.status_code >= 500:
        return f"server error {response.status_code}"
    body = response.json()
    if response.status_code != 200:
        if set(body) == {"error", "detail"}:
            return None  # the transport's refusal, before the door
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("code") == response.status_code and error.get("status"):
            return None  # the HTTP+JSON binding's error (google.rpc.Status)
        return "4xx in neither the transport's nor the A2A REST error shape"
    if isinstance(body, dict) and ("error" in body or "result" in body or "task" in body or "message" in body):
        return None
    return "neither an error nor a result"


def test_the_hostile_corpus_on_both_bindings(served: Any) -> None:
    cases = all_raw(jsonrpc=True) + list(mutations(SEND))
    assert len(cases) > 100
    headers = {**V1, "Authorization": f"Bearer {TOKEN}"}
    statuses: dict[int, int] = {}
    with httpx.Client(timeout=30) as http:
        for case in cases:
            for url in (served.a2a_url + "/", served.a2a_url + "/rest/message:send"):
                response = http.post(url, content=case.payload, headers=headers)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                assert _acceptable(response) is None, (case.name, url, response.status_code, response.text[:300])
    still_serves(served)
    assert served.alive()
    assert traceback_in(served.stderr()) is None, served.stderr()[-3000:]
    print(f"\nhostile corpus on the A2A door: {len(cases)} cases x 2 bindings, statuses {statuses}")
