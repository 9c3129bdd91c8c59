"""A spooled APDU sent from its file's mapping (:meth:`store.spool.Spool.mapped`), cut
off by a lost connection and resumed from the same mapping on a connection recovering
the first (X.228 recovery, :meth:`mta.link.Link.resume`): the responder keeps the APDU
once, octet for octet, and neither link holds the mapping once its transfer has ended.

The responder and the recovery it keeps are those of the wire test of recovery
(:mod:`tests.test_tshark_recovery`), without the capture; the connection is cut by a
proxy on loopback after a quarter of the APDU."""

from __future__ import annotations

import asyncio
import mmap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks import samples
from mta import link as links
from mta import net
from p1.association.connection import AssociationSettings
from p1.mts.envelope import encode_mts_apdu
from p1.mts.precedence import Precedence
from store.spool import MAP_THRESHOLD, Spool
from tests.support import tshark
from tests.support.proxy import CuttingProxy
from tests.test_tshark_recovery import Keeping

LOOPBACK = "127.0.0.1"
SETTINGS = AssociationSettings(checkpoint_size=64, window_size=3)
"""Checkpoints every 64 x 1024 octets, three outstanding: a cut loses at most 192 KiB."""
TIMEOUT = 60.0


def _mapped_apdu(folder: Path) -> tuple[bytes, mmap.mmap]:
    """A message APDU larger than MAP_THRESHOLD, written as a spool file; its octets and
    the mapping the spool gives to send it."""
    apdu = encode_mts_apdu(samples.message(MAP_THRESHOLD + 300_000, Precedence.ROUTINE))
    name = "0123456789abcdef0123456789abcdef.ber"
    (folder / name).write_bytes(apdu)
    sent = Spool(folder).mapped(name)
    assert isinstance(sent, mmap.mmap)
    return apdu, sent


async def test_a_mapped_apdu_cut_off_is_resumed_from_its_mapping_and_arrives_whole(
    tmp_path: Path,
) -> None:
    apdu, sent = _mapped_apdu(tmp_path)
    store = Keeping()
    server = await net.start_marked_server(store.serve, LOOPBACK, 0, dscp=0)
    proxy = CuttingProxy(upstream=net.bound_port(server), cuts=(len(apdu) // 4,))
    port = await proxy.start()
    first = links.session_identifier(datetime.now(UTC))
    try:
        async with asyncio.timeout(TIMEOUT):
            link, _ = await links.open_link(
                LOOPBACK, port, tshark.ARGUMENT, settings=SETTINGS, identifier=first
            )
            with pytest.raises(links.LinkClosedError):
                await link.transfer(sent, timeout=TIMEOUT)
            await link.close()
            assert link._mapped is None
            point = link.association.resume_point
            assert point is not None and 0 < point.offset < len(apdu)
            again, accepted = await links.open_link(
                LOOPBACK,
                port,
                tshark.ARGUMENT,
                settings=SETTINGS,
                identifier=links.session_identifier(datetime.now(UTC)),
                recover=first,
            )
            assert accepted.recovered
            await again.resume(sent, point, timeout=TIMEOUT)
            assert again._mapped is None
            await again.release(timeout=TIMEOUT)
            await asyncio.gather(*store.served)
    finally:
        await proxy.close()
        server.close()
        await server.wait_closed()
        sent.close()
    assert proxy.sent[0] >= len(apdu) // 4
    assert len(store.stored) == 1
    assert store.stored[0] == apdu
