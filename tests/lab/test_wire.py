"""lab.wire's forwarder on real sockets (packet socket pairs standing in for the TUN
devices, which need root): the delay and the HF profile hand packets over in order and
never early, the other end waits for the transmission and the turnaround, the counters'
line comes on SIGUSR1 and at SIGTERM, and its options refuse what makes no sense.

Bounds only, never upper limits on time: the machine may be shared."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.hf import HfSettings, air_time
from lab.wire import (
    DelayLink,
    DeviceGone,
    HfLink,
    Link,
    _arguments,
    _reporter,
    forward,
    hf_options,
    hf_settings,
    parser,
)

NAMES = ("ra", "a0")
WAIT = 60.0
"""Seconds a read may wait before the test gives up (a hang, not a measurement)."""


class Wire:
    """:func:`forward` in a thread between two packet socket pairs: ``here`` and ``there``
    are the user sides of ends 0 and 1."""

    def __init__(self, link: Link) -> None:
        self.here, here_wire = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.there, there_wire = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._wire_sides = (here_wire, there_wire)
        for side in self._wire_sides:
            side.setblocking(False)
        for side in (self.here, self.there):
            side.settimeout(WAIT)
        self._wakeup, self._signal = os.pipe()
        self.reports: queue.Queue[dict[str, object]] = queue.Queue()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(link,), daemon=True)
        self._thread.start()

    def _run(self, link: Link) -> None:
        def report(now: float) -> None:
            self.reports.put(link.counters(now))

        fds = (self._wire_sides[0].fileno(), self._wire_sides[1].fileno())
        try:
            forward(fds, link, wakeup=self._wakeup, report=report)
        except BaseException as error:  # (for the test to see)
            self.error = error

    def signal(self, number: int) -> None:
        os.write(self._signal, bytes([number]))

    def stop(self) -> None:
        self.signal(signal.SIGTERM)
        self._thread.join(WAIT)
        assert not self._thread.is_alive()
        for s in (self.here, self.there, *self._wire_sides):
            s.close()
        os.close(self._wakeup)
        os.close(self._signal)


@pytest.fixture
def wires() -> Iterator[list[Wire]]:
    made: list[Wire] = []
    yield made
    for wire in made:
        wire.stop()
        assert wire.error is None


def _numbered(number: int, size: int) -> bytes:
    return number.to_bytes(4, "big") + bytes(size - 4)


def test_the_delay_hands_each_packet_over_in_order_and_not_before_its_delay(
    wires: list[Wire],
) -> None:
    wire = Wire(DelayLink(0.05, NAMES))
    wires.append(wire)
    written = time.monotonic()
    for number in range(5):
        wire.here.send(_numbered(number, 100))
    wire.there.send(_numbered(99, 60))
    got = [wire.there.recv(2000) for _ in range(5)]
    back = wire.here.recv(2000)
    assert time.monotonic() - written >= 0.05
    assert got == [_numbered(n, 100) for n in range(5)]
    assert back == _numbered(99, 60)


def test_the_hf_link_serialises_and_turns_round(wires: list[Wire]) -> None:
    """Five packets one way take five air times at least; the answer the other way comes
    after them and a turnaround."""
    s = HfSettings(rate=57_600, turnaround=0.2)
    wire = Wire(HfLink(s, NAMES))
    wires.append(wire)
    written = time.monotonic()
    for number in range(5):
        wire.here.send(_numbered(number, 1000))
    wire.there.send(_numbered(99, 60))
    got = [wire.there.recv(2000) for _ in range(5)]
    arrived = time.monotonic()
    back = wire.here.recv(2000)
    back_at = time.monotonic()
    assert got == [_numbered(n, 1000) for n in range(5)]
    assert back == _numbered(99, 60)
    assert arrived - written >= 5 * air_time(1000, s)
    assert back_at - written >= 5 * air_time(1000, s) + s.turnaround + air_time(60, s)
    wire.signal(signal.SIGUSR1)
    counters = wire.reports.get(timeout=WAIT)
    sent = counters["from"]
    assert isinstance(sent, dict)
    assert sent["ra"]["sent_packets"] == 5 and sent["a0"]["sent_packets"] == 1
    assert sent["ra"]["busy_seconds"] == pytest.approx(5 * air_time(1000, s))
    assert counters["turnarounds"] == 1


def test_a_full_modem_queue_drops_and_counts(wires: list[Wire]) -> None:
    s = HfSettings(rate=75, queue_packets=2)  # (each 1000-octet packet: 107 s on the air)
    wire = Wire(HfLink(s, NAMES))
    wires.append(wire)
    for number in range(6):
        wire.here.send(_numbered(number, 1000))
    wire.signal(signal.SIGUSR1)
    counters = wire.reports.get(timeout=WAIT)
    ra = counters["from"]["ra"]  # type: ignore[index]
    assert ra["offered_packets"] == 6
    assert ra["dropped_packets"] == 3  # (one on the air, two waiting)
    assert ra["waiting_packets"] == 2 and counters["on_air"] == "ra"


def test_a_closed_end_stops_the_forwarder() -> None:
    wire = Wire(DelayLink(0.0, NAMES))
    wire.here.close()
    wire._thread.join(WAIT)
    assert isinstance(wire.error, DeviceGone)
    wire.there.close()
    for side in wire._wire_sides:
        side.close()


def test_the_counters_line_replaces_the_file_and_is_numbered(tmp_path: Path) -> None:
    link = HfLink(HfSettings(rate=9600), NAMES)
    link.offer(0, bytes(1200), 0.0)
    path = tmp_path / "counters.json"
    report = _reporter(link, path)
    report(0.5)
    report(2.0)
    text = path.read_text()
    assert text.count("\n") == 1
    line = json.loads(text)
    assert line["report"] == 2 and line["at"] == 2.0
    assert line["from"]["ra"]["sent_packets"] == 1 and line["on_air"] is None
    assert [p.name for p in tmp_path.iterdir()] == ["counters.json"]


def test_the_counters_line_goes_to_stdout_without_a_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _reporter(DelayLink(0.01, NAMES), None)
    report(1.0)
    line = json.loads(capsys.readouterr().out)
    assert line["report"] == 1 and line["from"]["a0"]["offered_packets"] == 0


BASE = ["--here", "ra", "--there", "a0", "--there-netns", "/run/netns/x"]


def test_the_hf_options_give_back_the_settings() -> None:
    s = HfSettings(
        rate=1200.5, turnaround=2.5, max_transmission=60, ber=1e-5, framing=12,
        queue_packets=None, queue_octets=30000, seed=7,
    )  # fmt: skip
    args, parsed = _arguments([*BASE, *hf_options(s)])
    assert parsed == s == hf_settings(args)
    args, parsed = _arguments(BASE)
    assert parsed is None and args.delay_ms == 0


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--turnaround", "2"], "--turnaround needs --hf-rate"),
        (["--hf-rate", "50"], "rate 50: 75 to 240000 bit/s"),
        (["--hf-rate", "9600", "--delay-ms", "5"], "give one"),
        (["--hf-rate", "9600", "--ber", "1"], "ber 1"),
        (["--hf-rate", "fast"], "'fast': expected bit/s"),
        (["--hf-rate", "9600", "--queue-packets", "-1"], "0 or more"),
    ],
)
def test_options_that_make_no_sense_are_refused_in_one_line(
    options: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _arguments([*BASE, *options])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err
    assert parser().prog == "python -m lab.wire"
