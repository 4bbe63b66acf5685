"""``python -m onedoor_fake_model_server [--port N]``: serve until interrupted.

Prints the base URL (for OpenAI clients) as the first stdout line.
"""

from __future__ import annotations

import argparse
import asyncio

from .server import MODEL, FakeModelServer


async def _main(port: int, delay: float, models: tuple[str, ...]) -> None:
    server = FakeModelServer(port=port, delay=delay, models=models)
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
    parser.add_argument("--models", default=MODEL, help="comma-separated model names GET /models lists")
    args = parser.parse_args()
    models = tuple(name.strip() for name in args.models.split(",") if name.strip())
    try:
        asyncio.run(_main(args.port, args.delay, models))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
