"""A message for two MTAs behind one multicast group goes once (STANAG 4406 Annex E over
ACP 142, real UDP multicast on loopback).

Site A (node 127.0.0.1) has B (127.0.0.2) and C (127.0.0.3) as peers behind group
239.255.42.1; B and C join it and know each other as peers.  One message from a user at A
to a user at B and a user at C: A sends one Address_PDU naming both nodes and its
Data_PDUs once, to the group; B delivers to its user only, C to its own, nobody twice,
and both delivery reports come back to A.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mta.acp142.test_live import udp_ports
from tests.support.sites import A, B, Identity, Site, eventually, site_settings

pytestmark = pytest.mark.slow  # three daemons

C = Identity("MTA-C", "C=GB;ADMD= ;PRMD=SITEC", "secret-c")
GROUP = "239.255.42.1"
ALL = {A.name: "127.0.0.1", B.name: "127.0.0.2", C.name: "127.0.0.3"}


def _peer(them: Identity, ports: list[int], *, group: str | None) -> dict[str, object]:
    acp142: dict[str, object] = {
        "data_port": ports[0],
        "ack_port": ports[1],
        "retransmission": "1s",
    }
    if group is not None:
        acp142["group"] = group
    return {
        "name": them.name,
        "host": ALL[them.name],
        "routes": [them.domain],
        "transport": "acp142",
        "acp142": acp142,
    }


async def test_one_transmission_for_two_mtas_of_a_group(tmp_path: Path) -> None:
    data_port = udp_ports("0.0.0.0", 1)[0]  # one data port for the whole group
    ports = {name: [data_port, udp_ports(host, 1)[0]] for name, host in ALL.items()}
    sites = {}
    for me in (A, B, C):
        settings = site_settings(me, (), ())
        settings["acp142"] = {
            "address": ALL[me.name],
            "data_port": ports[me.name][0],
            "ack_port": ports[me.name][1],
            "ack_delay": "0.2s",
        }
        if me is not A:
            settings["acp142"]["groups"] = [GROUP]
        others = [o for o in (A, B, C) if o is not me]
        settings["peers"] = [
            _peer(o, ports[o.name], group=GROUP if me is A else None) for o in others
        ]
        sites[me.name] = Site(me, tmp_path / me.name, settings)
    a, b, c = sites[A.name], sites[B.name], sites[C.name]
    for site in (b, c, a):
        await site.start()
    try:
        sender = a.address("Smith")
        at_b, at_c = b.address("Jones"), c.address("Brown")
        code, _, err = await a.x400(
            "send",
            "--socket",
            str(a.socket),
            "--from",
            sender,
            "--to",
            at_b,
            "--to",
            at_c,
            "--delivery-report",
            "--subject",
            "both",
        )
        assert code == 0, err
        await eventually(lambda: b.inbox(at_b), lambda got: len(got) == 1, what="at B")
        await eventually(lambda: c.inbox(at_c), lambda got: len(got) == 1, what="at C")
        reports = await eventually(
            lambda: a.reports(sender), lambda got: len(got) >= 2, what="two reports at A"
        )
        assert len(reports) == 2
        assert await b.inbox(at_c) == [] and await c.inbox(at_b) == []
        link = a.running.acp142
        assert link is not None
        # One Address_PDU and one Data_PDU for both: A sent them once, to the group.
        assert link.counters["multicast"] == 2, link.counters
    finally:
        for site in (a, b, c):
            await site.stop()
