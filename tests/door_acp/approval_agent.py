"""A test backend that asks for approval before its tool runs, and a launcher that
serves it through the ACP door on stdio (for the TypeScript client test).

The scripted backend has no approval step; this one uses the door's approval carrier
(``RunContext.extras["approval"]``). ``python approval_agent.py [sync|async]``.
"""

from __future__ import annotations

import sys
from typing import Any

from onedoor.events import RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted

INTRO = "I will write the file. "


def _args(message: str) -> dict[str, Any]:
    return {"path": "notes.txt", "content": message}


class AsyncApprovalAgent:
    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        run_id = context.run_id
        yield RunStarted(run_id)
        yield TextDelta(INTRO)
        call_id = f"call_{run_id[:8]}_write"
        approver = context.extras.get("approval")
        allowed = approver is not None and await approver.request(call_id, "write_file", _args(message))
        if allowed:
            yield ToolStarted(call_id, "write_file", _args(message))
            yield ToolFinished(call_id, "write_file", {"written": len(message)})
        text = "Done." if allowed else "Not written."
        yield TextDelta(text)
        yield RunFinished(run_id, INTRO + text)


class SyncApprovalAgent:
    def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        run_id = context.run_id
        yield RunStarted(run_id)
        yield TextDelta(INTRO)
        call_id = f"call_{run_id[:8]}_write"
        approver = context.extras.get("approval")
        allowed = approver is not None and approver.request_sync(call_id, "write_file", _args(message))
        if allowed:
            yield ToolStarted(call_id, "write_file", _args(message))
            yield ToolFinished(call_id, "write_file", {"written": len(message)})
        text = "Done." if allowed else "Not written."
        yield TextDelta(text)
        yield RunFinished(run_id, INTRO + text)


def main() -> int:
    from onedoor.builtins.stdio import StdioTransport
    from onedoor.composition import ServeContext
    from onedoor.kernel import Backend, Kernel
    from onedoor_door_acp.door import AcpDoor, AcpOptions

    factory = SyncApprovalAgent if sys.argv[1:2] == ["sync"] else AsyncApprovalAgent
    transport = StdioTransport()
    transport.prepare(None)
    door = AcpDoor()
    ctx = ServeContext(
        kernel=Kernel(Backend("approver", factory)),
        options={"acp": AcpOptions(backends="approver")},
        door_names=["acp"],
        transport_name="stdio",
    )
    return transport.serve([door], ctx)


if __name__ == "__main__":
    sys.exit(main())
