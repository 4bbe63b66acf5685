"""``python -m onedoor_fake_model_server [--port N]``: serve until interrupted.

Prints the base URL (for OpenAI clients) as the first stdout line.
"""

from __future__ import annotations

import argparse
import asyncio

from .server import FakeModelServer


async def _main(port: int, delay: float) -> None:
    server = FakeModelServer(port=port, delay=delay)
    await server.start_async()
    print(server.base_url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop_async()


def main() -> None:
    parser = argparse.ArgumentParser(prog="onedoor-fake-model-server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between streamed chunks")
    args = parser.parse_args()
    try:
        asyncio.run(_main(args.port, args.delay))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
