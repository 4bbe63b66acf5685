"""A test backend that asks for approval before its tool runs, and a launcher that
serves it through the ACP door on stdio (for the TypeScript client test).

The scripted backend's ``/ask`` announces the call (ToolStarted) before it asks; this one
asks first, through the kernel's port (``context.request_approval`` /
``request_approval_sync``), and announces only an approved call. ``python approval_agent.py [sync|async|twice|noisy]``
(``twice``: asks twice in one run; ``noisy``: a backend that writes to stdout, to show
the protocol stream stays clean).
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
        allowed = await context.request_approval(call_id, "write_file", _args(message))
        if allowed:
            yield ToolStarted(call_id, "write_file", _args(message))
            yield ToolFinished(call_id, "write_file", {"written": len(message)})
        text = "Done." if allowed else "Not written."
        yield TextDelta(text)
        yield RunFinished(run_id, INTRO + text)


class TwiceApprovalAgent:
    """Asks twice in one run for the same tool (after an "always", the second is not asked)."""

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        run_id = context.run_id
        yield RunStarted(run_id)
        texts = []
        for n in (1, 2):
            call_id = f"call_{run_id[:8]}_write{n}"
            args = _args(f"{message} {n}")
            if await context.request_approval(call_id, "write_file", args):
                yield ToolStarted(call_id, "write_file", args)
                yield ToolFinished(call_id, "write_file", {"written": n})
                texts.append("Done.")
            else:
                texts.append("Not written.")
        text = " ".join(texts)
        yield TextDelta(text)
        yield RunFinished(run_id, text)


class NoisyAgent:
    """Writes to stdout from Python, from C-level fd 1 and from a child process."""

    def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        import os
        import subprocess

        print("noise from print()")
        os.write(1, b"noise on fd 1\n")
        subprocess.run(["echo", "noise from a child process"], check=False)
        yield RunStarted(context.run_id)
        yield TextDelta("quiet reply")
        yield RunFinished(context.run_id, "quiet reply")


class SyncApprovalAgent:
    def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        run_id = context.run_id
        yield RunStarted(run_id)
        yield TextDelta(INTRO)
        call_id = f"call_{run_id[:8]}_write"
        allowed = context.request_approval_sync(call_id, "write_file", _args(message))
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

    factories = {"sync": SyncApprovalAgent, "async": AsyncApprovalAgent, "noisy": NoisyAgent, "twice": TwiceApprovalAgent}
    factory = factories[sys.argv[1] if len(sys.argv) > 1 else "async"]
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
