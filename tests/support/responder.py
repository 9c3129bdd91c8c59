"""A minimal P1 responder for tests that need a real peer in another process.

    python -m tests.support.responder --name NAME --password PW --accept NAME:PW [...]

Listens on 127.0.0.1, port 0 unless ``--port``; prints the bound port on the first line of
stdout, then serves associations: binds from an ``--accept`` pair are accepted with our name
and password, others refused with authentication-error; transfers are confirmed at once.
``--silent`` accepts TCP connections and never answers (for timeout tests);
``--refuse-transfers`` refuses every transfer as a full disk would (temporary);
``--abort-transfers`` refuses every transfer as a peer that cannot parse it does (an RTSE
abort, user-error, once the whole transfer arrived);
``--malformed-ac`` accepts every bind with an AC SPDU whose length runs past its TSDU
(a protocol error in the bind's answer); ``--hang-up`` takes the transport connection,
then closes it once the bind arrives, without answering.
"""

from __future__ import annotations

import argparse
import asyncio

from mta import link as links
from mta import net
from p1.association.connection import BindRequested, P1Association, TransferTooLong
from p1.association.mtabind import MTABindError, MTABindResult
from p1.osi import Role

_AC_AT = 7
"""Where the SPDU starts in the one TPKT the accept is: TPKT (4), DT TPDU (3)."""
_AC = 14
"""The AC SPDU's SI (X.225 8.3.2)."""


class _Responder:
    def __init__(
        self,
        name: str,
        password: str,
        accepted: set[tuple[str, str]],
        *,
        refuse: bool = False,
        abort: bool = False,
    ) -> None:
        self.result = MTABindResult(responder_name=name, password=password)
        self.accepted = accepted
        self.refuse = refuse
        self.abort = abort

    async def on_bind(self, event: BindRequested) -> MTABindResult | MTABindError:
        pair = (event.argument.initiator_name or "", str(event.argument.password or ""))
        return self.result if pair in self.accepted else MTABindError.AUTHENTICATION_ERROR

    async def on_transfer(self, apdu: bytes) -> None:
        if self.refuse:
            raise links.TransferRefusedError("the store is full", temporary=True)
        if self.abort:
            raise links.TransferRefusedError("cannot parse the envelope")

    async def on_transfer_too_long(self, event: TransferTooLong) -> None:
        raise links.TransferRefusedError(f"{event.size} octets: over max_message_size")


async def _main(args: argparse.Namespace) -> None:
    pairs = {tuple(p.split(":", 1)) for p in args.accept}
    accepted = {(a, b) for a, b in pairs}
    responder = _Responder(
        args.name,
        args.password,
        accepted,
        refuse=args.refuse_transfers,
        abort=args.abort_transfers,
    )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if args.silent:
            await reader.read()  # hold the connection, say nothing
            writer.close()
            return
        if args.malformed_ac:
            await _malformed_accept(reader, writer, responder.result)
            return
        if args.hang_up:
            await _hang_up(reader, writer)
            return
        await links.serve_link(reader, writer, responder)

    server = await net.start_marked_server(handle, "127.0.0.1", args.port, dscp=args.dscp)
    print(net.bound_port(server), flush=True)
    async with server:
        await server.serve_forever()


async def _malformed_accept(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, result: MTABindResult
) -> None:
    """Answer the bind with the stack's accept, its AC SPDU's length indicator made
    longer than the TSDU holds; then wait for the peer to go."""
    association = P1Association(Role.RESPONDER)
    while data := await reader.read(65536):
        events = association.receive_data(data)
        if any(isinstance(event, BindRequested) for event in events):
            association.accept_bind(result)
            answer = bytearray(association.data_to_send())
            assert answer[_AC_AT] == _AC and answer[_AC_AT + 1] < 0xFF, answer.hex()
            answer[_AC_AT + 1] = 0xFE
            writer.write(bytes(answer))
        else:
            writer.write(association.data_to_send())
        await writer.drain()
    writer.close()


async def _hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer the transport's and session's connects as the stack does; close the
    connection when the bind arrives, answering nothing."""
    association = P1Association(Role.RESPONDER)
    while data := await reader.read(65536):
        events = association.receive_data(data)
        if any(isinstance(event, BindRequested) for event in events):
            break
        writer.write(association.data_to_send())
        await writer.drain()
    writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="responder")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--dscp", type=int, default=0)
    parser.add_argument("--name", default="responder")
    parser.add_argument("--password", default="secret")
    parser.add_argument("--accept", action="append", default=[])
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--malformed-ac", action="store_true")
    parser.add_argument("--hang-up", action="store_true")
    parser.add_argument("--refuse-transfers", action="store_true")
    parser.add_argument("--abort-transfers", action="store_true")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
