"""A TCP proxy that cuts connections after a number of octets (test helper).

:class:`CuttingProxy` listens on 127.0.0.1 (port 0, read back from :meth:`start`) and
forwards each connection to a port upstream, counting the octets the client sends; the
n-th connection is reset after ``cuts[n]`` of them, as a link that drops would leave it.

Public API::

    CuttingProxy(upstream, cuts, half_open=False)
        await .start() -> port / await .close() / .sent (octets per connection) / .total
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass
class CuttingProxy:
    """Forwards each connection to ``upstream``; the n-th is reset after ``cuts[n]``
    octets from the client (the ones after the last cut are left alone).  ``half_open``:
    only the client's side is reset; the upstream side stays open, silent, as a cut link
    leaves a receiver that has not noticed it yet."""

    upstream: int
    cuts: tuple[int, ...]
    half_open: bool = False
    sent: list[int] = field(default_factory=list)
    """Octets the client sent on each connection, in order."""
    server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.server is not None:
            await self.server.wait_closed()

    @property
    def total(self) -> int:
        return sum(self.sent)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # (cancelled by close, as the streams' own tasks are not)
        task.add_done_callback(self._tasks.discard)
        number = len(self.sent)
        self.sent.append(0)
        limit = self.cuts[number] if number < len(self.cuts) else None
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        back = asyncio.create_task(self._back(up_reader, writer))
        self._tasks.add(back)
        back.add_done_callback(self._tasks.discard)
        try:
            await self._forth(number, limit, reader, up_writer)
            if self.half_open and limit is not None:
                back.cancel()
                writer.transport.abort()
                await asyncio.Event().wait()  # (until the proxy closes)
        finally:
            back.cancel()
            for transport in (writer.transport, up_writer.transport):
                transport.abort()  # a reset, both ways: the link is gone

    async def _forth(
        self,
        number: int,
        limit: int | None,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            if limit is not None and self.sent[number] + len(data) >= limit:
                data = data[: limit - self.sent[number]]
                self.sent[number] += len(data)
                writer.write(data)
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                return
            self.sent[number] += len(data)
            writer.write(data)
            await writer.drain()

    async def _back(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
