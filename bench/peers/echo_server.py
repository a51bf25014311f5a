"""The Python floor of the peer benchmark: a bare ``websockets`` (asyncio) server that sends every frame
back unchanged. It runs in its own process, like every server the benchmark measures, so it pays the
same socket, framing and event-loop costs as a Python server that does nothing per message.

    python bench/peers/echo_server.py   (prints "echo listening on ws://127.0.0.1:PORT/")
"""

from __future__ import annotations

import asyncio
import signal

from websockets.asyncio.server import ServerConnection, serve


async def echo(ws: ServerConnection) -> None:
    async for message in ws:
        await ws.send(message)


async def main() -> None:
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    async with serve(echo, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"echo listening on ws://127.0.0.1:{port}/", flush=True)
        await stop


if __name__ == "__main__":
    asyncio.run(main())
